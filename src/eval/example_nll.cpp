#include "eval/example_nll.h"

#include <algorithm>
#include <limits>

#include "core/error.h"
#include "core/memory_check.h"
#include "core/parallel.h"
#include "decode/decode_memory.h"
#include "eval/perplexity.h"
#include "kernels/logit_rows.h"

namespace rfa {

int32_t logits_argmax(const float* logits, int V) {
  return logits_first_index(logits, V, logits_max(logits, V).max);
}

double example_score(const float* logits, int V, const int32_t* x, int64_t n, int64_t p, const DocumentTable& docs,
                     ExampleNll& r) {
  double response = 0;
  // Row j - 1 scores target x[j].
  for_each_token_nll(logits, V, x + 1, n - 1, [&](int64_t row, double nll) {
    const int64_t j = row + 1;
    if (j >= p && docs.response_target(j, p)) {
      response += nll;
      r.response_sum += nll;
      ++r.response_tokens;
      r.response_correct += logits_argmax(logits + row * V, V) == x[j];
    } else {
      r.prompt_sum += nll;
      ++r.prompt_tokens;
    }
  });
  return response;
}

DecoderOptions example_decoder_options(int max_tokens, Precision precision) {
  RFA_ASSERT(max_tokens >= 2, "examples of {} tokens", max_tokens);
  DecoderOptions o;
  o.batch = 1;
  o.max_segment = max_tokens - 1;    // an example's inputs in one prefill
  o.max_positions = max_tokens - 1;  // the RoPE table, softmax's cache
  o.precision = precision;
  o.steps = false;  // prefills only: no packed step weights
  return o;
}

ExampleNll example_nll(Decoder<float>& dec, const ExampleSet& set, int max_tokens, std::vector<int32_t>& scratch,
                       bool (*should_stop)(), std::vector<double>* logprobs) {
  ExampleNll r;
  scratch.resize(static_cast<size_t>(max_tokens));
  if (logprobs) logprobs->assign(static_cast<size_t>(set.count), std::numeric_limits<double>::quiet_NaN());
  const int V = dec.vocab();
  for (int64_t d = set.first; d < set.first + set.count; ++d) {
    if (should_stop && should_stop()) {
      r.stopped = true;
      return r;
    }
    const int64_t s = set.docs.start(d), n = set.docs.end(d) - s, p = set.docs.response_start(d) - s;
    if (n > max_tokens) {
      ++r.too_long;
      continue;
    }
    if (n < 2) continue;  // no target at all
    set.tokens.copy(s, n, scratch.data());
    dec.reset();
    const float* logits = dec.prefill(scratch.data(), static_cast<int>(n - 1));  // row j - 1 predicts t[j]
    const double response = example_score(logits, V, scratch.data(), n, p, set.docs, r);
    ++r.examples;
    if (logprobs) (*logprobs)[static_cast<size_t>(d - set.first)] = -response;
  }
  return r;
}

ExampleNll examples_evaluate(Model<float>& model, const ExampleSet& set, Precision precision,
                             std::vector<double>* logprobs) {
  const int max_tokens = model.spec.model.context_length + 1;
  const DecoderOptions o = example_decoder_options(max_tokens, precision);
  const std::string limit = fmt::format("model.context_length ({})", model.spec.model.context_length);
  memory_require(memory_estimate_decoder(model.spec, o, thread_count(), limit, limit), "evaluating");
  Decoder<float> dec(model, o);
  std::vector<int32_t> scratch;
  return example_nll(dec, set, max_tokens, scratch, nullptr, logprobs);
}

}  // namespace rfa
