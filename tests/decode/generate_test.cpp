// Generation end to end on a model overfit to one sentence: greedy decoding
// reproduces the sentence; the same seed gives the same text, another seed
// another text; generating in two calls equals generating in one.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "decode/generate.h"
#include "model/activations.h"
#include "model/model_forward.h"
#include "optim/adamw.h"
#include "support/tiny_model.h"
#include "tensor/param_table.h"

using namespace rfa;

namespace {

const std::string kSentence = "a quick brown fox jumps over the lazy dog; the end.";

int32_t id_of(char c) { return static_cast<int32_t>(static_cast<unsigned char>(c) - 32); }  // printable ASCII
char char_of(int32_t id) { return static_cast<char>(id + 32); }

ModelSpec spec_of(AttentionKind kind) {
  return test::tiny_spec(kind, {.vocab = 96, .context = 64, .d_model = 48, .num_features = 16, .chunk_size = 16});
}

// Full-batch AdamW on the one sentence until it is memorised.
double overfit(Model<float>& model) {
  const int T = static_cast<int>(kSentence.size()) - 1;
  std::vector<int32_t> inputs(static_cast<size_t>(T)), targets(static_cast<size_t>(T));
  for (int t = 0; t < T; ++t) {
    inputs[static_cast<size_t>(t)] = id_of(kSentence[static_cast<size_t>(t)]);
    targets[static_cast<size_t>(t)] = id_of(kSentence[static_cast<size_t>(t) + 1]);
  }
  Activations<float> acts(model.spec, 1, T);
  std::vector<float> m(static_cast<size_t>(model.param_size())), v(m.size());
  DecayMask mask = decay_mask_build({{0, model.param_size(), false}}, model.param_size());
  OptimConfig oc;
  double loss = 0;
  for (int step = 1; step <= 400; ++step) {
    model.zero_grad();
    loss = model_forward(model, acts, inputs.data(), targets.data(), model.random_fixed());
    if (loss < 0.01) break;
    model_backward(model, acts, inputs.data(), targets.data(), model.random_fixed());
    adamw_update(adamw_step_make(oc, 1e-2, step), mask, model.params(), model.grads(), m.data(), v.data(),
                 model.param_size());
  }
  return loss;
}

std::vector<int32_t> ids_of(const std::string& text) {
  std::vector<int32_t> ids;
  for (char c : text) ids.push_back(id_of(c));
  return ids;
}

std::string run(Decoder<float>& dec, const SamplerConfig& sc, const std::string& prompt, int n, int32_t stop = -1,
                GenerateStats* stats = nullptr) {
  Sampler sampler(dec.vocab(), sc);
  std::string out;
  const GenerateStats st = generate(
      dec, std::span<Sampler>(&sampler, 1), ids_of(prompt), n, [&](int, int32_t t) { out += char_of(t); }, stop);
  if (stats) *stats = st;
  return out;
}

// K samples decoded together, sample i with seed sc.seed + i: each row's text.
std::vector<std::string> run_rows(Model<float>& model, const SamplerConfig& sc, const std::string& prompt, int n,
                                  int K, int32_t stop = -1, int* stopped = nullptr) {
  DecoderOptions o;
  o.batch = K;
  o.prefill_rows = 1;
  o.max_segment = 8;
  o.max_positions = 256;
  Decoder<float> dec(model, o);
  std::vector<Sampler> samplers;
  for (int i = 0; i < K; ++i) {
    SamplerConfig one = sc;
    one.seed = sc.seed + uint64_t(i);
    samplers.emplace_back(dec.vocab(), one);
  }
  std::vector<std::string> out(static_cast<size_t>(K));
  const GenerateStats st =
      generate(dec, samplers, ids_of(prompt), n, [&](int row, int32_t t) { out[size_t(row)] += char_of(t); }, stop);
  int64_t emitted = 0;
  for (const std::string& row : out) emitted += int64_t(row.size());
  CHECK(st.generated == emitted);
  if (stop < 0) CHECK(st.generated == int64_t(n) * K);
  if (stopped) *stopped = st.stopped;
  CHECK(st.prompt_tokens == int64_t(prompt.size()));
  return out;
}

void check_kind(AttentionKind kind) {
  Model<float> model(spec_of(kind));
  model_init(model, 3);
  const double loss = overfit(model);
  REQUIRE(loss < 0.05);
  DecoderOptions o;
  o.max_segment = 8;  // the prompt goes in two segments
  o.max_positions = 256;
  Decoder<float> dec(model, o);
  SamplerConfig greedy;
  greedy.greedy = true;
  const std::string prompt = kSentence.substr(0, 12);
  const int n = static_cast<int>(kSentence.size()) - 12;
  CHECK(run(dec, greedy, prompt, n) == kSentence.substr(12));

  SamplerConfig warm;
  warm.temperature = 3.0;  // flat enough that the seed matters
  warm.top_k = 0;
  warm.top_p = 1;
  warm.seed = 7;
  dec.reset();
  const std::string a = run(dec, warm, prompt, 30);
  dec.reset();
  CHECK(run(dec, warm, prompt, 30) == a);
  // In two calls: the sampler's stream is keyed by position, so the text is the same.
  dec.reset();
  std::string split = run(dec, warm, prompt, 11);
  split += run(dec, warm, "", 19);
  CHECK(split == a);
  warm.seed = 8;
  dec.reset();
  const std::string b = run(dec, warm, prompt, 30);
  CHECK(b != a);
  // Samples decoded together in one batched step, sample i with seed 7 + i: each is the text
  // a one-row decoder gives with that seed alone.
  warm.seed = 7;
  const std::vector<std::string> rows = run_rows(model, warm, prompt, 30, 3);
  CHECK(rows[0] == a);
  CHECK(rows[1] == b);

  // A stop token (EOS in `rfa generate`) ends the text where greedy decoding samples it: it is
  // consumed by the decoder (a later call continues after it) but not emitted.
  dec.reset();
  const int32_t semicolon = id_of(';');
  GenerateStats st;
  std::string out = run(dec, greedy, prompt, n, semicolon, &st);
  const std::string upto = kSentence.substr(12, kSentence.find(';') - 12);
  CHECK(out == upto);
  CHECK(st.stopped == 1);
  CHECK(st.generated == static_cast<int64_t>(upto.size()));
  CHECK(dec.position() == static_cast<int64_t>(prompt.size() + upto.size() + 1));
  out = run(dec, greedy, "", 6, semicolon, &st);
  CHECK(out == kSentence.substr(kSentence.find(';') + 1, 6));  // " the e": the text after the stop token
  CHECK(st.stopped == 0);
  // Rows stop on their own: a row that samples the stop token leaves, the others go on, and
  // each row's text is its one-row run's.
  const int32_t space = id_of(' ');
  int stopped_rows = 0, stopped_alone = 0;
  const std::vector<std::string> stopping = run_rows(model, warm, prompt, 30, 6, space, &stopped_rows);
  for (int i = 0; i < 6; ++i) {
    SamplerConfig one = warm;
    one.seed = warm.seed + uint64_t(i);
    dec.reset();
    CHECK(stopping[size_t(i)] == run(dec, one, prompt, 30, space, &st));
    stopped_alone += st.stopped;
  }
  CHECK(stopped_rows == stopped_alone);
  CHECK(stopped_rows > 0);
  dec.reset();
  warm.seed = 9;
  CHECK(rows[2] == run(dec, warm, prompt, 30));
  CHECK(rows[2] != rows[0]);
  // 24 rows: more than the sampling pass's grain at V 96, so the rows draw side by side on the
  // pool (generate.cpp); each is still its seed's one-row text.
  warm.seed = 7;
  const std::vector<std::string> many = run_rows(model, warm, prompt, 30, 24);
  CHECK(many[0] == a);
  CHECK(many[1] == b);
  CHECK(many[2] == rows[2]);
  warm.seed = 7 + 23;
  dec.reset();
  CHECK(many[23] == run(dec, warm, prompt, 30));
}

}  // namespace

TEST_CASE("generate: rfa_gate overfit on one sentence; seeds") { check_kind(AttentionKind::rfa_gate); }

TEST_CASE("generate: softmax overfit on one sentence; seeds") { check_kind(AttentionKind::softmax); }

TEST_CASE("generate: an empty prompt with no state is an error") {
  Model<float> model(spec_of(AttentionKind::rfa));
  model_init(model, 3);
  Decoder<float> dec(model, DecoderOptions{});
  Sampler sampler(dec.vocab(), SamplerConfig{});
  CHECK_THROWS_AS(generate(dec, std::span<Sampler>(&sampler, 1), {}, 5, [](int, int32_t) {}), Error);
}
