// The default text format is what it was before documents, instruction data and the
// step-level loss mean existed: the same token file, byte for byte, and the same training
// losses and validation loss. The numbers were recorded with rfa at commit fe2d17a (main,
// where this branch started), on an Intel Xeon with AVX-512 at --threads 2; another
// CPU sums in another order, so the losses compare to a relative 2e-5 (any change in
// what is computed, such as another normalisation, moves them by far more); on the
// recording machine they are equal bit for bit.
// scripts/check-bit-identical.sh compares two binaries bit for bit on one machine.
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "io/file_util.h"
#include "io/hash.h"
#include "io/json.h"
#include "support/temp_dir.h"
#include "train/train_run.h"

using namespace rfa;

namespace {

// The tokenizer of tests/checkpoint/fixtures (a committed file: no dependence on training one).
const std::string kTokenizer = std::string(RFA_SOURCE_DIR) + "/tests/checkpoint/fixtures/v2-rfa_gate/tokenizer.model";

Config text_run(const test::TempDir& dir) {
  std::string corpus;
  for (int i = 1; i <= 300; ++i) corpus += "Line " + std::to_string(i) + ": the quick brown fox jumps over the lazy dog.\n";
  Config c;
  c.model.n_layers = 2;
  c.model.d_model = 16;
  c.model.n_heads = 2;
  c.model.context_length = 16;
  c.attention.num_features = 4;
  c.attention.chunk_size = 8;
  c.tokenizer.path = kTokenizer;
  c.tokenizer.kind = TokenizerKind::character;
  c.tokenizer.vocab_size = 300;
  c.data.corpus = dir.write("corpus.txt", corpus);
  c.data.tokens = dir / "corpus.tokens";
  c.train.run_dir = dir / "run";
  c.train.batch_size = 3;
  c.train.grad_accum = 2;
  c.train.steps = 6;
  c.train.log_every = 1;
  c.train.eval_every = 6;
  c.train.seed = 11;
  c.optim.lr = 1e-2;
  c.optim.warmup_steps = 2;
  c.checkpoint.every = 0;
  return c;
}

}  // namespace

TEST_CASE("text format: the token file and a run's losses are the ones recorded before documents existed") {
  for (AttentionKind kind : {AttentionKind::rfa_gate, AttentionKind::softmax}) {
    CAPTURE(static_cast<int>(kind));
    test::TempDir dir;
    Config c = text_run(dir);
    c.attention.kind = kind;
    train_run(c);
    const std::string tokens = file_read_all(c.data.tokens);
    CHECK(hash_hex(xxhash64(tokens.data(), tokens.size())) == "9144696613d2d9b0");  // the file rfa at fe2d17a wrote
    std::vector<double> losses;
    double val = 0;
    std::istringstream metrics(file_read_all(c.train.run_dir + "/metrics.jsonl"));
    for (std::string line; std::getline(metrics, line);) {
      const JsonValue v = json_parse(line, "metrics.jsonl");
      if (v.find("type")->text == "train") losses.push_back(v.find("loss")->as_double("loss"));
      else val = v.find("val_loss")->as_double("val_loss");
    }
    const std::vector<double> want = kind == AttentionKind::rfa_gate
                                         ? std::vector<double>{5.6956859926382695, 5.573195174336433,
                                                               5.36553837855657, 5.653748815258345,
                                                               5.081193382541338, 5.022320921222368}
                                         : std::vector<double>{5.697220255931218, 5.568541879455248,
                                                               5.347096428275108, 5.18010305861632,
                                                               4.996143629153569, 4.947913780808449};
    const double want_val = kind == AttentionKind::rfa_gate ? 5.004871222678802 : 4.945751928134261;
    REQUIRE(losses.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      CAPTURE(i);
      CHECK(std::abs(losses[i] - want[i]) <= 2e-5 * want[i]);
    }
    CHECK(std::abs(val - want_val) <= 2e-5 * want_val);
  }
}
