#pragma once
// Validation of instruction examples (data.format alpaca / prompt_completion): each held-out
// example scored alone, from an empty state at position 0, as a padded row trains it: the
// NLL of its response targets (the response and its EOS; mqar: the answers) and, beside it, of its prompt
// targets (docs/fine-tuning.md). The trainer's validation loss in this mode is the mean
// response NLL; `rfa eval perplexity` prints the same for the run's validation examples or
// a --data file of examples. Examples longer than max_tokens (model.context_length + 1, as
// in training) are skipped and counted.
#include <cstdint>
#include <span>
#include <vector>

#include "data/token_file.h"
#include "decode/decoder.h"

namespace rfa {

// Documents [first, first + count) of `docs`, over `tokens` (the token data they index).
struct ExampleSet {
  TokenSplit tokens;
  DocumentTable docs;
  int64_t first = 0;
  int64_t count = 0;
};

struct ExampleNll {
  double response_sum = 0, prompt_sum = 0;  // nats
  int64_t response_tokens = 0, prompt_tokens = 0;
  int64_t response_correct = 0;  // response targets whose logit is the largest (the first of ties)
  int64_t examples = 0;   // scored
  int64_t too_long = 0;   // skipped: more than max_tokens
  bool stopped = false;   // a stop request cut the pass short (sums partial)
  double response_mean() const { return response_tokens ? response_sum / double(response_tokens) : 0.0; }
  double prompt_mean() const { return prompt_tokens ? prompt_sum / double(prompt_tokens) : 0.0; }
  double response_accuracy() const { return response_tokens ? double(response_correct) / double(response_tokens) : 0.0; }
};

// The index of the largest of logits[0..V), the first of equal ones (greedy decoding's choice).
int32_t logits_argmax(const float* logits /*(V)*/, int V);

// Adds one example's targets x[1..n) to r, scored by logits row j - 1 for target x[j]: the
// response targets (j >= p and docs.response_target) to the response sums and the accuracy,
// the others to the prompt's. Returns the example's response NLL sum.
double example_score(const float* logits /*(n - 1, V)*/, int V, const int32_t* x /*(n)*/, int64_t n, int64_t p,
                     const DocumentTable& docs, ExampleNll& r);

// The decoder example_nll needs (B = 1, prefill of up to max_tokens - 1 tokens).
DecoderOptions example_decoder_options(int max_tokens, Precision precision = Precision::fp32);

// Scores the examples of `set` with `decoder` (built from example_decoder_options over the
// model being scored; reset for each example). `scratch` holds one example (sized here once).
// `should_stop`, if given, is polled before each example. `logprobs`, if given, receives each
// example's response log-probability (minus its response NLL sum; NaN when skipped), one per
// document of the set (preference pairs: chosen, rejected, ...).
ExampleNll example_nll(Decoder<float>& decoder, const ExampleSet& set, int max_tokens, std::vector<int32_t>& scratch,
                       bool (*should_stop)() = nullptr, std::vector<double>* logprobs = nullptr);

// `rfa eval perplexity` on instruction examples: example_nll with a decoder built here for the
// model's context_length + 1 tokens (refused first if it cannot fit in memory).
ExampleNll examples_evaluate(Model<float>& model, const ExampleSet& set, Precision precision = Precision::fp32,
                             std::vector<double>* logprobs = nullptr);

}  // namespace rfa
