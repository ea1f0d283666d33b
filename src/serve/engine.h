#pragma once
// The scheduler: one thread owns the SequenceBackend and runs every admitted request.
// Each tick it
//   1. drops cancelled requests (a client that went away) and frees their slots;
//   2. admits waiting requests in arrival order while slots are free (n slots for n
//      choices), restoring the longest cached prefix of the prompt (state_cache.h);
//   3. prefills whole chunks of prompts, those with the fewest tokens left first, until the
//      tick has taken prefill_chunk tokens (at least one chunk), all in one pass
//      (prefill_batch): a long prompt never stalls the streams already decoding for more
//      than about one chunk per token, nor a shorter prompt at all;
//   4. handles each decoding choice's sampled token (EOS, stop strings, max_tokens, the
//      position limit), then runs one step over every choice that goes on, and samples
//      each one's next token from its own seeded Sampler row.
// A choice's tokens depend only on its request: chunk boundaries are counted from its
// own first uncached token, and the sampler draw for (seed, choice index, position) is a
// pure function (decode/sampler.h), so a request gives the same text alone or among 63
// others, and the same text as `rfa generate` with that seed (sample i = choice i).
// After the prompt and at the end of each reply the state is stored in the cache, keyed
// by the tokens it consumed. HTTP threads only submit, wait and cancel.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "decode/sampler.h"
#include "serve/sequence_backend.h"
#include "serve/state_cache.h"
#include "tokenizer/tokenizer.h"

namespace rfa {

enum class FinishReason { stop, length, cancelled, error };
const char* finish_reason_name(FinishReason r);  // "stop", "length", ...

struct GenerationParams {
  SamplerConfig sampler;          // seed, temperature (0 = greedy), top_k, top_p
  int64_t max_tokens = 256;       // >= 1
  std::vector<std::string> stop;  // stop strings, not part of the reply
  int n = 1;                      // choices, each from the prompt's state (cloned)
  bool stop_at_eos = true;
};

struct GenerationRequest {
  std::vector<int32_t> prompt;  // >= 1 token
  GenerationParams params;
};

struct ReplyEvent {
  enum class Kind { text, finished } kind = Kind::text;
  int choice = 0;
  std::string text;  // text: released reply text; finished with reason error: the message
  FinishReason reason = FinishReason::stop;
};

// The engine's side of one request, shared with the thread that waits for it.
class RequestHandle {
 public:
  explicit RequestHandle(int n) : completion_tokens_(static_cast<size_t>(n)), consumed_(static_cast<size_t>(n)) {}
  // Moves the events that have arrived into `out`, waiting up to `timeout` for the first.
  void wait(std::vector<ReplyEvent>& out, std::chrono::milliseconds timeout);
  // The client went away: the engine drops the request at its next tick (no cache entry).
  void cancel() { cancelled_.store(1); }
  // End the reply now as if it had stopped (rfa chat's Ctrl-C): its state is still cached.
  void stop() { cancelled_.store(2); }
  bool cancelled() const { return cancelled_.load() == 1; }
  bool stop_requested() const { return cancelled_.load() == 2; }
  bool done() const;  // every choice finished (its events may still be unread)
  size_t backlog() const;  // events not yet read
  // Whether a text event wakes a waiting `wait` (default yes). A caller that only wants the
  // whole reply (a non-streaming request) turns it off: it is woken by the finish events and
  // its timeouts instead of once per token.
  void wake_on_text(bool on) { wake_on_text_.store(on); }
  // Text events are delivered to a waiting `wait` n at a time (a finish event, 256 unread
  // events or the wait's timeout deliver what there is), but for the first, which wakes it at
  // once (the time to first token is not batched); the engine sets n each tick.
  void wake_every(int n) { wake_every_.store(n < 1 ? 1 : n); }

  // Valid once the first event arrived (prompt) or the choice finished (the others).
  int64_t prompt_tokens() const;
  int64_t cached_tokens() const;  // prompt tokens restored from the cache
  int64_t completion_tokens(int choice) const;
  // The tokens choice's final state consumed (prompt and fed reply tokens), e.g. for
  // `rfa chat` to append the next turn to them; empty if it was not kept.
  std::vector<int32_t> consumed(int choice) const;

 private:
  friend class Engine;
  void push(ReplyEvent e);

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<ReplyEvent> events_;
  std::atomic<int> cancelled_{0};  // 1 cancel, 2 stop
  std::atomic<bool> wake_on_text_{true};
  std::atomic<int> wake_every_{1};
  int unread_text_ = 0, unread_finished_ = 0;  // events_'s kinds, under mutex_
  bool text_delivered_ = false;                 // a `wait` has taken a text event, under mutex_
  bool ready() const;  // under mutex_: whether `wait` returns before its timeout
  int finished_ = 0;
  int64_t prompt_tokens_ = 0, cached_tokens_ = 0;
  std::vector<int64_t> completion_tokens_;
  std::vector<std::vector<int32_t>> consumed_;
};

struct EngineOptions {
  int queue = 16;  // requests waiting for slots beyond those running; more get 503
  int64_t max_prompt_tokens = 8192;
  // Text events a waiting reader is woken for (RequestHandle::wake_every), set each tick:
  // N > 0 every N; 0 = auto (stream_wake_every). Each wake of a stream's thread and each write is
  // a system call, and on two cores the streams' threads woken every token took much of what the
  // batched step had saved (docs/serving.md).
  int stream_batch = 0;
};

// --stream-batch auto: the text events a stream's reader is woken for when `decoding` streams
// decode in steps `step_seconds` apart (0: not measured yet, every token): as many as keep the
// readers of all of them to about kReaderWakesPerSecond wakes a second, but no more than the
// steps of kReaderMostDelay bring (steps vary around their average: a token may wait a little
// longer). A wake costs the scheduler a futex wake and the reader a write, tens of µs of the cores
// the step runs on under a VM; a person reading does not see 50 ms.
inline constexpr double kReaderWakesPerSecond = 2000;
inline constexpr double kReaderMostDelay = 0.05;  // seconds
inline constexpr int kStreamBatchMost = 4096;      // --stream-batch's bound, and auto's
int stream_wake_every(int decoding, double step_seconds);

// Where the scheduler's time goes (wall seconds, summed over ticks; published once a tick):
// busy holds every tick that had a request to run, and within it the batched decode steps, the
// prompt passes and the cache stores; what busy holds beyond them is the scheduler's own work
// (sampling, stop strings, events) and its waits. decode_rows / decode_steps is the mean batch.
struct SchedulerTimes {
  int64_t decode_steps = 0, decode_rows = 0;
  double busy = 0, decode = 0, prefill = 0, store = 0;
};

struct EngineStats {
  int64_t active = 0, queued = 0, slots = 0;
  int64_t prompt_tokens = 0, cached_tokens = 0, prefilled_tokens = 0, completion_tokens = 0;
  int64_t finished = 0, cancelled = 0, rejected = 0, errors = 0, ticks = 0;
  SchedulerTimes times;
};

class Engine {
 public:
  // cache may be null (no caching). Starts the scheduler thread.
  Engine(SequenceBackend& backend, const Tokenizer& tokenizer, StateCache* cache, const EngineOptions& options);
  ~Engine();  // cancels what runs and joins the thread
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Throws ServeError: 400 for a prompt past the limits, 503 when the queue is full or
  // the engine is draining.
  std::shared_ptr<RequestHandle> submit(GenerationRequest request);
  // Stops admitting; waits up to `timeout` for what runs or waits to finish, then ends
  // the rest with FinishReason::error ("the server is shutting down"). Returns how many were cut.
  int drain(std::chrono::milliseconds timeout);

  EngineStats stats() const;
  int64_t position_limit() const { return position_limit_; }
  int slot_count() const { return slot_count_; }

 private:
  struct Active;
  void run();
  void admit();
  void prefill_tick();
  void prefilled(Active& a, int n, const float* logits);
  void decode_tick();
  void finish(Active& a, int choice, FinishReason reason, const std::string& message = "");
  void fail_request(Active& a, const std::string& message);
  void sample(Active& a, int choice, const float* logits);
  // Caches the choice's state under the tokens it consumed; final: its reply's last (consumed()).
  void store(const Active& a, int choice, bool final);
  bool handle_token(Active& a, int choice);  // true when the choice goes on (its token is fed)

  SequenceBackend& backend_;
  const Tokenizer& tokenizer_;
  StateCache* cache_;
  EngineOptions options_;
  int slot_count_ = 0;
  int64_t position_limit_ = 0;
  int32_t eos_ = -1;

  mutable std::mutex mutex_;  // guards inbox_, accepting_, quit_, stats_
  std::condition_variable wake_;
  std::deque<std::unique_ptr<Active>> inbox_;
  bool accepting_ = true;
  bool quit_ = false;
  EngineStats stats_;
  std::atomic<int64_t> in_flight_{0};  // submitted and not yet finished

  // Scheduler thread only.
  SchedulerTimes times_;  // copied into stats_ at the end of each tick
  std::chrono::steady_clock::time_point last_step_{};  // when the last decode tick began
  double step_interval_ = 0;  // seconds between decode ticks, a moving average (0: none measured)
  std::deque<std::unique_ptr<Active>> waiting_;
  std::vector<std::unique_ptr<Active>> active_;
  std::vector<SlotToken> batch_;
  std::vector<std::pair<Active*, int>> batch_owner_;
  std::vector<const float*> batch_logits_;
  std::vector<int32_t> batch_tokens_;      // a decode tick's sampled tokens, by batch row
  std::vector<std::string> batch_errors_;  // and a row's sampling error (empty: none)
  std::vector<SlotPrefill> pieces_;  // a prefill tick's pieces, one pass (SequenceBackend::prefill_batch)
  std::vector<Active*> piece_owner_;
  std::vector<const float*> piece_logits_;
  std::vector<std::pair<int64_t, size_t>> prefill_order_;  // (prompt tokens left, index in active_)
  std::thread thread_;
};

}  // namespace rfa
