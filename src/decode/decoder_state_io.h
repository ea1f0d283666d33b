#pragma once
// Saving and restoring a generation (RFA kinds): the per-layer states
// S (1, H, F, Dh+1), the last position's logits (V) and the position, as a
// fixed-size safetensors file whatever the length of the text so far. The file
// records a checksum of the model's weights and random matrices, and loading
// into another model is an error.
#include <string>

#include "decode/decoder.h"

namespace rfa {

// XXH64 over the parameters and the fixed random matrices, as hex.
std::string model_checksum(Model<float>& model);

// Throws Error for a softmax model (its state is a growing KV cache), a batch
// other than 1, or a decoder with nothing decoded yet.
void decoder_state_save(const std::string& path, const Decoder<float>& decoder, const std::string& model_sum);

// The position a saved state continues from (to size a decoder's positions
// before loading it); throws Error when the file is not a decoder state.
int64_t decoder_state_position(const std::string& path);

// Restores states, logits and position; throws Error naming the file and the
// mismatch (other model, other shape, corrupted file).
void decoder_state_load(const std::string& path, Decoder<float>& decoder, const std::string& model_sum);

}  // namespace rfa
