// The scheduler over a scripted backend (what it does with EOS, stop strings, limits, the
// cache, long prompts, cancellation and a full queue) and over the real decoding slots
// (a request's text does not depend on what else runs, and equals generate()).
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "decode/generate.h"
#include "core/parallel.h"
#include "model/model.h"
#include "serve/engine.h"
#include "serve/reply_text.h"
#include "serve/serve_error.h"
#include "support/corpus.h"
#include "support/temp_dir.h"
#include "support/tiny_model.h"
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

 private:
  const float* next(int slot) {
    std::vector<float>& l = logits_[size_t(slot)];
    std::fill(l.begin(), l.end(), 0.0f);
    l[size_t(script_[size_t(position_[size_t(slot)]) % script_.size()])] = 10.0f;
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

TEST_CASE("engine: EOS ends a reply unprinted; max_tokens and the position limit end it with length") {
  std::vector<int32_t> script = script_after(3, "hello");
  script.push_back(tokenizer().eos_id());
  script.push_back(ids("z")[0]);
  ScriptBackend backend(script, 2, 8, 12);
  Engine engine(backend, tokenizer(), nullptr, {});
  auto h = engine.submit(request("abc", 50));
  Reply r = collect(*h);
  CHECK(r.text[0] == "hello");
  CHECK(r.reason[0] == FinishReason::stop);
  CHECK(h->completion_tokens(0) == 6);  // the five letters and EOS
  CHECK(h->prompt_tokens() == 3);
  h = engine.submit(request("abc", 3));
  r = collect(*h);
  CHECK(r.text[0] == "hel");
  CHECK(r.reason[0] == FinishReason::length);
  GenerationRequest g = request("abc", 50);
  g.params.stop_at_eos = false;
  h = engine.submit(std::move(g));
  r = collect(*h);
  CHECK(r.reason[0] == FinishReason::length);  // the 12 positions ran out
  CHECK(h->prompt_tokens() + h->completion_tokens(0) == 12 + 1);  // the last token sampled is not fed
  CHECK_THROWS_AS(engine.submit(request("abcdefghijkl", 5)), ServeError);  // the prompt fills every position
}

TEST_CASE("engine: a stop string ends the reply before it; the cached state holds the whole reply") {
  ScriptBackend backend(script_after(4, "hello world\nUser: more"), 1, 8);
  StateCache cache(1 << 20);
  Engine engine(backend, tokenizer(), &cache, {});
  GenerationRequest g = request("abcd", 50);
  g.params.stop = {"\nUser:"};
  auto h = engine.submit(g);
  Reply r = collect(*h);
  CHECK(r.text[0] == "hello world");
  CHECK(r.reason[0] == FinishReason::stop);
  const std::vector<int32_t> consumed = h->consumed(0);
  CHECK(tokenizer().decode(consumed) == "abcdhello world\nUser:");
  CHECK(cache.find_exact(consumed));
  // The prompt's own state too (stored after its first token went out, before the step fed it).
  const auto prompt_entry = cache.find_exact(ids("abcd"));
  REQUIRE(prompt_entry);
  CHECK(prompt_entry->state.position == 4);
  // The next turn prefills only its own tokens.
  g.prompt = consumed;
  for (int32_t t : ids(" next")) g.prompt.push_back(t);
  const int64_t before = backend.prefilled;
  h = engine.submit(g);
  collect(*h);
  CHECK(h->cached_tokens() == static_cast<int64_t>(consumed.size()));
  CHECK(backend.prefilled - before == 5);
}

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

TEST_CASE("engine: cancelled requests free their slots; a full queue is a 503; n clones the prompt's state") {
  ScriptBackend backend(script_after(1, "abcdefghij"), 2, 8);
  EngineOptions o;
  o.queue = 1;
  Engine engine(backend, tokenizer(), nullptr, o);
  const GenerationRequest g = endless_request();
  auto a = engine.submit(g), b = engine.submit(g), c = engine.submit(g);
  try {
    engine.submit(g);
    FAIL("a fourth request was accepted with 2 slots and a queue of 1");
  } catch (const ServeError& e) {
    CHECK(e.status == 503);
    CHECK(std::string(e.what()).find("--queue 1") != std::string::npos);
  }
  for (auto& h : {a, b, c}) h->cancel();
  for (auto& h : {a, b, c}) CHECK(collect(*h).reason[0] == FinishReason::cancelled);
  GenerationRequest two = request("a", 3);
  two.params.n = 2;
  auto h = engine.submit(two);
  Reply r = collect(*h, 2);
  CHECK(r.text[0] == "abc");
  CHECK(r.text[1] == "abc");
  two.params.n = 3;
  CHECK_THROWS_AS(engine.submit(two), ServeError);  // more choices than slots
  CHECK(engine.stats().cancelled == 3);
  for (int i = 0; i < 100 && engine.stats().active > 0; ++i)  // removed at the end of the tick
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(engine.stats().active == 0);
}

namespace {

// generate() on its own decoder (choice 0), or its loop by hand for choice `row`: the
// reference a served request must equal.
std::string reference(Model<float>& model, const GenerationRequest& g, int chunk, int64_t positions, uint64_t row) {
  DecoderOptions o;
  o.max_segment = chunk;
  o.max_positions = positions;
  Decoder<float> dec(model, o);
  Sampler sampler(model.spec.V, g.params.sampler);
  ReplyText text;
  std::string out;
  const int64_t room = positions > 0 ? std::min<int64_t>(g.params.max_tokens, positions - int64_t(g.prompt.size()))
                                     : g.params.max_tokens;
  if (row == 0) {  // generate() itself: what `rfa generate` runs
    generate(dec, std::span<Sampler>(&sampler, 1), g.prompt, room,
             [&](int, int32_t t) { out += text.push(tokenizer().decode_token(t)); });
    return out + std::string(text.finish());
  }
  // Choice `row` of n: the sampler's stream `row`, on a decoder of its own.
  const float* logits = dec.prefill_all(g.prompt.data(), static_cast<int64_t>(g.prompt.size()));
  for (int64_t i = 0; i < room; ++i) {
    const int32_t t = sampler.sample(logits, row, dec.position());
    out += text.push(tokenizer().decode_token(t));
    logits = dec.step(&t);
  }
  return out + std::string(text.finish());
}

}  // namespace

TEST_CASE("engine over decoding slots: 32 concurrent requests each equal the same one alone and generate()") {
  for (AttentionKind kind : {AttentionKind::rfa_gate, AttentionKind::softmax}) {
    CAPTURE(kind);
    Model<float> model(test::tiny_spec(kind, {.vocab = tokenizer().vocab_size(), .context = 64, .d_model = 32,
                                              .num_features = 8, .chunk_size = 16, .init_std = 0.5}));
    model_init(model, 7);
    const int chunk = 16;
    const int64_t positions = kind == AttentionKind::softmax ? 64 : 0;
    BackendOptions bo;
    bo.slots = 8;
    bo.prefill_chunk = chunk;
    bo.max_positions = positions;
    auto backend = sequence_backend_create(model, bo);
    EngineOptions eo;
    eo.queue = 32;
    Engine engine(*backend, tokenizer(), nullptr, eo);
    std::vector<GenerationRequest> requests;
    for (int i = 0; i < 32; ++i) {
      GenerationRequest g = request(test::corpus_make(1, uint64_t(i)).substr(0, size_t(5 + i)), 12 + i % 5,
                                    i % 2 ? 0.9 : 0.0, uint64_t(100 + i));
      g.params.stop_at_eos = false;
      requests.push_back(g);
    }
    std::vector<std::shared_ptr<RequestHandle>> handles;
    for (const GenerationRequest& g : requests) handles.push_back(engine.submit(g));
    std::vector<std::string> together;
    for (auto& h : handles) together.push_back(collect(*h).text[0]);
    for (size_t i = 0; i < requests.size(); ++i) {
      CAPTURE(i);
      const std::string alone = collect(*engine.submit(requests[i])).text[0];
      CHECK(together[i] == alone);
      CHECK(alone == reference(model, requests[i], chunk, positions, 0));
    }
    // n choices: choice i is generate()'s sample (row) i.
    GenerationRequest three = requests[1];
    three.params.n = 3;
    Reply r = collect(*engine.submit(three), 3);
    for (int c = 0; c < 3; ++c) CHECK(r.text[size_t(c)] == reference(model, three, chunk, positions, uint64_t(c)));
    CHECK(r.text[0] != r.text[1]);
  }
}

TEST_CASE("engine over decoding slots: the scheduler thread keeps the --threads of the thread that built it") {
  // OpenMP's thread count is per thread: a scheduler on the default count ran a slot built
  // (and its prefill workspace sized) for one thread, and the chunked prefill's check failed.
  Model<float> model(test::tiny_spec(AttentionKind::rfa_gate, {.vocab = tokenizer().vocab_size(), .context = 64,
                                                               .d_model = 32, .num_features = 8, .chunk_size = 8}));
  model_init(model, 3);
  const int before = thread_count();
  thread_count_set(1);
  BackendOptions bo;
  bo.prefill_chunk = 64;
  auto backend = sequence_backend_create(model, bo);
  backend->state_layout();  // builds slot 0's decoder here
  {
    Engine engine(*backend, tokenizer(), nullptr, {});
    Reply r = collect(*engine.submit(request(test::corpus_make(1).substr(0, 60), 4)));
    CHECK(r.error.empty());
    CHECK(r.reason[0] == FinishReason::length);
  }
  thread_count_set(before);
}

TEST_CASE("engine: a reader slower than the decoding pauses its reply instead of piling up events") {
  ScriptBackend backend(script_after(1, "abcdefghij"), 1, 8);
  Engine engine(backend, tokenizer(), nullptr, {});
  auto h = engine.submit(endless_request());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // nobody reads
  CHECK(h->backlog() <= 1025);
  CHECK(engine.stats().completion_tokens <= 1026);
  h->cancel();
  collect(*h);
}

TEST_CASE("engine: stream_batch N wakes a waiting reader every N tokens (and at the end; the first at once); auto wakes one stream every token") {
  // Steps of 6 ms: a reader woken for a token is back waiting long before the next one.
  for (int batch : {0, 4}) {
    CAPTURE(batch);
    ScriptBackend backend(script_after(2, "abcdefghijklmnopqrstuvwxyz"), 2, 8);
    backend.step_time = std::chrono::microseconds(6000);
    EngineOptions o;
    o.stream_batch = batch;
    Engine engine(backend, tokenizer(), nullptr, o);
    auto h = engine.submit(request("ab", 22));
    std::vector<int> texts_per_wake;  // wakes that did not finish the reply
    std::string text;
    std::vector<ReplyEvent> events;
    for (bool finished = false; !finished;) {
      events.clear();
      h->wait(events, std::chrono::seconds(30));  // returns early only when the handle is ready
      REQUIRE(!events.empty());
      int texts = 0;
      for (const ReplyEvent& e : events) {
        if (e.kind == ReplyEvent::Kind::text) {
          ++texts;
          text += e.text;
        } else {
          finished = true;
        }
      }
      if (!finished) texts_per_wake.push_back(texts);
    }
    CHECK(text == "abcdefghijklmnopqrstuv");
    REQUIRE(!texts_per_wake.empty());
    if (batch == 4) {  // but for the first token, which is not held back (the time to first token)
      CHECK(texts_per_wake[0] < 4);
      for (size_t i = 1; i < texts_per_wake.size(); ++i) CHECK(texts_per_wake[i] >= 4);
    } else {  // one stream decoding: auto is every token
      CHECK(*std::min_element(texts_per_wake.begin(), texts_per_wake.end()) < 4);
    }
  }
}
