#pragma once
// Writes every named intermediate of the last forward ("layers.3.ffn.gate_up",
// "logits", ...) to one safetensors file, for debugging and for comparing two
// implementations tensor by tensor. Not for the hot loop (it writes a file).
#include <string>

#include "model/activations.h"

namespace rfa {

void activations_dump(Activations<float>& acts, const std::string& path);

}  // namespace rfa
