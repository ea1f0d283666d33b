// The bookkeeping behind test::skip_if: a doctest listener notes each test case a run
// starts; skip_if notes the one running. Single-threaded like doctest's own test loop.
#include "support/skip.h"

#include <doctest/doctest.h>

#include <set>
#include <string>

namespace rfa::test {
namespace {

std::set<const doctest::TestCaseData*> g_started;
std::set<const doctest::TestCaseData*> g_skipped;
const doctest::TestCaseData* g_current = nullptr;

// Listens only: every event but the start of a test case is ignored.
struct SkipListener : doctest::IReporter {
  explicit SkipListener(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData& tc) override {
    g_current = &tc;
    g_started.insert(&tc);
  }
  void test_case_reenter(const doctest::TestCaseData& tc) override { g_current = &tc; }
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

}  // namespace

DOCTEST_REGISTER_LISTENER("skips", 1, SkipListener);

bool skip_if(bool cond, const char* reason) {
  if (!cond) return false;
  const std::string text = std::string("SKIPPED: ") + reason;
  MESSAGE(text);
  if (g_current) g_skipped.insert(g_current);
  return true;
}

int skip_exit_code(int ran, int skipped, int doctest_result) {
  if (doctest_result != 0) return doctest_result;
  return ran > 0 && skipped == ran ? kSkipExitCode : 0;
}

int skip_exit_code_of_run(int doctest_result) {
  return skip_exit_code(static_cast<int>(g_started.size()), static_cast<int>(g_skipped.size()), doctest_result);
}

}  // namespace rfa::test
