#pragma once
// Is a corpus (or a text to evaluate) UTF-8 text? SentencePiece accepts any
// bytes: it trains on invalid UTF-8 as U+FFFD and encodes it as byte tokens, so
// a binary file would give a tokenizer, a token file or a perplexity of noise.
// Refused: any malformed UTF-8 (utf8.h; no tolerance, as `rfa data prepare`
// would refuse the same corpus later) and NUL bytes (binary data, or UTF-16,
// whose ASCII text is otherwise valid UTF-8).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rfa {

struct TextFault {
  int64_t offset = 0;  // of the offending byte, from the start of the text
  unsigned char byte = 0;
  bool nul = false;    // a NUL byte, else malformed UTF-8
};

// The first fault in `text`, or nullopt when it is UTF-8 text without NUL bytes.
std::optional<TextFault> text_fault(std::string_view text);

// Throws Error naming `what` ("corpus", "--data file", ...), the path, the byte
// offset and the fix when `text` (the bytes of `path` from `offset` on) is not text.
void text_check(std::string_view text, const std::string& path, std::string_view what, int64_t offset = 0);

// The same for a whole file, streamed in blocks (memory stays ~1 MB); also
// throws for a missing, unreadable or empty file.
void text_file_check(const std::string& path, std::string_view what);

}  // namespace rfa
