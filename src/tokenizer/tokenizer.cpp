#include "tokenizer/tokenizer.h"

#include <sentencepiece_processor.h>

#include "core/error.h"
#include "io/file_util.h"
#include "io/hash.h"

namespace rfa {
namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581 '▁', SentencePiece's space

// The text a piece stands for: '▁' -> ' ', "<0xAB>" -> byte 0xAB, control -> "".
std::string piece_text(const sentencepiece::SentencePieceProcessor& sp, int id) {
  if (sp.IsControl(id)) return "";
  if (sp.IsUnknown(id)) return " \xE2\x81\x87 ";  // what SentencePiece's Decode prints for <unk>
  const std::string& piece = sp.IdToPiece(id);
  if (sp.IsByte(id)) {
    RFA_ASSERT(piece.size() == 6 && piece.rfind("<0x", 0) == 0, "byte piece {} of id {}", piece, id);
    return std::string(1, static_cast<char>(std::stoi(piece.substr(3, 2), nullptr, 16)));
  }
  std::string text;
  for (size_t i = 0; i < piece.size();) {
    if (piece.compare(i, kSpaceMark.size(), kSpaceMark) == 0) {
      text += ' ';
      i += kSpaceMark.size();
    } else {
      text += piece[i++];
    }
  }
  return text;
}

}  // namespace

Tokenizer::Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::load(const std::string& path) {
  std::string bytes;
  try {
    bytes = file_read_all(path);
  } catch (const Error& e) {
    fail("tokenizer model {} cannot be read ({}); train it with `rfa tokenizer train` or fix tokenizer.path",
         path, e.what());
  }
  return from_bytes(std::move(bytes), path);
}

Tokenizer Tokenizer::from_bytes(std::string model_bytes, const std::string& origin) {
  Tokenizer t;
  t.sp_ = std::make_unique<sentencepiece::SentencePieceProcessor>();
  sentencepiece::util::Status status;
  try {
    status = t.sp_->LoadFromSerializedProto(model_bytes);
  } catch (const std::exception& e) {
    // SentencePiece 0.1.97 reports some defects by throwing instead of returning a status:
    // its trie builder (darts-clone) throws on a piece of length 0 (fuzzing found it).
    fail("tokenizer model {} ({} bytes) is not a valid SentencePiece model: {}; re-train it with "
         "`rfa tokenizer train`", origin, model_bytes.size(), e.what());
  }
  if (!status.ok())
    fail("tokenizer model {} ({} bytes) is not a valid SentencePiece model: {}; re-train it with "
         "`rfa tokenizer train`", origin, model_bytes.size(), status.ToString());
  t.fnv1a64_ = tokenizer_fnv1a64(model_bytes);
  t.model_bytes_ = std::move(model_bytes);
  t.origin_ = origin;
  int V = t.sp_->GetPieceSize();
  t.token_text_.reserve(V);
  for (int id = 0; id < V; ++id) t.token_text_.push_back(piece_text(*t.sp_, id));
  return t;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  encode_append(text, ids);
  return ids;
}

void Tokenizer::encode_append(std::string_view text, std::vector<int32_t>& out) const {
  std::vector<int> ids;
  auto status = sp_->Encode(text, &ids);
  if (!status.ok()) fail("tokenizer {}: cannot encode {} bytes of text: {}", origin_, text.size(), status.ToString());
  out.insert(out.end(), ids.begin(), ids.end());
}

std::string Tokenizer::decode(std::span<const int32_t> ids) const {
  std::vector<int> v(ids.begin(), ids.end());
  for (int id : v)
    if (id < 0 || id >= vocab_size()) fail("tokenizer {}: token id {} outside [0, {})", origin_, id, vocab_size());
  std::string text;
  auto status = sp_->Decode(v, &text);
  if (!status.ok()) fail("tokenizer {}: cannot decode {} tokens: {}", origin_, v.size(), status.ToString());
  return text;
}

std::string Tokenizer::decode_token(int32_t id) const {
  if (id < 0 || id >= vocab_size()) fail("tokenizer {}: token id {} outside [0, {})", origin_, id, vocab_size());
  return token_text_[id];
}

int Tokenizer::token_bytes(int32_t id) const {
  RFA_ASSERT(id >= 0 && id < vocab_size(), "token id {} outside [0, {})", id, vocab_size());
  return static_cast<int>(token_text_[id].size());
}

int Tokenizer::vocab_size() const { return static_cast<int>(token_text_.size()); }
int32_t Tokenizer::eos_id() const {
  const int id = sp_->eos_id();
  return id >= 0 && id < vocab_size() && sp_->IsControl(id) ? id : -1;
}
uint64_t Tokenizer::fnv1a64() const { return fnv1a64_; }
const std::string& Tokenizer::model_bytes() const { return model_bytes_; }
const std::string& Tokenizer::origin() const { return origin_; }

}  // namespace rfa
