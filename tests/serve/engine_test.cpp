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
#include "kernels/bf16.h"
#include "model/model.h"
#include "serve/engine.h"
#include "serve/engine_script.h"
#include "serve/reply_text.h"
#include "serve/serve_error.h"
#include "support/corpus.h"
#include "support/skip.h"
#include "support/temp_dir.h"
#include "support/tiny_model.h"
#include "support/trained_tokenizer.h"

using namespace rfa;


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

TEST_CASE("engine: the scheduler's times count its steps and rows, and hold its passes and stores") {
  ScriptBackend backend(script_after(4, "hello world"), 2, 8);
  backend.step_time = std::chrono::microseconds(300);
  StateCache cache(1 << 20);
  Engine engine(backend, tokenizer(), &cache, {});
  auto a = engine.submit(request("abcd", 6)), b = engine.submit(request("abce", 9));
  collect(*a);
  collect(*b);
  wait_until_idle(engine);
  wait_next_tick(engine);  // the counters are published at the end of the tick
  const SchedulerTimes t = engine.stats().times;
  int64_t steps = 0, rows = 0;
  for (const std::string& call : backend.calls)
    if (call.rfind("step ", 0) == 0) {
      ++steps;
      rows += std::stoi(call.substr(5));
    }
  CHECK(steps >= 8);  // the longer reply's tokens after its first
  CHECK(t.decode_steps == steps);
  CHECK(t.decode_rows == rows);
  CHECK(rows > steps);  // the two replies shared steps
  CHECK(t.decode >= 300e-6 * double(steps));
  CHECK(t.prefill > 0);
  CHECK(t.store > 0);  // two prompts and two replies
  CHECK(t.busy >= t.decode + t.prefill + t.store);
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
  wait_until_idle(engine);
  CHECK(engine.stats().active == 0);
}

TEST_CASE("engine: a request is counted out before its last event, so a client may submit again at once") {
  // Two slots, no queue, one held by an endless reply whose steps take 2 ms: each short reply
  // ends before a step, its end is read, and the next request is submitted the same instant.
  // Counted out only at the end of the scheduler's tick (after that step), it met a 503.
  ScriptBackend backend(script_after(1, "abcdefghij"), 2, 8);
  backend.step_time = std::chrono::milliseconds(2);
  EngineOptions o;
  o.queue = 0;
  Engine engine(backend, tokenizer(), nullptr, o);
  auto endless = engine.submit(endless_request());
  for (int round = 0; round < 20; ++round) {
    std::shared_ptr<RequestHandle> h;
    try {
      h = engine.submit(request("a", 2));
    } catch (const ServeError& e) {
      FAIL("round " << round << ": " << std::string(e.what()));
    }
    CHECK(collect(*h).text[0] == "ab");
  }
  CHECK(engine.stats().rejected == 0);
  endless->cancel();
  CHECK(collect(*endless).reason[0] == FinishReason::cancelled);
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

namespace {

// `count` requests of growing prompts from corpus text `corpus`, greedy and sampled in turn, seeds
// from seed0, never stopped by EOS.
std::vector<GenerationRequest> mixed_requests(int count, uint64_t corpus, int letters, int tokens, int spread,
                                              uint64_t seed0) {
  std::vector<GenerationRequest> requests;
  for (int i = 0; i < count; ++i) {
    GenerationRequest g = request(test::corpus_make(corpus, uint64_t(i)).substr(0, size_t(letters + i)),
                                  tokens + i % spread, i % 2 ? 0.9 : 0.0, seed0 + uint64_t(i));
    g.params.stop_at_eos = false;
    requests.push_back(g);
  }
  return requests;
}

// Submits every request at once, then each alone, and checks that each reply is the same both
// times; returns the replies served alone.
std::vector<std::string> check_together_equals_alone(Engine& engine, const std::vector<GenerationRequest>& requests) {
  std::vector<std::shared_ptr<RequestHandle>> handles;
  for (const GenerationRequest& g : requests) handles.push_back(engine.submit(g));
  std::vector<std::string> together, alone;
  for (auto& h : handles) together.push_back(collect(*h).text[0]);
  for (size_t i = 0; i < requests.size(); ++i) {
    CAPTURE(i);
    alone.push_back(collect(*engine.submit(requests[i])).text[0]);
    CHECK(together[i] == alone[i]);
  }
  return alone;
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
    const std::vector<GenerationRequest> requests = mixed_requests(32, 1, 5, 12, 5, 100);
    const std::vector<std::string> alone = check_together_equals_alone(engine, requests);
    for (size_t i = 0; i < requests.size(); ++i) {
      CAPTURE(i);
      CHECK(alone[i] == reference(model, requests[i], chunk, positions, 0));
    }
    // n choices: choice i is generate()'s sample (row) i.
    GenerationRequest three = requests[1];
    three.params.n = 3;
    Reply r = collect(*engine.submit(three), 3);
    for (int c = 0; c < 3; ++c) CHECK(r.text[size_t(c)] == reference(model, three, chunk, positions, uint64_t(c)));
    CHECK(r.text[0] != r.text[1]);
  }
}

TEST_CASE("engine over bf16 decoding slots: 16 concurrent requests each equal the same one alone") {
  if (test::skip_if(!bf16_native(), "no bf16 products here (no AVX512-BF16 on this CPU, or a build level below it)")) return;
  // A bf16 step runs the fewest rows that hold its busy slots (1, 2, 4 or 8 here, over products packed
  // for 8; decode/decoder.cpp): alone a request steps one row, beside others up to eight, and its reply
  // is the same. (The bits themselves: tests/decode/decoder_bf16_test.cpp.)
  Model<float> model(test::tiny_spec(AttentionKind::rfa_gate, {.vocab = tokenizer().vocab_size(), .context = 64,
                                                               .d_model = 64, .num_features = 8, .chunk_size = 16,
                                                               .init_std = 0.5}),
                     Precision::bf16);
  model_init(model, 8);
  model.bf16_refresh();
  BackendOptions bo;
  bo.slots = 8;
  bo.prefill_chunk = 16;
  bo.precision = Precision::bf16;
  auto backend = sequence_backend_create(model, bo);
  EngineOptions eo;
  eo.queue = 16;
  Engine engine(*backend, tokenizer(), nullptr, eo);
  check_together_equals_alone(engine, mixed_requests(16, 2, 4, 10, 7, 200));
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

TEST_CASE("engine: stream_wake_every keeps the readers' wakes near the budget, and no token past the delay bound") {
  CHECK(stream_wake_every(0, 0.001) == 1);
  CHECK(stream_wake_every(8, 0) == 1);  // no step measured yet: every token
  CHECK(stream_wake_every(1, 0.006) == 1);
  CHECK(stream_wake_every(8, 0.010) == 1);
  CHECK(stream_wake_every(64, 0.00125) == 26);  // ceil(64 / 2.5): 1,969 wakes a second
  CHECK(stream_wake_every(1, 0.00008) == 7);
  CHECK(stream_wake_every(512, 0.0008) == 62);  // 320 wanted; 62 steps of 0.8 ms is the most a token waits
  CHECK(stream_wake_every(64, 0.2) == 1);       // steps slower than the bound: every token
  for (int decoding : {1, 3, 8, 31, 64, 200, 1024})
    for (double step : {1e-5, 7e-5, 3e-4, 1e-3, 4e-3, 0.02, 0.06}) {
      CAPTURE(decoding);
      CAPTURE(step);
      const int k = stream_wake_every(decoding, step);
      CHECK(k >= 1);
      if (k > 1) CHECK(k * step <= kReaderMostDelay + 1e-12);
      // The budget holds unless the delay bound (or one token a wake) stops it.
      if (k * step * 2 <= kReaderMostDelay && k < kStreamBatchMost)
        CHECK(decoding / (k * step) <= kReaderWakesPerSecond * 1.0000001);
    }
}

TEST_CASE("engine: auto wakes the readers of 32 streams for several tokens each, every token reaching them") {
  // Steps of 2 ms, 32 streams: auto gives about 8 tokens a wake (32 readers, 500 steps a second, 2,000
  // wakes), fewer while the others' prompts are still being read or once they end (fewer streams
  // decode), and the first token at once: a reader is woken at most 2/5 as many times as it gets
  // tokens, which holds with steps up to about 6 ms apart (a loaded machine's). The rule before it
  // (one per 16 streams: 2 a wake, about 21 wakes) or every token fail this.
  constexpr int kStreams = 32, kTokens = 41;
  ScriptBackend backend(script_after(2, "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz"), kStreams, 8);
  backend.step_time = std::chrono::milliseconds(2);
  EngineOptions o;
  o.queue = kStreams;
  Engine engine(backend, tokenizer(), nullptr, o);
  std::vector<std::shared_ptr<RequestHandle>> handles;
  for (int i = 0; i < kStreams; ++i) handles.push_back(engine.submit(request("ab", kTokens)));
  std::vector<std::vector<int>> texts_per_wake(kStreams);
  std::vector<std::string> texts(kStreams);
  std::vector<std::thread> readers;
  for (int i = 0; i < kStreams; ++i)
    readers.emplace_back([&, i] {
      std::vector<ReplyEvent> events;
      for (bool finished = false; !finished;) {
        events.clear();
        handles[size_t(i)]->wait(events, std::chrono::seconds(30));
        int n = 0;
        for (const ReplyEvent& e : events) {
          if (e.kind == ReplyEvent::Kind::text) {
            ++n;
            texts[size_t(i)] += e.text;
          } else {
            finished = true;
          }
        }
        if (!finished) texts_per_wake[size_t(i)].push_back(n);
      }
    });
  for (std::thread& t : readers) t.join();
  for (int i = 0; i < kStreams; ++i) {
    CAPTURE(i);
    CHECK(texts[size_t(i)] == std::string("abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz").substr(0, kTokens));
    const std::vector<int>& w = texts_per_wake[size_t(i)];
    CHECK(w.size() <= size_t(kTokens * 2 / 5));
  }
}

TEST_CASE("engine: a row whose logits turn non-finite in a step fails its request alone; the others go on") {
  // Sampled rows of a step run side by side (decode_tick): the sampler's error is its row's, kept
  // and reported after the parallel pass, never thrown inside it.
  // Twelve rows a step (above the pass's grain at V 300: they run on the pool's threads).
  ScriptBackend backend(ids("abcdefgh"), 12, 16);
  backend.nan_at = 6;  // reached by a step of the 2-token prompt's request; the others start past it
  EngineOptions eo;
  eo.queue = 16;
  Engine engine(backend, tokenizer(), nullptr, eo);
  GenerationRequest bad = request("ab", 20, 0.8, 3);
  bad.params.stop_at_eos = false;
  auto hb = engine.submit(bad);
  std::vector<std::shared_ptr<RequestHandle>> good;
  for (int i = 0; i < 11; ++i) {
    GenerationRequest g = request("abcdefgh" + std::string(size_t(i % 3), 'a'), 20, i % 2 ? 0.8 : 0.0, uint64_t(i));
    g.params.stop_at_eos = false;
    good.push_back(engine.submit(g));
  }
  const Reply rb = collect(*hb);
  CHECK(rb.reason[0] == FinishReason::error);
  CHECK(rb.error.find("non-finite") != std::string::npos);
  for (auto& h : good) {
    const Reply r = collect(*h);
    CHECK(r.reason[0] == FinishReason::length);
    CHECK(r.error.empty());
    CHECK(r.text[0].size() == 20);
  }
}
