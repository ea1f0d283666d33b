#pragma once
// What a Decoder will allocate for its options, estimated before building it
// (core/memory_check.h refuses what cannot fit): the activations of one
// prefill segment and the attention workspace, the RFA state or the softmax KV
// cache, the RoPE table of the decoded positions. In doubles: no overflow.
#include <string>

#include "core/memory_check.h"
#include "decode/decoder.h"

namespace rfa {

// segment_keys / positions_keys name what the user controls, with values:
// "--prefill-segment (512)", "-n (1000000000) or --window (0)".
MemoryEstimate memory_estimate_decoder(const ModelSpec& spec, const DecoderOptions& options, int threads,
                                       const std::string& segment_keys, const std::string& positions_keys);

}  // namespace rfa
