// The engine's prefill tick (src/serve/engine_prefill.cpp) over the scripted backend: chunks
// interleaved with decoding, a tick's prompts in one pass, fewest tokens left first.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "serve/engine.h"
#include "serve/engine_script.h"

TEST_CASE("engine: a long prompt is prefilled a chunk per tick while another reply keeps decoding") {
  ScriptBackend backend(script_after(1, "abcdefghijklmnopqrstuvwxyz"), 2, 4);
  Engine engine(backend, tokenizer(), nullptr, {});
  auto first = engine.submit(endless_request());
  std::thread reader([&] { collect(*first); });  // read as it comes (an unread reply pauses)
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto second = engine.submit(request(std::string(40, 'b'), 2));
  collect(*second);
  first->cancel();
  reader.join();
  // The 40 tokens go in ten chunks of 4, and between any two of them the first reply steps.
  int chunks = 0, steps_between = 0;
  bool in_prompt = false;
  for (const std::string& c : backend.calls) {
    if (c == "prefill 4") {
      if (in_prompt && chunks > 0) CHECK(steps_between > 0);
      in_prompt = true;
      ++chunks;
      steps_between = 0;
    } else if (c.rfind("step", 0) == 0) {
      ++steps_between;
    }
  }
  CHECK(chunks == 10);
}

TEST_CASE("engine: prompts that arrive together are prefilled in one pass; a piece that fails fails its request alone") {
  ScriptBackend backend(script_after(3, "abcdefghij"), 6, 8);
  backend.step_time = std::chrono::milliseconds(20);  // the next prompts arrive during a step
  backend.poison = ids("z")[0];
  Engine engine(backend, tokenizer(), nullptr, {});
  auto first = engine.submit(endless_request());
  std::thread reader([&] { collect(*first); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // Four prompts of 3, 8, 2 and 1 tokens arrive during one step: the next tick takes whole pieces,
  // the fewest tokens left first, until the chunk of 8 is used (a piece is never cut for the
  // others: here all four, 14 tokens), all in one pass.
  std::vector<std::shared_ptr<RequestHandle>> h;
  for (const char* p : {"xxx", "xxxxxxxx", "xx", "x"}) h.push_back(engine.submit(request(p, 2)));
  std::vector<Reply> replies;
  for (auto& r : h) replies.push_back(collect(*r));
  int passes = 0;
  for (const std::string& c : backend.calls) passes += c.rfind("batch ", 0) == 0 && c != "batch 1";
  CHECK(passes >= 1);
  CHECK(backend.prefilled == 1 + 3 + 8 + 2 + 1);
  CHECK(replies[0].text[0] == "ab");  // the script after 3 positions
  CHECK(replies[1].text[0] == "fg");
  CHECK(replies[2].text[0] == "xa");
  CHECK(replies[3].text[0] == "xx");
  // A poisoned prompt in a pass: the pass runs nothing, each piece then goes alone, and only the
  // poisoned request fails.
  const size_t before = backend.calls.size();
  auto good = engine.submit(request("xxx", 2)), bad = engine.submit(request("xzx", 2));
  const Reply g = collect(*good), b = collect(*bad);
  CHECK(g.text[0] == "ab");
  CHECK(b.reason[0] == FinishReason::error);
  CHECK(b.error.find("cannot be prefilled") != std::string::npos);
  const std::vector<std::string> tail(backend.calls.begin() + static_cast<std::ptrdiff_t>(before), backend.calls.end());
  CHECK(std::find(tail.begin(), tail.end(), "batch 2") != tail.end());
  first->cancel();
  reader.join();
}

TEST_CASE("engine: the prompts with the fewest tokens left are prefilled first, one after another") {
  ScriptBackend backend(script_after(12, "abcdefghij"), 5, 4);
  backend.step_time = std::chrono::milliseconds(20);  // the next prompts arrive during a step
  Engine engine(backend, tokenizer(), nullptr, {});
  auto first = engine.submit(endless_request());  // slot 0
  std::thread reader([&] { collect(*first); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // Three prompts of 12 tokens (slots 1-3, 3 chunks each) and one of 2 (slot 4).
  std::vector<std::shared_ptr<RequestHandle>> h;
  for (const char* p : {"xxxxxxxxxxxx", "xxxxxxxxxxxx", "xxxxxxxxxxxx", "xx"}) h.push_back(engine.submit(request(p, 1)));
  for (auto& r : h) collect(*r);
  first->cancel();
  reader.join();
  // The long prompts one after another (round robin gave 1 2 3 1 2 3 1 2 3, all three done at the end),
  // and the short one before the second long one starts.
  std::vector<int> longs;
  size_t short_at = 0, second_at = 0;
  for (size_t i = 0; i < backend.prefill_slots.size(); ++i) {
    const int slot = backend.prefill_slots[i];
    if (slot == 4) short_at = i;
    if (slot == 2 && second_at == 0) second_at = i;
    if (slot >= 1 && slot <= 3) longs.push_back(slot);
  }
  CHECK(longs == std::vector<int>{1, 1, 1, 2, 2, 2, 3, 3, 3});
  CHECK(short_at < second_at);
}
