#pragma once
// A token split whose token i is i (16-bit storage), so a window's start is its first
// input: the samplers' tests read offsets straight off the tokens.
#include <cstdint>
#include <vector>

#include "data/token_file.h"

namespace rfa::test {

struct IotaSplit {
  std::vector<uint16_t> tokens;
  explicit IotaSplit(int n) : tokens(n) {
    for (int i = 0; i < n; ++i) tokens[i] = static_cast<uint16_t>(i);
  }
  TokenSplit split() const {
    return TokenSplit(reinterpret_cast<const unsigned char*>(tokens.data()), 2, static_cast<int64_t>(tokens.size()), 0);
  }
};

}  // namespace rfa::test
