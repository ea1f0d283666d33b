#include <doctest/doctest.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/heartbeat.h"
#include "core/log.h"
#include "support/test_files.h"

using namespace rfa;

TEST_CASE("heartbeat: logs while alive, stops at once when destroyed") {
  std::string log_path = rfa::test::temp_file("heartbeat.log", "");
  log_add_file(log_path);
  auto count_lines = [&] {
    log_flush();
    std::ifstream in(log_path);
    std::string line;
    int n = 0;
    while (std::getline(in, line)) n += line.find("[beat] encoding x: still running") != std::string::npos;
    return n;
  };
  auto start = std::chrono::steady_clock::now();
  {
    Heartbeat heartbeat("beat", "encoding x", 0.02);
    std::this_thread::sleep_for(std::chrono::milliseconds(110));
  }
  int beats = count_lines();
  CHECK(beats >= 2);
  CHECK(beats <= 6);
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  CHECK(count_lines() == beats);  // nothing after destruction
  {
    Heartbeat idle("beat", "encoding x", 60.0);  // destruction must not wait for the interval
  }
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}
