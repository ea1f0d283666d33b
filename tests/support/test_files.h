#pragma once
// Test helpers: text written to a temporary file, and the message
// of the rfa::Error a call throws.
#include <doctest/doctest.h>

#include <string>

#include "core/error.h"
#include "support/temp_dir.h"

namespace rfa::test {

// Writes `text` to `name` in a directory private to this process (tests run in parallel, also
// from other worktrees), removed with its files when the process exits, and returns its path.
inline std::string temp_file(const std::string& name, const std::string& text) {
  static const TempDir dir;
  return dir.write(name, text);
}

// Whether `message` contains `part`; on a failed CHECK both are shown.
inline bool has(const std::string& message, const std::string& part) {
  INFO("message: " << message);
  INFO("expected to contain: " << part);
  return message.find(part) != std::string::npos;
}

// The rfa::Error message `f` throws; fails the test when it throws nothing.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  FAIL("expected an rfa::Error, got none");
  return "";
}

}  // namespace rfa::test
