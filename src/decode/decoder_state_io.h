#pragma once
// Saving and restoring a generation (kinds with a fixed-size state: the RFA kinds): one
// decoder row's state tensors per layer ("layers.{l}.<tensor>", (1, row shape...); RFA:
// layers.{l}.state (1, H, F, Dh+1)), the last position's logits (V) and the position, as
// a fixed-size safetensors file whatever the length of the text so far. The file
// records a checksum of the model's weights and random matrices, and loading
// into another model is an error.
#include <cstdint>
#include <string>
#include <vector>

#include "decode/decoder.h"

namespace rfa {

// XXH64 over the parameters and the fixed random matrices, as hex.
std::string model_checksum(Model<float>& model);

// Saves row `row`. Throws Error for a model with a layer whose state grows (softmax's KV
// cache), or a row with nothing decoded yet.
void decoder_state_save(const std::string& path, const Decoder<float>& decoder, const std::string& model_sum,
                        int row = 0);

// The position a saved state continues from (to size a decoder's positions
// before loading it); throws Error when the file is not a decoder state.
int64_t decoder_state_position(const std::string& path);

// Restores row `row`'s states, logits and position (the other rows untouched); throws
// Error naming the file and the mismatch (other model, other shape, corrupted file).
void decoder_state_load(const std::string& path, Decoder<float>& decoder, const std::string& model_sum, int row = 0);
// The same over the file's bytes already in memory; `path` names them in messages.
void decoder_state_restore(const std::vector<uint8_t>& bytes, const std::string& path, Decoder<float>& decoder,
                           const std::string& model_sum, int row = 0);

}  // namespace rfa
