#pragma once
// The scheduler's records of a request (engine.h), shared by its files: engine.cpp (admission,
// decoding, finishing) and engine_prefill.cpp (the prefill tick). Scheduler thread only.
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "serve/engine.h"
#include "serve/reply_text.h"

namespace rfa {

inline constexpr size_t kMaxBacklog = 1024;  // unread events a request may have before its choices pause

struct ActiveChoice {
  int slot = -1;
  ReplyText text;
  std::vector<int32_t> generated;  // sampled tokens, EOS excluded
  int64_t fed = 0;                 // of them, consumed by the state
  int64_t sampled = 0;             // tokens sampled (EOS included): usage.completion_tokens
  int32_t pending = -1;            // sampled, not yet handled
  std::optional<Sampler> sampler;  // its own scratch: the choices of a step sample side by side
  bool finished = false;
  bool final_feed = false;         // fed for the cache, then finished with `reason`
  FinishReason reason = FinishReason::stop;
};

struct Engine::Active {
  std::shared_ptr<RequestHandle> handle;
  GenerationRequest request;
  std::vector<ActiveChoice> choices;
  int64_t cursor = 0;        // prompt tokens in choice 0's state
  bool admitted = false;     // moved from waiting to running: counted in EngineStats::active
  bool prefilling = true;
  bool restored_whole = false;  // the whole prompt came from the cache
  // The state after the prompt is to be cached, once the first token has gone out (decode_tick).
  bool store_prompt = false;
  int unfinished = 0;
};

}  // namespace rfa
