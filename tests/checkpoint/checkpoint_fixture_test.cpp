// Checkpoints written by an older rfa still load: tests/checkpoint/fixtures/v2-rfa_gate
// is a whole checkpoint (and a --save-state decode state) written at commit 1f70cfb,
// before the JSON reader and XXH64 moved to nlohmann-json and libxxhash (how it was
// made: fixtures/make-v2.sh). Loading verifies every stored XXH64 checksum (each
// tensor, each tensor table, state.json, the decode state's weights checksum), so
// these pass only while the hashes stay bit-identical and the reader accepts the files.
#include <doctest/doctest.h>

#include <string>

#include "checkpoint/checkpoint.h"
#include "checkpoint/train_state.h"
#include "decode/decoder.h"
#include "decode/decoder_state_io.h"
#include "io/file_io.h"
#include "io/hash.h"
#include "model/model_io.h"
#include "model/model_load.h"
#include "model/model_spec.h"

using namespace rfa;

namespace {

const std::string kFixture = std::string(RFA_SOURCE_DIR) + "/tests/checkpoint/fixtures/v2-rfa_gate";

}  // namespace

TEST_CASE("checkpoint fixture v2: state.json, both safetensors files and the tokenizer load") {
  const TrainState state = train_state_parse(file_read_text(kFixture + "/state.json"), "state.json");
  CHECK(state.format_version == 2);
  CHECK(state.step == 3);
  CHECK(state.seed == 7);
  CHECK(state.tokens_seen == 96);
  CHECK(state.threads == 1);
  CHECK(state.tokenizer_xxh64 == "f1e4b0737acdaacf");
  CHECK(tokenizer_xxh64(kFixture + "/tokenizer.model") == state.tokenizer_xxh64);

  LoadedModel loaded = model_load(kFixture);
  CHECK(loaded.step == 3);
  CHECK(loaded.config.attention.kind == AttentionKind::rfa_gate);
  CHECK(loaded.tokenizer->vocab_size() == 299);
  const ModelSpec spec = model_spec_make(loaded.config.model, loaded.config.attention);
  LoadedCheckpoint ck = checkpoint_load(kFixture, model_tensor_specs(spec), optimizer_tensor_specs(spec));
  CHECK(ck.state.step == 3);
  CHECK(!ck.model.tensors.empty());
  CHECK(!ck.optimizer.tensors.empty());
}

TEST_CASE("checkpoint fixture v2: the decode state matches the weights' checksum and loads") {
  LoadedModel loaded = model_load(kFixture);
  const std::string sum = model_checksum(*loaded.model);
  Decoder<float> dec(*loaded.model, DecoderOptions{});
  decoder_state_load(kFixture + "/decode.state", dec, sum);  // refuses a weights checksum that differs
  CHECK(dec.position() == 7);  // "the" (3 tokens) + 4 generated
}
