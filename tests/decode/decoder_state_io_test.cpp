// Saving and restoring a generation: continuing from a saved state gives the
// same text as never stopping; a state from another model or a softmax model is refused.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "checkpoint/safetensors.h"
#include "core/error.h"
#include "decode/decoder_state_io.h"
#include "decode/generate.h"
#include "support/temp_dir.h"
#include "support/tiny_model.h"

using namespace rfa;

namespace {

ModelSpec spec_of(AttentionKind kind) {
  return test::tiny_spec(kind, {.vocab = 29, .context = 16, .num_features = 5, .chunk_size = 4, .init_std = 0.3});
}

std::vector<int32_t> run(Decoder<float>& dec, const std::vector<int32_t>& prompt, int n) {
  SamplerConfig sc;
  sc.temperature = 1.5;
  sc.seed = 3;
  Sampler sampler(dec.vocab(), sc);
  std::vector<int32_t> out;
  generate(dec, sampler, prompt, n, 0, [&](int32_t t) { out.push_back(t); });
  return out;
}

}  // namespace

TEST_CASE("decoder state: save, load and continue equals one uninterrupted generation") {
  test::TempDir dir;
  const std::string path = dir.file("state.safetensors");
  Model<float> model(spec_of(AttentionKind::rfa_gate));
  model_init(model, 5);
  const std::string sum = model_checksum(model);
  const std::vector<int32_t> prompt = {1, 7, 3, 22, 9};
  Decoder<float> whole(model, DecoderOptions{});
  const std::vector<int32_t> expected = run(whole, prompt, 40);

  Decoder<float> first(model, DecoderOptions{});
  std::vector<int32_t> got = run(first, prompt, 15);
  decoder_state_save(path, first, sum);
  Decoder<float> second(model, DecoderOptions{});
  decoder_state_load(path, second, sum);
  CHECK(second.position() == int64_t(prompt.size()) + 15);
  const std::vector<int32_t> rest = run(second, {}, 25);
  got.insert(got.end(), rest.begin(), rest.end());
  CHECK(got == expected);

  Model<float> other(spec_of(AttentionKind::rfa_gate));
  model_init(other, 6);
  Decoder<float> wrong(other, DecoderOptions{});
  CHECK_THROWS_AS(decoder_state_load(path, wrong, model_checksum(other)), Error);
}

TEST_CASE("decoder state: softmax and empty decoders are refused") {
  test::TempDir dir;
  const std::string path = dir.file("state.safetensors");
  Model<float> model(spec_of(AttentionKind::softmax));
  model_init(model, 5);
  DecoderOptions o;
  o.max_positions = 8;
  Decoder<float> dec(model, o);
  int32_t tok = 2;
  dec.step(&tok);
  CHECK_THROWS_AS(decoder_state_save(path, dec, model_checksum(model)), Error);
  Model<float> rfa_model(spec_of(AttentionKind::rfa));
  model_init(rfa_model, 5);
  Decoder<float> fresh(rfa_model, DecoderOptions{});
  CHECK_THROWS_AS(decoder_state_save(path, fresh, model_checksum(rfa_model)), Error);
}

TEST_CASE("decoder state: a file with a bad position or a non-finite value is refused by name") {
  // Files consistent in every checksum (written with safetensors_write) but with contents
  // no decoder saves: what a hand-edited or fuzzed file looks like.
  test::TempDir dir;
  Model<float> model(spec_of(AttentionKind::rfa_gate));
  model_init(model, 5);
  const std::string sum = model_checksum(model);
  Decoder<float> dec(model, DecoderOptions{});
  int32_t tok = 3;
  dec.step(&tok);
  const std::string good = dir.file("good.safetensors");
  decoder_state_save(good, dec, sum);
  SafetensorsFile f = safetensors_read(good);
  auto write = [&](const std::string& name, const std::string& position, float logit0) {
    std::vector<TensorRef> refs;
    for (Tensor& t : f.tensors) {
      if (t.name == "logits") std::memcpy(t.bytes.data(), &logit0, sizeof(float));
      refs.push_back({t.name, t.dtype, t.shape, t.bytes.data()});
    }
    std::map<std::string, std::string> meta = f.metadata;
    meta["position"] = position;
    safetensors_write(dir.file(name), refs, meta);
    return dir.file(name);
  };
  Decoder<float> into(model, DecoderOptions{});
  decoder_state_load(write("ok.safetensors", "1", 0.5f), into, sum);
  CHECK(into.position() == 1);
  for (const char* position : {"-3", "7x", "", "99999999999999999999"}) {
    CAPTURE(position);
    CHECK_THROWS_WITH_AS(decoder_state_load(write("p.safetensors", position, 0.5f), into, sum),
                         doctest::Contains(fmt::format("position '{}' is not a count of tokens", position).c_str()),
                         Error);
  }
  CHECK_THROWS_WITH_AS(decoder_state_load(write("nan.safetensors", "1", std::nanf("")), into, sum),
                       doctest::Contains("tensor 'logits' holds nan at index 0"), Error);
  CHECK_THROWS_WITH_AS(decoder_state_load(write("inf.safetensors", "1", INFINITY), into, sum),
                       doctest::Contains("tensor 'logits' holds inf at index 0"), Error);
}
