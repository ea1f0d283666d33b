#pragma once
// Instruction examples in memory, laid out as a version 3 token file lays them out (each
// prompt ++ response ++ [EOS], a document table of (start, response start)), for the
// samplers and sessions that read them.
#include <cstdint>
#include <utility>
#include <vector>

#include "core/rng.h"
#include "data/token_file.h"
#include "eval/example_nll.h"

namespace rfa::test {

constexpr int32_t kEos = 2;

// Examples as (prompt tokens, response tokens); each gets EOS appended, like a token file.
struct Examples {
  std::vector<uint16_t> tokens;
  std::vector<int64_t> table;  // (D, 2): start, response start
  explicit Examples(const std::vector<std::pair<std::vector<uint16_t>, std::vector<uint16_t>>>& parts) {
    for (const auto& [prompt, response] : parts) {
      table.push_back(static_cast<int64_t>(tokens.size()));
      tokens.insert(tokens.end(), prompt.begin(), prompt.end());
      table.push_back(static_cast<int64_t>(tokens.size()));
      tokens.insert(tokens.end(), response.begin(), response.end());
      tokens.push_back(kEos);
    }
  }
  TokenSplit split() const {
    return TokenSplit(reinterpret_cast<const unsigned char*>(tokens.data()), 2, static_cast<int64_t>(tokens.size()),
                      0);
  }
  DocumentTable docs() const {
    return DocumentTable(reinterpret_cast<const unsigned char*>(table.data()), static_cast<int64_t>(table.size() / 2),
                         static_cast<int64_t>(tokens.size()));
  }
  int64_t size() const { return static_cast<int64_t>(table.size() / 2); }
  ExampleSet set(int64_t first, int64_t count) const { return {split(), docs(), first, count}; }
};

// `count` examples of varied lengths over ids below `vocab` (>= 4): prompts of 1 to 5 tokens,
// responses of 0 to 6, from `seed`.
inline Examples examples_random(int count, int vocab, uint64_t seed) {
  std::vector<std::pair<std::vector<uint16_t>, std::vector<uint16_t>>> parts;
  CounterRng rng(seed, 0xE8A);
  auto next = [&](uint64_t n) { return static_cast<uint16_t>(rng.below(n)); };
  for (int i = 0; i < count; ++i) {
    std::vector<uint16_t> prompt(1 + next(5)), response(next(7));
    for (auto& t : prompt) t = static_cast<uint16_t>(3 + next(static_cast<uint64_t>(vocab - 3)));
    for (auto& t : response) t = static_cast<uint16_t>(3 + next(static_cast<uint64_t>(vocab - 3)));
    parts.push_back({prompt, response});
  }
  return Examples(parts);
}

}  // namespace rfa::test
