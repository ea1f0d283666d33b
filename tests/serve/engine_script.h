#pragma once
// The engine tests' scripted backend and helpers (engine_test.cpp, engine_prefill_test.cpp): a
// character tokenizer, a SequenceBackend whose logits follow a script, and a reply collector.
#include <limits>
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "serve/engine.h"
#include "support/corpus.h"
#include "support/temp_dir.h"
#include "support/trained_tokenizer.h"

using namespace rfa;

namespace {

const Tokenizer& tokenizer() {
  static test::TempDir dir;
  static Tokenizer tok = test::tokenizer_trained(
      dir, dir.write("corpus.txt", test::corpus_make(40) + "User: Assistant: hello world\n"), "char.model",
      TokenizerKind::character, 300);
  return tok;
}

std::vector<int32_t> ids(const std::string& text) { return tokenizer().encode(text); }

// Logits that make token script[position % size] the most likely; its state is its position.
class ScriptBackend final : public SequenceBackend {
 public:
  ScriptBackend(std::vector<int32_t> script, int slots, int chunk, int64_t limit = 0)
      : script_(std::move(script)), slots_(slots), chunk_(chunk), limit_(limit),
        position_(static_cast<size_t>(slots), 0), used_(static_cast<size_t>(slots), false),
        logits_(static_cast<size_t>(slots), std::vector<float>(static_cast<size_t>(tokenizer().vocab_size()))) {}

  int slot_count() const override { return slots_; }
  int vocab() const override { return tokenizer().vocab_size(); }
  int prefill_chunk() const override { return chunk_; }
  int64_t position_limit() const override { return limit_; }
  std::string state_layout() const override { return "script"; }
  int acquire() override {
    for (int i = 0; i < slots_; ++i)
      if (!used_[size_t(i)]) {
        used_[size_t(i)] = true;
        position_[size_t(i)] = 0;
        return i;
      }
    return -1;
  }
  void release(int slot) override { used_[size_t(slot)] = false; }
  int64_t position(int slot) const override { return position_[size_t(slot)]; }
  const float* prefill(int slot, std::span<const int32_t> tokens) override {
    REQUIRE(static_cast<int>(tokens.size()) <= chunk_);
    if (std::find(tokens.begin(), tokens.end(), poison) != tokens.end()) fail("token {} cannot be prefilled", poison);
    calls.push_back("prefill " + std::to_string(tokens.size()));
    prefill_slots.push_back(slot);
    prefilled += static_cast<int64_t>(tokens.size());
    position_[size_t(slot)] += static_cast<int64_t>(tokens.size());
    return next(slot);
  }
  // Logs "batch k", then each piece as prefill() would; a piece holding `poison` fails the batch
  // before anything runs (and fails alone in prefill()).
  void prefill_batch(std::span<const SlotPrefill> pieces, std::span<const float*> logits) override {
    REQUIRE(pieces.size() == logits.size());
    calls.push_back("batch " + std::to_string(pieces.size()));
    int total = 0;
    for (const SlotPrefill& p : pieces) {
      total += static_cast<int>(p.tokens.size());
      if (std::find(p.tokens.begin(), p.tokens.end(), poison) != p.tokens.end()) fail("poisoned piece");
    }
    REQUIRE(total < 2 * chunk_);
    for (size_t i = 0; i < pieces.size(); ++i) logits[i] = prefill(pieces[i].slot, pieces[i].tokens);
  }
  void step(std::span<const SlotToken> batch, std::span<const float*> logits) override {
    calls.push_back("step " + std::to_string(batch.size()));
    std::this_thread::sleep_for(step_time);  // a step's time: readers keep up
    for (size_t i = 0; i < batch.size(); ++i) {
      ++position_[size_t(batch[i].slot)];
      logits[i] = next(batch[i].slot);
    }
  }
  int64_t state_bytes(int) const override { return 4; }
  void save(int slot, SlotState& out) const override {
    out.position = position_[size_t(slot)];
    out.state = {static_cast<float>(out.position)};
    out.logits = logits_[size_t(slot)];
  }
  void restore(int slot, const SlotState& in) override {
    position_[size_t(slot)] = in.position;
    logits_[size_t(slot)] = in.logits;
  }

  std::vector<std::string> calls;
  std::vector<int> prefill_slots;  // the slot of each prefill, in order
  int64_t prefilled = 0;
  int32_t poison = -1;  // a token prefill refuses (Error)
  std::chrono::microseconds step_time{50};
  int64_t nan_at = -1;  // a slot reaching this position gets a NaN logit (a diverged model)

 private:
  const float* next(int slot) {
    std::vector<float>& l = logits_[size_t(slot)];
    std::fill(l.begin(), l.end(), 0.0f);
    l[size_t(script_[size_t(position_[size_t(slot)]) % script_.size()])] = 10.0f;
    if (position_[size_t(slot)] == nan_at) l[1] = std::numeric_limits<float>::quiet_NaN();
    return l.data();
  }
  std::vector<int32_t> script_;
  int slots_, chunk_;
  int64_t limit_;
  std::vector<int64_t> position_;
  std::vector<bool> used_;
  std::vector<std::vector<float>> logits_;
};

struct Reply {
  std::vector<std::string> text;
  std::vector<FinishReason> reason;
  std::string error;
};

Reply collect(RequestHandle& h, int n = 1) {
  Reply r;
  r.text.resize(size_t(n));
  r.reason.resize(size_t(n));
  std::vector<ReplyEvent> events;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (int finished = 0; finished < n;) {
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    events.clear();
    h.wait(events, std::chrono::milliseconds(50));
    for (const ReplyEvent& e : events) {
      if (e.kind == ReplyEvent::Kind::text) {
        r.text[size_t(e.choice)] += e.text;
        continue;
      }
      ++finished;
      r.reason[size_t(e.choice)] = e.reason;
      if (!e.text.empty()) r.error = e.text;
    }
  }
  return r;
}

GenerationRequest request(const std::string& prompt, int64_t max_tokens, double temperature = 0, uint64_t seed = 1) {
  GenerationRequest g;
  g.prompt = ids(prompt);
  g.params.max_tokens = max_tokens;
  g.params.sampler.temperature = temperature;
  g.params.sampler.greedy = temperature == 0;
  g.params.sampler.top_k = 0;
  g.params.sampler.top_p = 1;
  g.params.sampler.seed = seed;
  return g;
}

// Until nothing runs or waits (up to a second): every request submitted so far has ended and been
// counted out of --parallel + --queue (a cancelled one ends at the scheduler's next tick).
[[maybe_unused]] void wait_until_idle(const Engine& engine) {
  auto busy = [&] {
    const EngineStats s = engine.stats();
    return s.active > 0 || s.queued > 0;
  };
  for (int i = 0; i < 100 && busy(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

// Until the scheduler starts another tick: the one running now has ended and published its counters.
[[maybe_unused]] void wait_next_tick(const Engine& engine) {
  const int64_t now = engine.stats().ticks;
  for (int i = 0; i < 100 && engine.stats().ticks == now; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

// A reply that never ends by itself (no EOS, no max_tokens to speak of): the test cancels it.
GenerationRequest endless_request() {
  GenerationRequest g = request("a", 1000000);
  g.params.stop_at_eos = false;
  return g;
}

// The position (prompt tokens + generated) at which the script says `text`.
std::vector<int32_t> script_after(size_t prompt_tokens, const std::string& text) {
  std::vector<int32_t> s(prompt_tokens, ids("x")[0]);
  for (int32_t t : ids(text)) s.push_back(t);
  return s;
}

}  // namespace
