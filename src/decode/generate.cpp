#include "decode/generate.h"

#include "core/error.h"
#include "core/timer.h"

namespace rfa {

GenerateStats generate(Decoder<float>& dec, Sampler& sampler, std::span<const int32_t> prompt,
                       int64_t max_new_tokens, uint64_t row, const std::function<void(int32_t)>& on_token,
                       int32_t stop_token) {
  RFA_ASSERT(dec.batch() == 1, "generate decodes one sequence at a time, decoder batch is {}", dec.batch());
  if (max_new_tokens < 0) fail("-n {} must be >= 0", max_new_tokens);
  GenerateStats st;
  st.prompt_tokens = static_cast<int64_t>(prompt.size());
  Timer timer;
  if (!prompt.empty()) dec.prefill_all(prompt.data(), st.prompt_tokens);
  if (dec.last_logits() == nullptr)
    fail("nothing to continue from: the prompt is empty and no state was loaded; give --prompt");
  st.prefill_seconds = timer.seconds();
  timer.reset();
  const float* logits = dec.last_logits();
  for (int64_t i = 0; i < max_new_tokens; ++i) {
    const int32_t token = sampler.sample(logits, row, dec.position());
    if (token == stop_token) {
      dec.step(&token);
      st.stopped = true;
      break;
    }
    on_token(token);
    logits = dec.step(&token);
    ++st.generated;
  }
  st.decode_seconds = timer.seconds();
  st.state_bytes = dec.state_bytes();
  return st;
}

}  // namespace rfa
