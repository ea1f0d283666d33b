#pragma once
// XXH64 (Yann Collet's xxHash, 64-bit variant): the checksum of checkpoint
// payloads. Fast (several GB/s) and reproduces the reference test vectors.
#include <cstddef>
#include <cstdint>
#include <string>

namespace rfa {

uint64_t xxhash64(const void* data, size_t size, uint64_t seed = 0);

// 16 lowercase hex digits, zero padded.
std::string hash_hex(uint64_t hash);

// XXH64 of a whole file's bytes, as hex; throws rfa::Error if it cannot be read.
std::string file_checksum(const std::string& path);

}  // namespace rfa
