// The engine's prefill tick (engine.h, step 3): a tick's prompt pieces, fewest tokens left
// first, in one pass over the backend; then each finished prompt's first token.
#include <algorithm>

#include "core/timer.h"
#include "serve/engine.h"
#include "serve/engine_active.h"

namespace rfa {

void Engine::prefill_tick() {
  const int chunk = backend_.prefill_chunk();
  int budget = chunk;
  pieces_.clear();  // these three reserved for every slot: no allocation
  piece_owner_.clear();
  prefill_order_.clear();
  // The prompts with the fewest tokens left go first, ties in admission order (active_'s): the
  // mean time to a first token is least so, a short prompt never waits behind a long one's
  // chunks, and prompts of one length finish one after another instead of all together at the end.
  for (size_t i = 0; i < active_.size(); ++i) {
    const Active& a = *active_[i];
    if (a.prefilling && a.unfinished > 0)
      prefill_order_.push_back({static_cast<int64_t>(a.request.prompt.size()) - a.cursor, i});
  }
  std::sort(prefill_order_.begin(), prefill_order_.end());
  for (const auto& [left, i] : prefill_order_) {
    if (budget <= 0) break;
    Active& a = *active_[i];
    // A whole chunk counted from the request's first uncached token: boundaries never depend
    // on what else runs. (A piece shorter than a chunk ends its prompt, so a request has at
    // most one piece a tick, and the pieces come to less than 2 chunks.)
    const std::vector<int32_t>& prompt = a.request.prompt;
    const int n = static_cast<int>(std::min<int64_t>(chunk, static_cast<int64_t>(prompt.size()) - a.cursor));
    pieces_.push_back({a.choices[0].slot, std::span<const int32_t>(prompt).subspan(static_cast<size_t>(a.cursor),
                                                                                    static_cast<size_t>(n))});
    piece_owner_.push_back(&a);
    budget -= n;
  }
  if (pieces_.empty()) return;
  piece_logits_.assign(pieces_.size(), nullptr);
  const Timer pass;
  try {
    backend_.prefill_batch(pieces_, piece_logits_);  // one pass (a throw changed nothing)
  } catch (const std::exception&) {
    // Some piece cannot run: each alone, so that only its own request fails.
    for (size_t i = 0; i < pieces_.size(); ++i) {
      try {
        piece_logits_[i] = backend_.prefill(pieces_[i].slot, pieces_[i].tokens);
      } catch (const std::exception& e) {
        fail_request(*piece_owner_[i], e.what());
      }
    }
  }
  times_.prefill += pass.seconds();
  for (size_t i = 0; i < pieces_.size(); ++i)
    if (piece_logits_[i]) prefilled(*piece_owner_[i], static_cast<int>(pieces_[i].tokens.size()), piece_logits_[i]);
}

// A request's piece of n prompt tokens has run, ending in `logits`: at the prompt's end its
// state is cloned into the other choices (and cached) and each choice samples its first token.
void Engine::prefilled(Active& a, int n, const float* logits) {
  a.cursor += n;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.prefilled_tokens += n;
  }
  if (a.cursor < static_cast<int64_t>(a.request.prompt.size())) return;
  try {
    a.prefilling = false;
    if (a.choices.size() > 1) {
      auto entry = std::make_shared<CacheEntry>();
      entry->tokens = a.request.prompt;
      backend_.save(a.choices[0].slot, entry->state);
      for (size_t c = 1; c < a.choices.size(); ++c) backend_.restore(a.choices[c].slot, entry->state);
      for (size_t c = 0; c < a.choices.size(); ++c) sample(a, static_cast<int>(c), entry->state.logits.data());
      if (cache_) cache_->insert(std::move(entry));
    } else {
      sample(a, 0, logits);
      a.store_prompt = cache_ != nullptr;
    }
  } catch (const std::exception& e) {
    fail_request(a, e.what());
  }
}

}  // namespace rfa
