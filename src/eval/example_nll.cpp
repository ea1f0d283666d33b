#include "eval/example_nll.h"

#include <algorithm>
#include <limits>

#include "core/error.h"
#include "core/memory_check.h"
#include "core/parallel.h"
#include "decode/decode_memory.h"
#include "eval/perplexity.h"

namespace rfa {

DecoderOptions example_decoder_options(int max_tokens, Precision precision) {
  RFA_ASSERT(max_tokens >= 2, "examples of {} tokens", max_tokens);
  DecoderOptions o;
  o.batch = 1;
  o.max_segment = max_tokens - 1;    // an example's inputs in one prefill
  o.max_positions = max_tokens - 1;  // the RoPE table, softmax's cache
  o.precision = precision;
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
    double response = 0;
    for (int64_t j = 1; j < n; ++j) {
      const double nll = token_nll(logits + (j - 1) * V, V, scratch[static_cast<size_t>(j)]);
      if (j >= p) {
        response += nll;
        r.response_sum += nll;
        ++r.response_tokens;
      } else {
        r.prompt_sum += nll;
        ++r.prompt_tokens;
      }
    }
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
