// Saving and restoring a generation: continuing from a saved state gives the
// same text as never stopping; a state from another model or a softmax model is refused.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

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
  generate(dec, std::span<Sampler>(&sampler, 1), prompt, n, [&](int, int32_t t) { out.push_back(t); });
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

// A hybrid whose softmax layers have a trained window (attention.window, docs/hybrid.md) keeps a
// fixed-size state: it saves and continues like an RFA model, past the window too.
TEST_CASE("decoder state: a hybrid with a windowed softmax layer saves, loads and continues") {
  test::TempDir dir;
  const std::string path = dir.file("state.safetensors");
  auto model_with = [](int window) {
    Config c = test::tiny_config(AttentionKind::rfa_gate,
                                 {.vocab = 29, .context = 16, .num_features = 5, .chunk_size = 4, .init_std = 0.3});
    c.attention.layers = fmt::format("rfa_gate, softmax window={}", window);
    auto model = std::make_unique<Model<float>>(test::tiny_spec(c));
    model_init(*model, 5);
    return model;
  };
  auto model = model_with(3);
  REQUIRE(!model->spec.attn_state_grows());
  const std::string sum = model_checksum(*model);
  DecoderOptions o;
  o.max_positions = 64;  // the softmax layer's RoPE table; its ring holds 3 positions
  const std::vector<int32_t> prompt = {1, 7, 3, 22, 9};
  Decoder<float> whole(*model, o);
  const std::vector<int32_t> expected = run(whole, prompt, 40);
  Decoder<float> first(*model, o);
  std::vector<int32_t> got = run(first, prompt, 15);
  decoder_state_save(path, first, sum);
  Decoder<float> second(*model, o);
  decoder_state_load(path, second, sum);
  CHECK(second.position() == int64_t(prompt.size()) + 15);
  const std::vector<int32_t> rest = run(second, {}, 25);
  got.insert(got.end(), rest.begin(), rest.end());
  CHECK(got == expected);
  // The same weights (softmax has none of its own) with another window: another state.
  auto wider = model_with(4);
  REQUIRE(model_checksum(*wider) == sum);
  Decoder<float> into(*wider, o);
  CHECK_THROWS_AS(decoder_state_load(path, into, sum), Error);
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

TEST_CASE("decoder state: the same weights under another time discount or positions are refused") {
  // The same weights under another config (an older checkpoint's config.yaml edited, weights
  // copied into another run): the weights checksum matches, but the state's sums were weighted
  // by the discount (or rotated by the positions) of the config that wrote it.
  test::TempDir dir;
  const std::string path = dir.file("state.safetensors");
  auto model_with = [](void (*edit)(Config&)) {
    Config c = test::tiny_config(AttentionKind::rfa_gate,
                                 {.vocab = 29, .context = 16, .num_features = 5, .chunk_size = 4, .init_std = 0.3});
    c.attention.time_discount = TimeDiscountKind::log;
    edit(c);
    auto model = std::make_unique<Model<float>>(test::tiny_spec(c));
    model_init(*model, 5);
    return model;
  };
  auto saved = model_with([](Config&) {});
  const std::string sum = model_checksum(*saved);
  Decoder<float> first(*saved, DecoderOptions{});
  run(first, {1, 7, 3}, 5);
  decoder_state_save(path, first, sum);
  Decoder<float> same(*saved, DecoderOptions{});
  decoder_state_load(path, same, sum);
  CHECK(same.position() == 8);

  const std::vector<void (*)(Config&)> edits = {
      [](Config& c) { c.attention.time_discount = TimeDiscountKind::none; },
      [](Config& c) { c.attention.time_discount_c = 3.0; },
      [](Config& c) { c.attention.time_discount_horizon = 64; },
      [](Config& c) { c.attention.positions = PositionKind::rope; },
  };
  for (size_t i = 0; i < edits.size(); ++i) {
    CAPTURE(i);
    auto other = model_with(edits[i]);
    REQUIRE(model_checksum(*other) == sum);  // the weights are the same
    DecoderOptions o;
    o.max_positions = 32;  // RoPE's table
    Decoder<float> into(*other, o);
    CHECK_THROWS_WITH_AS(decoder_state_load(path, into, sum),
                         doctest::Contains("was saved with no positions, time discount log(t + 2), horizon 0, and "
                                           "this model's config has"),
                         Error);
  }

  // A file from before the form was recorded: the weights checksum alone decides, as then.
  SafetensorsFile f = safetensors_read(path);
  std::vector<TensorRef> refs;
  for (Tensor& t : f.tensors) refs.push_back({t.name, t.dtype, t.shape, t.bytes.data()});
  std::map<std::string, std::string> meta = f.metadata;
  meta.erase("attention");
  safetensors_write(dir.file("old.safetensors"), refs, meta);
  auto other = model_with(edits[0]);
  Decoder<float> into(*other, DecoderOptions{});
  decoder_state_load(dir.file("old.safetensors"), into, sum);
  CHECK(into.position() == 8);
}
