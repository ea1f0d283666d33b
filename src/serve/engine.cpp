#include "serve/engine.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "core/error.h"
#include "core/parallel.h"
#include "core/timer.h"
#include "serve/engine_active.h"
#include "serve/reply_text.h"
#include "serve/serve_error.h"

namespace rfa {

Engine::Engine(SequenceBackend& backend, const Tokenizer& tokenizer, StateCache* cache, const EngineOptions& options)
    : backend_(backend), tokenizer_(tokenizer), cache_(cache), options_(options) {
  slot_count_ = backend_.slot_count();
  position_limit_ = backend_.position_limit();
  eos_ = tokenizer_.eos_id();
  stats_.slots = slot_count_;
  batch_.reserve(static_cast<size_t>(slot_count_));
  batch_owner_.reserve(static_cast<size_t>(slot_count_));
  batch_logits_.reserve(static_cast<size_t>(slot_count_));
  pieces_.reserve(static_cast<size_t>(slot_count_));
  piece_owner_.reserve(static_cast<size_t>(slot_count_));
  piece_logits_.reserve(static_cast<size_t>(slot_count_));
  prefill_order_.reserve(static_cast<size_t>(slot_count_));
  // Every parallel region from now on is the scheduler's: the creating thread's idle workers
  // would make libgomp sleep at each of its barriers instead of spinning (core/parallel.h).
  parallel_pool_release();
  // OpenMP's thread count (--threads) is a per-thread setting: a new thread starts from the default,
  // and the slots' workspaces were sized for this one's.
  thread_ = std::thread([this, threads = thread_count()] {
    thread_count_set(threads);
    parallel_fork_calibrate();  // this thread's own pool does the scheduler's parallel work
    run();
  });
}

Engine::~Engine() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    quit_ = true;
    accepting_ = false;
  }
  wake_.notify_all();
  thread_.join();
}

std::shared_ptr<RequestHandle> Engine::submit(GenerationRequest r) {
  const int64_t n_prompt = static_cast<int64_t>(r.prompt.size());
  if (n_prompt == 0) request_fail("prompt", "the prompt is empty; give at least one token of text");
  if (n_prompt > options_.max_prompt_tokens)
    request_fail("prompt", "the prompt has {} tokens; this server takes at most {} (--max-prompt-tokens)", n_prompt,
                 options_.max_prompt_tokens);
  if (position_limit_ > 0 && n_prompt >= position_limit_)
    request_fail("prompt",
                 "the prompt has {} tokens, and this model decodes at most {} positions (a softmax model's KV cache "
                 "is bounded by its training context; --ctx-size for RoPE); shorten the prompt",
                 n_prompt, position_limit_);
  for (size_t i = 0; i < r.prompt.size(); ++i)
    if (r.prompt[i] < 0 || r.prompt[i] >= backend_.vocab())
      request_fail("prompt", "token {} at index {} is outside the vocabulary [0, {})", r.prompt[i], i,
                   backend_.vocab());
  if (r.params.n < 1 || r.params.n > slot_count_)
    request_fail("n", "n is {}; this server runs at most {} sequences at once (--parallel)", r.params.n, slot_count_);
  if (r.params.max_tokens < 1) request_fail("max_tokens", "max_tokens {} must be at least 1", r.params.max_tokens);
  try {
    sampler_config_validate(r.params.sampler);
  } catch (const std::exception& e) {
    request_fail("temperature", "{}", e.what());
  }

  auto a = std::make_unique<Active>();
  a->handle = std::make_shared<RequestHandle>(r.params.n);
  a->choices.resize(static_cast<size_t>(r.params.n));
  for (ActiveChoice& c : a->choices) {
    c.text = ReplyText(r.params.stop);
    c.sampler.emplace(backend_.vocab(), r.params.sampler);
  }
  a->unfinished = r.params.n;
  a->request = std::move(r);
  std::shared_ptr<RequestHandle> handle = a->handle;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!accepting_)
      throw ServeError(503, "server_error", "", "the server is shutting down and takes no new requests");
    if (in_flight_.load() >= slot_count_ + options_.queue) {
      ++stats_.rejected;
      throw ServeError(503, "server_error", "",
                       fmt::format("the server is busy: {} requests run or wait, the most it holds (--parallel {} + "
                                   "--queue {}); retry later",
                                   in_flight_.load(), slot_count_, options_.queue));
    }
    ++in_flight_;
    inbox_.push_back(std::move(a));
  }
  wake_.notify_all();
  return handle;
}

int Engine::drain(std::chrono::milliseconds timeout) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    accepting_ = false;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (in_flight_.load() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const int cut = static_cast<int>(in_flight_.load());
  if (cut == 0) return 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    quit_ = true;  // the scheduler ends what is left, then returns
  }
  wake_.notify_all();
  while (in_flight_.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return cut;
}

EngineStats Engine::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  EngineStats s = stats_;
  s.queued = in_flight_.load() - s.active;
  return s;
}

int stream_wake_every(int decoding, double step_seconds) {
  if (decoding < 1 || !(step_seconds > 0)) return 1;
  const double wanted = std::ceil(double(decoding) / (kReaderWakesPerSecond * step_seconds));
  const double most = std::floor(kReaderMostDelay / step_seconds);
  return static_cast<int>(std::max(1.0, std::min({wanted, most, double(kStreamBatchMost)})));
}

// ---- The scheduler thread -----------------------------------------------------------

void Engine::run() {
  for (;;) {
    bool quit = false;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait_for(lock, std::chrono::milliseconds(100),
                     [this] { return quit_ || !inbox_.empty() || !active_.empty() || !waiting_.empty(); });
      while (!inbox_.empty()) {
        waiting_.push_back(std::move(inbox_.front()));
        inbox_.pop_front();
      }
      quit = quit_;
      ++stats_.ticks;
    }
    if (quit) {
      for (auto& a : active_) fail_request(*a, "the server is shutting down; the reply was cut here");
      for (auto& a : waiting_) fail_request(*a, "the server is shutting down; the request did not start");
      active_.clear();
      waiting_.clear();
      return;
    }
    const bool busy = !active_.empty() || !waiting_.empty();
    const Timer tick;
    for (auto& a : active_) {
      const bool stop = a->handle->stop_requested() && !a->prefilling;
      if (!stop && !a->handle->cancelled() && !a->handle->stop_requested()) continue;
      for (size_t c = 0; c < a->choices.size(); ++c)
        if (!a->choices[c].finished) finish(*a, static_cast<int>(c), stop ? FinishReason::stop : FinishReason::cancelled);
    }
    try {
      admit();
      prefill_tick();
      decode_tick();
    } catch (const std::exception& e) {
      // Not a request's own failure (those end only their request, above): end them all, and go on.
      for (auto& a : active_) fail_request(*a, fmt::format("internal error: {}", e.what()));
    }
    if (busy) times_.busy += tick.seconds();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stats_.times = times_;
    }
    std::erase_if(active_, [](const std::unique_ptr<Active>& a) { return a->unfinished == 0; });
  }
}

void Engine::admit() {
  int free = 0;
  for (const auto& a : active_)
    for (const ActiveChoice& c : a->choices) free += c.slot >= 0 ? 1 : 0;
  free = slot_count_ - free;
  while (!waiting_.empty()) {
    Active& a = *waiting_.front();
    if (a.handle->cancelled() || a.handle->stop_requested()) {
      for (size_t c = 0; c < a.choices.size(); ++c) finish(a, static_cast<int>(c), FinishReason::cancelled);
      waiting_.pop_front();
      continue;
    }
    const int n = a.request.params.n;
    if (free < n) break;
    free -= n;
    for (ActiveChoice& c : a.choices) {
      c.slot = backend_.acquire();
      RFA_ASSERT(c.slot >= 0, "no free slot though {} were counted free", free + n);
    }
    const std::vector<int32_t>& prompt = a.request.prompt;
    std::shared_ptr<const CacheEntry> hit = cache_ ? cache_->find_prefix(prompt) : nullptr;
    if (hit) {
      try {
        backend_.restore(a.choices[0].slot, hit->state);
        a.cursor = static_cast<int64_t>(hit->tokens.size());
      } catch (const Error&) {
        hit = nullptr;  // a state loaded from a file that this backend cannot hold: prefill instead
      }
    }
    {
      std::lock_guard<std::mutex> lock(a.handle->mutex_);
      a.handle->prompt_tokens_ = static_cast<int64_t>(prompt.size());
      a.handle->cached_tokens_ = a.cursor;
    }
    a.admitted = true;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.active;
      stats_.prompt_tokens += static_cast<int64_t>(prompt.size());
      stats_.cached_tokens += a.cursor;
    }
    std::unique_ptr<Active> owned = std::move(waiting_.front());
    waiting_.pop_front();
    if (hit && a.cursor == static_cast<int64_t>(prompt.size())) {
      // The whole prompt was cached with its logits: every choice starts from that state.
      a.prefilling = false;
      a.restored_whole = true;
      for (size_t c = 1; c < a.choices.size(); ++c) backend_.restore(a.choices[c].slot, hit->state);
      for (size_t c = 0; c < a.choices.size(); ++c) sample(a, static_cast<int>(c), hit->state.logits.data());
    }
    active_.push_back(std::move(owned));
  }
}

void Engine::sample(Active& a, int choice, const float* logits) {
  ActiveChoice& c = a.choices[static_cast<size_t>(choice)];
  c.pending = c.sampler->sample(logits, static_cast<uint64_t>(choice), backend_.position(c.slot));
}

// The pending token: EOS ends the reply unfed; any other is text, then the reply ends
// (stop string, max_tokens, no position left) or goes on. A reply that ends on text is fed
// its last token first when there is a cache, so the stored state holds the whole reply.
bool Engine::handle_token(Active& a, int choice) {
  ActiveChoice& c = a.choices[static_cast<size_t>(choice)];
  const int32_t token = c.pending;
  c.pending = -1;
  ++c.sampled;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.completion_tokens;
  }
  if (token == eos_ && a.request.params.stop_at_eos) {
    finish(a, choice, FinishReason::stop);
    return false;
  }
  c.generated.push_back(token);
  const std::string_view released = c.text.push(tokenizer_.decode_token(token));
  if (!released.empty()) a.handle->push({ReplyEvent::Kind::text, choice, std::string(released), FinishReason::stop});
  const bool room = position_limit_ == 0 || backend_.position(c.slot) < position_limit_;
  std::optional<FinishReason> end;
  if (c.text.stopped())
    end = FinishReason::stop;
  else if (c.sampled >= a.request.params.max_tokens || !room)
    end = FinishReason::length;
  if (!end) return true;
  if (cache_ && room) {
    c.final_feed = true;
    c.reason = *end;
    return true;
  }
  finish(a, choice, *end);
  return false;
}

void Engine::decode_tick() {
  batch_.clear();
  batch_owner_.clear();
  int decoding = 0;
  for (const auto& ap : active_)
    if (!ap->prefilling) decoding += ap->unfinished;
  // Ticks back to back: their interval (the step, sampling, events, any prompt pass) sets the auto
  // wake count. A gap of a second or more is an idle server, not a step.
  const auto now = std::chrono::steady_clock::now();
  const double since = std::chrono::duration<double>(now - last_step_).count();
  last_step_ = now;
  if (since < 1.0) step_interval_ = step_interval_ > 0 ? 0.9 * step_interval_ + 0.1 * since : since;
  const int wake_every =
      options_.stream_batch > 0 ? options_.stream_batch : stream_wake_every(decoding, step_interval_);
  for (auto& ap : active_) {
    ap->handle->wake_every(wake_every);
    Active& a = *ap;
    if (a.prefilling) continue;
    for (size_t c = 0; c < a.choices.size(); ++c) {
      ActiveChoice& ch = a.choices[c];
      if (ch.finished || ch.pending < 0) continue;
      // A client that reads slower than we decode: its choice waits (its text stays the same)
      // rather than its unread events growing without bound.
      if (a.handle->backlog() > kMaxBacklog) continue;
      if (!handle_token(a, static_cast<int>(c))) continue;
      batch_.push_back({ch.slot, ch.generated.back()});
      batch_owner_.push_back({&a, static_cast<int>(c)});
    }
  }
  // The prompts' states, cached only now that their first tokens have gone out: a store copies
  // a state into fresh memory, which costs more than the prompt's prefill when the pages are new
  // (about 2 ms for 0.6 MB on a virtual machine), and it must precede the step that feeds the token.
  for (auto& ap : active_) {
    if (!ap->store_prompt) continue;
    ap->store_prompt = false;
    const ActiveChoice& c = ap->choices[0];
    if (!c.finished && c.slot >= 0 && c.fed == 0) store(*ap, 0, false);
  }
  if (batch_.empty()) return;
  batch_logits_.assign(batch_.size(), nullptr);
  const Timer step;
  try {
    backend_.step(batch_, batch_logits_);
  } catch (const std::exception& e) {
    for (auto [a, c] : batch_owner_)
      if (!a->choices[static_cast<size_t>(c)].finished) fail_request(*a, e.what());
    return;
  }
  times_.decode += step.seconds();
  ++times_.decode_steps;
  times_.decode_rows += static_cast<int64_t>(batch_.size());
  // The rows' next tokens, side by side on the pool: each choice has its own sampler, and a draw
  // is a pure function of (seed, choice, position), so the tokens are those of one row at a time.
  // An error (non-finite logits) is kept for its row, not thrown inside the parallel region.
  const int64_t rows = static_cast<int64_t>(batch_owner_.size());
  batch_tokens_.assign(batch_owner_.size(), -1);
  batch_errors_.resize(batch_owner_.size());
  int64_t work = 0;
  for (auto [a, c] : batch_owner_) work += a->choices[static_cast<size_t>(c)].sampler->row_work();
  parallel_for(rows, sampler_rows_grain(rows, work), [&](int64_t i) {
    auto [a, c] = batch_owner_[static_cast<size_t>(i)];
    ActiveChoice& ch = a->choices[static_cast<size_t>(c)];
    if (ch.final_feed) return;
    try {
      batch_tokens_[static_cast<size_t>(i)] = ch.sampler->sample(batch_logits_[static_cast<size_t>(i)],
                                                                 static_cast<uint64_t>(c), backend_.position(ch.slot));
    } catch (const std::exception& e) {
      batch_errors_[static_cast<size_t>(i)] = e.what();
    } catch (...) {
      batch_errors_[static_cast<size_t>(i)] = "sampling failed";
    }
  });
  for (size_t i = 0; i < batch_owner_.size(); ++i) {
    auto [a, c] = batch_owner_[i];
    ActiveChoice& ch = a->choices[static_cast<size_t>(c)];
    ++ch.fed;
    if (ch.final_feed) {
      finish(*a, c, ch.reason);
      continue;
    }
    if (!batch_errors_[i].empty()) {
      fail_request(*a, batch_errors_[i]);
      batch_errors_[i].clear();
      continue;
    }
    ch.pending = batch_tokens_[i];
  }
}

void Engine::store(const Active& a, int choice, bool final) {
  const Timer timer;
  const ActiveChoice& c = a.choices[static_cast<size_t>(choice)];
  auto entry = std::make_shared<CacheEntry>();
  entry->tokens = a.request.prompt;
  entry->tokens.insert(entry->tokens.end(), c.generated.begin(), c.generated.begin() + c.fed);
  backend_.save(c.slot, entry->state);
  RFA_ASSERT(entry->state.position == static_cast<int64_t>(entry->tokens.size()), "state at {} for {} tokens",
             entry->state.position, entry->tokens.size());
  if (final) {  // the reply's last state: what its next turn continues (RequestHandle::consumed)
    std::lock_guard<std::mutex> lock(a.handle->mutex_);
    a.handle->consumed_[static_cast<size_t>(choice)] = entry->tokens;
  }
  cache_->insert(std::move(entry));
  times_.store += timer.seconds();
}

void Engine::finish(Active& a, int choice, FinishReason reason, const std::string& message) {
  ActiveChoice& c = a.choices[static_cast<size_t>(choice)];
  RFA_ASSERT(!c.finished, "choice {} finished twice", choice);
  const bool clean = reason == FinishReason::stop || reason == FinishReason::length;
  if (clean) {
    const std::string_view rest = c.text.finish();
    if (!rest.empty()) a.handle->push({ReplyEvent::Kind::text, choice, std::string(rest), FinishReason::stop});
    // Not a state past the prompt that is still being prefilled, nor one that nothing was fed to.
    if (cache_ && c.slot >= 0 && !a.prefilling) store(a, choice, true);
  }
  {
    std::lock_guard<std::mutex> lock(a.handle->mutex_);
    a.handle->completion_tokens_[static_cast<size_t>(choice)] = c.sampled;
  }
  if (c.slot >= 0) backend_.release(c.slot);
  c.slot = -1;
  c.finished = true;
  --a.unfinished;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.finished;
    if (reason == FinishReason::cancelled) ++stats_.cancelled;
    if (reason == FinishReason::error) ++stats_.errors;
    // Counted out before its last event goes out: a client may submit again the instant it reads
    // the end of its reply, and must find the room this request held (--parallel + --queue).
    if (a.unfinished == 0) {
      if (a.admitted) --stats_.active;
      --in_flight_;
    }
  }
  a.handle->push({ReplyEvent::Kind::finished, choice, message, reason});
}

void Engine::fail_request(Active& a, const std::string& message) {
  for (size_t c = 0; c < a.choices.size(); ++c)
    if (!a.choices[c].finished) finish(a, static_cast<int>(c), FinishReason::error, message);
}

}  // namespace rfa
