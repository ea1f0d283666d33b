#pragma once
// A small deterministic text corpus (a few KB) for tokenizer and data tests:
// verse-like lines with digits, punctuation, accents, blank lines and indentation.
#include <fmt/format.h>

#include <string>

#include "core/rng.h"

namespace rfa::test {

inline std::string corpus_make(int lines, uint64_t seed = 1) {
  static const char* words[] = {"the", "of", "and", "unto", "shall", "LORD", "thou", "thy", "him", "which",
                                "was", "all", "for", "king", "Israel", "café", "naïve", "über", "said", "land"};
  CounterRng rng(seed);
  std::string text;
  for (int i = 0; i < lines; ++i) {
    if (rng.below(10) == 0) text += "\n";          // blank line: a chapter break
    if (rng.below(8) == 0) text += "    ";         // indentation
    int n = 3 + static_cast<int>(rng.below(12));
    for (int w = 0; w < n; ++w) {
      if (w) text += rng.below(20) == 0 ? "  " : " ";
      text += words[rng.below(20)];
    }
    text += rng.below(3) == 0 ? fmt::format(", {}:{}.\n", rng.below(50), rng.below(200)) : std::string(".\n");
  }
  return text;
}

}  // namespace rfa::test
