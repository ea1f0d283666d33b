#include "io/hash.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "core/error.h"
#include "io/file_io.h"

namespace rfa {

// libxxhash's XXH64: the same function as the reference (and as the hand-written
// version rfa used before), so every stored checksum still matches.
uint64_t xxhash64(const void* data, size_t size, uint64_t seed) { return XXH64(data, size, seed); }

std::string hash_hex(uint64_t hash) { return fmt::format("{:016x}", hash); }

uint64_t fnv1a64(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string file_xxh64(const std::string& path) {
  const FileReader file(path);
  constexpr size_t kPiece = size_t(4) << 20;  // in L2/L3 while hashed, and little memory
  std::vector<uint8_t> piece(static_cast<size_t>(std::min<uint64_t>(file.size(), kPiece)));
  const std::unique_ptr<XXH64_state_t, XXH_errorcode (*)(XXH64_state_t*)> state(XXH64_createState(),
                                                                                  XXH64_freeState);
  if (!state || XXH64_reset(state.get(), 0) != XXH_OK) fail("cannot hash '{}': out of memory", path);
  for (uint64_t at = 0; at < file.size(); at += piece.size()) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(piece.size(), file.size() - at));
    file.read_at(at, piece.data(), n);
    XXH64_update(state.get(), piece.data(), n);
  }
  return hash_hex(XXH64_digest(state.get()));
}

}  // namespace rfa
