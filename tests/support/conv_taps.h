#pragma once
// The short convolution (attention.short_conv) starts as the identity, which hides it: a test
// comparing two ways of running a model (decoding and the full forward, segments and one pass)
// would pass with the convolution skipped on one side. Tests call this after model_init.
#include <string>

#include "core/rng.h"
#include "model/model.h"

namespace rfa::test {

// Adds scale * normal noise to every layers.{l}.attn.conv_{q,k,v} tap, and to the output norm's
// weight layers.{l}.attn.out_norm (all ones at init, docs/output-gate.md); no-op without them.
template <typename T>
void conv_taps_randomize(Model<T>& model, uint64_t seed, double scale = 0.4) {
  CounterRng rng(seed, 0xC0117);
  for (const ParamEntry& e : model.table.entries())
    if (e.name.find("attn.conv_") != std::string::npos || e.name.find("attn.out_norm") != std::string::npos)
      for (int64_t i = 0; i < e.numel; ++i) model.params()[e.offset + i] += static_cast<T>(scale * rng.normal());
}

}  // namespace rfa::test
