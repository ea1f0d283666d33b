#pragma once
// Perplexity of a model on a token sequence x[0..N): the mean negative
// log-likelihood of x[t+1] given x[0..t], over every t in [0, N-1).
//   RFA kinds: one pass over the whole text, prefilled segment by segment with the
//              recurrent state carried across segments (no context limit).
//   softmax (or `sliding`): windows of context_length tokens advancing by `stride`;
//              each window scores only targets no earlier window scored, so every
//              target is scored once with at least context_length - stride tokens
//              of context (fewer only at the very start).
// Bits per byte = total NLL / ln 2 / bytes of the text, comparable across tokenizers.
#include <cstdint>
#include <span>
#include <string>

#include "decode/decoder.h"
#include "model/model.h"

namespace rfa {

struct PerplexityOptions {
  int segment = 512;   // RFA: tokens per prefill segment (memory only; the result does not depend on it)
  int stride = 0;      // sliding windows: window advance; 0 = window / 2 (at least 1)
  int window = 0;      // sliding windows: tokens per window; 0 = context_length; set: RFA kinds slide too
  bool sliding = false;  // RFA kinds too: sliding windows like softmax (like-for-like comparison)
  bool progress = true;  // log a progress line with ETA every few seconds
  Precision precision = Precision::fp32;  // bf16: products on the model's bf16 copies (--precision)
};

struct PerplexityResult {
  std::string method;        // how the text was covered, for the report
  int64_t tokens = 0;        // predicted tokens (N - 1)
  int64_t bytes = 0;         // text bytes the sequence stands for
  double nll_sum = 0;        // nats
  double mean_nll = 0;       // nats per token
  double perplexity = 0;     // exp(mean_nll)
  double bits_per_byte = 0;  // nll_sum / ln 2 / bytes
  int window = 0, stride = 0;  // softmax only
  double seconds = 0;
};

// -log softmax(logits)[target], computed in double. Throws Error on a non-finite logit.
double token_nll(const float* logits /*(V)*/, int V, int32_t target);

// out[r] = token_nll(logits + r V, V, targets[r]) for r in [0, rows), the rows across the pool
// (each value the same whatever the thread count; inside a parallel region of the caller's, on the
// calling thread). Throws, after the rows, on a non-finite logit.
void token_nll_rows(const float* logits /*(rows, V)*/, int V, const int32_t* targets /*(rows)*/, int64_t rows,
                    double* out /*(rows)*/);

// f(r, token_nll(row r)) for r = 0, 1, ... rows - 1 in that order: the rows scored kNllRowBlock at a
// time into a buffer on the stack, so that sums taken in f are the same doubles as a serial pass's.
inline constexpr int kNllRowBlock = 256;
template <typename F>
void for_each_token_nll(const float* logits /*(rows, V)*/, int V, const int32_t* targets /*(rows)*/, int64_t rows,
                        F&& f) {
  double nll[kNllRowBlock];
  for (int64_t r0 = 0; r0 < rows; r0 += kNllRowBlock) {
    const int64_t n = rows - r0 < kNllRowBlock ? rows - r0 : kNllRowBlock;
    token_nll_rows(logits + r0 * V, V, targets + r0, n, nll);
    for (int64_t r = 0; r < n; ++r) f(r0 + r, nll[r]);
  }
}

// How a text of `tokens` tokens is covered, and the decoder (B = 1) that does it.
// The trainer builds that decoder once (it allocates) and reuses it for every
// evaluation; perplexity_evaluate builds one per call.
struct PerplexityPlan {
  bool recurrent = false;  // RFA one pass; else sliding windows
  int segment = 0;         // recurrent: tokens per prefill (the decoder's max_segment)
  int window = 0, stride = 0;  // sliding windows
  int context = 0;             // the model's training context (the default window)
  DecoderOptions decoder;
};
PerplexityPlan perplexity_plan(const ModelSpec& spec, int64_t tokens, const PerplexityOptions& options);
std::string perplexity_method(const PerplexityPlan& plan);  // one line, for reports and logs

// Summed NLL (nats) of every target x[1..N) given all of x before it, as the
// plan says. `decoder` is built from plan.decoder over the model being scored;
// it is reset first, and nothing allocates. Tokens are checked by the decoder.
// `should_stop`, if given, is polled before each segment or window; when it answers true
// the pass ends at once and the result is NaN (the trainer's stop request).
// `starts`: where documents begin in x (ascending indices; data.document_boundaries reset), or
// empty: the decoder is reset before each (state empty, position 0), so a target is scored from
// its own document's tokens only; the logits at a document's last token still score the next
// document's first, as training's targets do.
// `progress`: while the pass runs, a line every 5 seconds, "[tag] what done/total tokens (p%), r tokens/s,
// ETA s" (none when tag is null): `rfa eval perplexity`'s, and the trainer's validation pass, which scores
// the whole split by default and can take minutes at a medium model.
struct PassProgress {
  const char* tag = nullptr;
  const char* what = "";
};
double perplexity_nll_sum(Decoder<float>& decoder, const PerplexityPlan& plan, std::span<const int32_t> x,
                          PassProgress progress, bool (*should_stop)() = nullptr, std::span<const int64_t> starts = {});

// tokens: N >= 2 ids in [0, V). bytes: the text's byte count (> 0).
PerplexityResult perplexity_evaluate(Model<float>& model, std::span<const int32_t> tokens, int64_t bytes,
                                     const PerplexityOptions& options, std::span<const int64_t> starts = {});

}  // namespace rfa
