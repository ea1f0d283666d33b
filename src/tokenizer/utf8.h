#pragma once
// UTF-8 validation: SentencePiece replaces malformed bytes with U+FFFD, which
// would silently break round trips, so corpora are checked before encoding.
#include <cstddef>
#include <string_view>

namespace rfa {

// Length of the longest prefix of `text` that is well-formed UTF-8 (RFC 3629:
// no overlong forms, no surrogates, nothing above U+10FFFF). == text.size() when valid.
size_t utf8_valid_prefix(std::string_view text);

// True if byte c starts a character (is not a 10xxxxxx continuation byte).
inline bool utf8_is_lead(unsigned char c) { return (c & 0xC0) != 0x80; }

}  // namespace rfa
