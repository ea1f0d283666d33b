#include "tokenizer/model_proto.h"

#include <cstdint>
#include <optional>

namespace rfa {
namespace {

// Protobuf wire format (protobuf.dev/programming-guides/encoding): each field is a varint key
// (field number << 3 | wire type), then a varint (type 0), 8 bytes (1), a varint length and
// that many bytes (2), or 4 bytes (5). Groups (3, 4) are not used by SentencePiece.
class WireReader {
 public:
  explicit WireReader(std::string_view bytes) : bytes_(bytes) {}
  bool done() const { return at_ == bytes_.size(); }

  std::optional<uint64_t> varint() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64 && at_ < bytes_.size(); shift += 7) {
      const auto byte = static_cast<unsigned char>(bytes_[at_++]);
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return value;
    }
    return std::nullopt;
  }

  // One field: its number and, for a length-delimited one, its bytes; nullopt when malformed.
  struct Field {
    uint64_t number;
    std::string_view bytes;  // wire type 2 only
  };
  std::optional<Field> field() {
    const std::optional<uint64_t> key = varint();
    if (!key) return std::nullopt;
    const uint64_t number = *key >> 3;
    switch (*key & 7) {
      case 0:
        if (!varint()) return std::nullopt;
        return Field{number, {}};
      case 1: return skip(8) ? std::optional<Field>(Field{number, {}}) : std::nullopt;
      case 5: return skip(4) ? std::optional<Field>(Field{number, {}}) : std::nullopt;
      case 2: {
        const std::optional<uint64_t> size = varint();
        if (!size || *size > bytes_.size() - at_) return std::nullopt;
        const std::string_view bytes = bytes_.substr(at_, *size);
        at_ += *size;
        return Field{number, bytes};
      }
    }
    return std::nullopt;
  }

 private:
  bool skip(size_t n) {
    if (n > bytes_.size() - at_) return false;
    at_ += n;
    return true;
  }
  std::string_view bytes_;
  size_t at_ = 0;
};

constexpr uint64_t kModelTrainerSpec = 2;  // ModelProto.trainer_spec
constexpr uint64_t kTrainerInput = 1;      // TrainerSpec.input (repeated string)

void varint_append(std::string& out, uint64_t value) {
  for (; value >= 0x80; value >>= 7) out += static_cast<char>((value & 0x7f) | 0x80);
  out += static_cast<char>(value);
}

// A length-delimited field (wire type 2).
std::string field_bytes(uint64_t number, std::string_view bytes) {
  std::string out;
  varint_append(out, number << 3 | 2);
  varint_append(out, bytes.size());
  out.append(bytes);
  return out;
}

}  // namespace

std::string model_proto_training_input(std::string_view model_bytes) {
  std::string input;
  for (WireReader model(model_bytes); !model.done();) {
    const auto field = model.field();
    if (!field) return "";
    if (field->number != kModelTrainerSpec) continue;
    for (WireReader spec(field->bytes); !spec.done();) {
      const auto entry = spec.field();
      if (!entry) return "";
      if (entry->number != kTrainerInput) continue;
      if (!input.empty()) input += ',';
      input.append(entry->bytes);
    }
  }
  return input;
}

std::string model_proto_with_training_input(std::string model_bytes, std::string_view input) {
  return model_bytes.append(field_bytes(kModelTrainerSpec, field_bytes(kTrainerInput, input)));
}

}  // namespace rfa
