#pragma once
// The generation loop: prefill the prompt, then in every row sample a token, emit it, and
// feed it back as one batched recurrent step, max_new_tokens times. Shared by
// `rfa generate` and the tests. Nothing is allocated inside the loop.
#include <cstdint>
#include <functional>
#include <span>

#include "decode/decoder.h"
#include "decode/sampler.h"

namespace rfa {

struct GenerateStats {
  int64_t prompt_tokens = 0;  // prefilled once, whatever the rows
  double prefill_seconds = 0;
  int64_t generated = 0;      // tokens passed to on_token, over every row (a stop token is not one of them)
  int stopped = 0;            // rows that sampled the stop token before max_new_tokens
  double decode_seconds = 0;  // sampling + steps + emitting
  int64_t state_bytes = 0;    // decoder state at the end
};

// Continues every row of the decoder from its current state (reset() it for a fresh start):
// prefills `prompt` into row 0 and copies that row into the others (one prefill, however
// many rows), or, with an empty prompt, continues each row from the logits it has (e.g. a
// restored state). Then up to max_new_tokens batched steps: row i samples with samplers[i]
// (one per row), whose draws are keyed by (its seed, 0, position) as a single-row run's are,
// so row i gives the text a one-row decoder gives with samplers[i] alone. on_token(row,
// token) is called as each token is produced. stop_token >= 0 (the tokenizer's EOS for `rfa
// generate`) ends a row when it samples it: the token is fed to the row like any token but
// not passed to on_token, and the row stays idle while the others go on. After the call the
// decoder has consumed every sampled token, stop tokens included, so a later call continues
// the texts.
GenerateStats generate(Decoder<float>& decoder, std::span<Sampler> samplers, std::span<const int32_t> prompt,
                       int64_t max_new_tokens, const std::function<void(int, int32_t)>& on_token,
                       int32_t stop_token = -1);

}  // namespace rfa
