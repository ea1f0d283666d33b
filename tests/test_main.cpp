// The test binary's main: the same start-up as rfa's own (kernels/cpu_target.h), so a
// build for x86-64-v3 tests oneDNN's AVX2 products too, not the wider ones of the machine.
// A run whose every test case was skipped exits with test::kSkipExitCode (support/skip.h).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "core/error.h"
#include "kernels/cpu_target.h"
#include "support/skip.h"

int main(int argc, char** argv) {
  try {
    rfa::cpu_target_apply();
  } catch (const rfa::Error& e) {
    std::fprintf(stderr, "rfa_tests: %s\n", e.what());
    return 2;
  }
  doctest::Context context(argc, argv);
  const int result = context.run();
  if (context.shouldExit()) return result;  // --help, --list-test-cases, ...
  return rfa::test::skip_exit_code_of_run(result);
}
