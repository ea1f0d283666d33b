#pragma once
// What the fuzz targets share. Each tests/fuzz/<name>_fuzz.cpp defines
// LLVMFuzzerTestOneInput over one reader of a file a user hands us; it is linked
// either with libFuzzer (scripts/fuzz.sh: clang, ASan + UBSan) or with
// replay_main.cpp (the normal suite: every file of tests/fuzz/corpus/<name>/ once).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/checksum_policy.h"
#include "core/error.h"

namespace rfa::fuzz {

// The checked-in fixture checkpoint the targets that need a model take theirs from.
inline std::string fixture_dir() { return std::string(RFA_SOURCE_DIR) + "/tests/checkpoint/fixtures/v2-rfa_gate"; }

// Runs `parse` on one input. rfa::Error is the reader refusing it with a message:
// the expected outcome for most inputs. Anything else escapes and is a finding:
// another exception (std::logic_error from RFA_ASSERT, std::out_of_range, ...),
// a sanitizer report, or a crash. Checksums are not compared (core/checksum_policy.h)
// so mutated inputs reach the code behind them.
template <typename F>
int run(F&& parse) {
  checksums_enforce(false);
  try {
    parse();
  } catch (const Error&) {
  }
  return 0;
}

// A property of the reader that failed on an accepted input: report and abort
// (libFuzzer saves the input as a crash).
[[noreturn]] inline void violated(const char* what) {
  std::fprintf(stderr, "fuzz property violated: %s\n", what);
  std::abort();
}

}  // namespace rfa::fuzz
