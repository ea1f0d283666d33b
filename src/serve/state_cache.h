#pragma once
// Decoding states keyed by the tokens they have consumed, so that a request whose
// tokens begin with a cached key prefills only the rest (the next turn of a chat: its
// new tokens). Bounded in bytes, least recently used first out; the bound is never
// exceeded (an entry larger than the whole bound is not stored). Thread safe: the
// scheduler stores and looks up, HTTP threads save entries to files and load them.
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include "serve/sequence_backend.h"

namespace rfa {

struct CacheEntry {
  std::vector<int32_t> tokens;  // the key: every token the state has consumed (state.position of them)
  SlotState state;
  int64_t bytes() const;        // what the entry holds, counted against the bound
};

struct StateCacheStats {
  int64_t bytes = 0, limit = 0, entries = 0;
  int64_t hits = 0, misses = 0, evictions = 0;
};

class StateCache {
 public:
  explicit StateCache(int64_t max_bytes);

  // The entry whose key is the longest prefix of `tokens` (the whole of them included);
  // null when none is. Counts a hit or a miss and marks the entry recently used.
  std::shared_ptr<const CacheEntry> find_prefix(std::span<const int32_t> tokens);
  // The entry whose key is exactly `tokens`; null when none. Not counted as a hit.
  std::shared_ptr<const CacheEntry> find_exact(std::span<const int32_t> tokens);
  // Stores the entry (replacing one with the same key), evicting the least recently
  // used to stay within the bound. False when the entry alone exceeds the bound.
  bool insert(std::shared_ptr<const CacheEntry> entry);

  StateCacheStats stats() const;

 private:
  using Lru = std::list<std::shared_ptr<const CacheEntry>>;  // most recently used first
  Lru::iterator locate(std::span<const int32_t> tokens, uint64_t hash);
  void erase(Lru::iterator it);

  mutable std::mutex mutex_;
  Lru lru_;
  std::unordered_multimap<uint64_t, Lru::iterator> by_hash_;  // token_prefix_hash of each key
  StateCacheStats stats_;
};

// The hash of tokens[0, n) is step(...step(step(kStart, t0), t1)..., t(n-1)): every prefix's
// hash in one pass.
inline constexpr uint64_t kTokenHashStart = 0x9e3779b97f4a7c15ULL;
uint64_t token_hash_step(uint64_t hash, int32_t token);

}  // namespace rfa
