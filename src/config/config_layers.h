#pragma once
// attention.layers: each layer's own attention options. The attention.* keys are the
// default of every layer; the list, when given, has one entry per layer
// (model.n_layers of them), each a kind and optional overrides of attention.* keys:
//   ""                                     every layer as attention.* says
//   "rfa_gate, softmax, rfa_gate, softmax"  one kind per layer
//   "3*rfa_gate gate=feature, softmax"      N* repeats an entry; key=value (an attention.* key
//                                           without its section) overrides that key for it
// Whitespace around entries and tokens is free. Each layer's values are checked against
// their key's bounds, as the global keys are (config_validate runs the cross-key rules per layer).
#include <string>
#include <vector>

#include "config/config.h"

namespace rfa {

// The options of every layer (n_layers of them, their own `layers` empty). Throws
// ConfigKeyError naming attention.layers, the entry, the value and the fix.
std::vector<AttentionConfig> config_attention_layers(const AttentionConfig& attention, int n_layers);

}  // namespace rfa
