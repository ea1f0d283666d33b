#pragma once
// A loaded SentencePiece model. Encode/decode round-trip any valid UTF-8 text
// exactly (newlines, tabs, runs of spaces, digits, accents, CJK, emoji), for
// every TokenizerKind: models are trained with identity normalisation, no
// whitespace folding, no dummy prefix and byte fallback (see tokenizer_train.h),
// so a character outside the vocabulary becomes its UTF-8 byte tokens, never <unk>.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace rfa {

class Tokenizer {
 public:
  // Reads and parses a .model file; throws Error naming the path on failure.
  static Tokenizer load(const std::string& path);
  // Parses model bytes already in memory (e.g. a copy stored in a checkpoint).
  static Tokenizer from_bytes(std::string model_bytes, const std::string& origin = "<memory>");

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  std::vector<int32_t> encode(std::string_view text) const;
  // Appends to `out` (no reallocation when its capacity suffices); used by data preparation.
  void encode_append(std::string_view text, std::vector<int32_t>& out) const;
  std::string decode(std::span<const int32_t> ids) const;
  // The exact bytes one token stands for, for streaming output: a byte-fallback
  // token gives its single (possibly partial UTF-8) byte, control tokens give "".
  // For valid UTF-8 text, concatenating decode_token over encode(text) == text.
  std::string decode_token(int32_t id) const;
  // Number of text bytes token `id` stands for (= decode_token(id).size()); O(1).
  int token_bytes(int32_t id) const;

  int vocab_size() const;                     // V
  // The end-of-sequence id (</s>, 2 in every model rfa trains), -1 if the model has none.
  // Encoding never produces it: documents and examples get it inserted (data/token_file_documents.h).
  int32_t eos_id() const;
  uint64_t fnv1a64() const;                   // tokenizer_fnv1a64 of the model file bytes (io/hash.h)
  const std::string& model_bytes() const;     // the serialized model, as read
  const std::string& origin() const;          // path it came from (for messages)

 private:
  Tokenizer();
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  std::string model_bytes_;
  std::string origin_;
  uint64_t fnv1a64_ = 0;
  std::vector<std::string> token_text_;  // (V) decode_token table
};

}  // namespace rfa
