#pragma once
// The generation loop: prefill the prompt, then sample a token, emit it, and
// feed it back as one recurrent step, max_new_tokens times. Shared by
// `rfa generate` and the tests. Nothing is allocated inside the loop.
#include <cstdint>
#include <functional>
#include <span>

#include "decode/decoder.h"
#include "decode/sampler.h"

namespace rfa {

struct GenerateStats {
  int64_t prompt_tokens = 0;
  double prefill_seconds = 0;
  int64_t generated = 0;      // tokens passed to on_token (the stop token is not one of them)
  bool stopped = false;       // the stop token was sampled before max_new_tokens
  double decode_seconds = 0;  // sampling + steps + emitting
  int64_t state_bytes = 0;    // decoder state at the end
};

// Continues from the decoder's current state (reset() it for a fresh start):
// prefills `prompt` (may be empty only if the decoder already has logits, e.g. a
// restored state), then generates. Batch size must be 1; `row` keys the
// sampler's random stream (the sample index). on_token(token) is called as each
// token is produced. stop_token >= 0 (the tokenizer's EOS for `rfa generate`) ends the
// generation when it is sampled: it is fed to the decoder like any token but not passed to
// on_token. After the call the decoder has consumed every sampled token, the stop token
// included, so a later call continues the text.
GenerateStats generate(Decoder<float>& decoder, Sampler& sampler, std::span<const int32_t> prompt,
                       int64_t max_new_tokens, uint64_t row, const std::function<void(int32_t)>& on_token,
                       int32_t stop_token = -1);

}  // namespace rfa
