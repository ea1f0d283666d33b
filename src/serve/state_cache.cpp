#include "serve/state_cache.h"

#include <algorithm>

namespace rfa {

uint64_t token_hash_step(uint64_t h, int32_t token) {
  // splitmix64 of the running hash xor the token: prefixes of different lengths or
  // contents land far apart.
  uint64_t z = h ^ (static_cast<uint64_t>(static_cast<uint32_t>(token)) + 0x632be59bd9b4e019ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

namespace {

uint64_t token_hash(std::span<const int32_t> tokens) {
  uint64_t h = kTokenHashStart;
  for (int32_t t : tokens) h = token_hash_step(h, t);
  return h;
}

}  // namespace

int64_t CacheEntry::bytes() const {
  constexpr int64_t kOverhead = 256;  // the entry, its vectors, list and map nodes
  return kOverhead + int64_t(sizeof(int32_t)) * static_cast<int64_t>(tokens.size()) +
         int64_t(sizeof(float)) * static_cast<int64_t>(state.state.size() + state.logits.size());
}

StateCache::StateCache(int64_t max_bytes) { stats_.limit = std::max<int64_t>(0, max_bytes); }

StateCache::Lru::iterator StateCache::locate(std::span<const int32_t> tokens, uint64_t hash) {
  auto [first, last] = by_hash_.equal_range(hash);
  for (auto it = first; it != last; ++it) {
    const std::vector<int32_t>& key = (*it->second)->tokens;
    if (key.size() == tokens.size() && std::equal(key.begin(), key.end(), tokens.begin())) return it->second;
  }
  return lru_.end();
}

std::shared_ptr<const CacheEntry> StateCache::find_prefix(std::span<const int32_t> tokens) {
  std::vector<uint64_t> hashes(tokens.size() + 1);
  hashes[0] = kTokenHashStart;
  for (size_t i = 0; i < tokens.size(); ++i) hashes[i + 1] = token_hash_step(hashes[i], tokens[i]);
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t n = tokens.size(); n >= 1; --n) {
    if (by_hash_.count(hashes[n]) == 0) continue;
    auto it = locate(tokens.first(n), hashes[n]);
    if (it == lru_.end()) continue;
    lru_.splice(lru_.begin(), lru_, it);
    ++stats_.hits;
    return *it;
  }
  ++stats_.misses;
  return nullptr;
}

std::shared_ptr<const CacheEntry> StateCache::find_exact(std::span<const int32_t> tokens) {
  const uint64_t h = token_hash(tokens);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = locate(tokens, h);
  return it == lru_.end() ? nullptr : *it;
}

void StateCache::erase(Lru::iterator it) {
  const uint64_t h = token_hash((*it)->tokens);
  auto [first, last] = by_hash_.equal_range(h);
  for (auto m = first; m != last; ++m)
    if (m->second == it) {
      by_hash_.erase(m);
      break;
    }
  stats_.bytes -= (*it)->bytes();
  --stats_.entries;
  lru_.erase(it);
}

bool StateCache::insert(std::shared_ptr<const CacheEntry> entry) {
  const int64_t size = entry->bytes();
  const uint64_t h = token_hash(entry->tokens);
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = locate(entry->tokens, h); it != lru_.end()) erase(it);
  if (size > stats_.limit) return false;
  while (stats_.bytes + size > stats_.limit) {
    erase(std::prev(lru_.end()));
    ++stats_.evictions;
  }
  lru_.push_front(std::move(entry));
  by_hash_.emplace(h, lru_.begin());
  stats_.bytes += size;
  ++stats_.entries;
  return true;
}

StateCacheStats StateCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace rfa
