#pragma once
// Content hashes (not cryptographic).
//   xxhash64: XXH64 (Yann Collet's xxHash, 64-bit variant, from libxxhash), the checksum of
//     checkpoint payloads; fast (several GB/s), reproduces the reference vectors.
//   fnv1a64: 64-bit FNV-1a.
// And the tokenizer model's fingerprints, in one place. There are two, and both
// are stored in formats already written, so neither can change without
// breaking existing files:
//   tokenizer_fnv1a64: FNV-1a of the model bytes, in token files (header byte 56,
//     TokenFileHeader::tokenizer_fnv1a64; Tokenizer::fnv1a64());
//   tokenizer_xxh64:   XXH64 of the model file as hex, in checkpoints (state.json
//     "tokenizer_checksum", TrainState::tokenizer_xxh64).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace rfa {

uint64_t xxhash64(const void* data, size_t size, uint64_t seed = 0);

// 16 lowercase hex digits, zero padded.
std::string hash_hex(uint64_t hash);

uint64_t fnv1a64(std::string_view bytes);

// FNV-1a 64 of a tokenizer model's bytes (token files).
inline uint64_t tokenizer_fnv1a64(std::string_view model_bytes) { return fnv1a64(model_bytes); }
// XXH64 of a file's bytes, as hex, read in pieces of a few MiB (a fine-tune records its parent's
// model.safetensors by it: 366 MB at 12 x 768, once read whole into two buffers); throws rfa::Error
// if it cannot be read.
std::string file_xxh64(const std::string& path);
// XXH64 of a tokenizer model file's bytes, as hex (checkpoints); throws rfa::Error if it cannot be read.
inline std::string tokenizer_xxh64(const std::string& path) { return file_xxh64(path); }

}  // namespace rfa
