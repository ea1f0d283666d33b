#pragma once
// Tests that say they did not run. A test case that cannot run here (bf16 without
// AVX512-BF16) calls
//   if (test::skip_if(!bf16_native(), "this CPU has no AVX512-BF16")) return;
// which logs the reason and records the case as skipped. When every test case a run
// started was skipped (and none failed), the test binary exits with kSkipExitCode, which
// tests/CMakeLists.txt declares as every entry's SKIP_RETURN_CODE: ctest then reports the
// file "Skipped", not "Passed". A file that mixes skipped and run cases passes (or fails)
// on the cases that ran; so a case that needs a CPU feature goes in a file of its own kind.
namespace rfa::test {

inline constexpr int kSkipExitCode = 77;  // the Automake convention, which CTest's SKIP_RETURN_CODE takes

// True when `cond`: the running test case is recorded as skipped, with `reason` in the log.
bool skip_if(bool cond, const char* reason);

// The exit code of a run that started `ran` test cases, `skipped` of them skipped (each
// counted once, however many subcases), given doctest's own result: doctest's unless it
// is 0 and every started case was skipped (then kSkipExitCode). Pure, for its test.
int skip_exit_code(int ran, int skipped, int doctest_result);

// The exit code for this process's run so far (main: after doctest's run()).
int skip_exit_code_of_run(int doctest_result);

}  // namespace rfa::test
