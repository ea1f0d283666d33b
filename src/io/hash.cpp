#include "io/hash.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <vector>

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

std::string tokenizer_xxh64(const std::string& path) {
  std::vector<uint8_t> bytes = file_read_bytes(path);
  return hash_hex(xxhash64(bytes.data(), bytes.size()));
}

}  // namespace rfa
