#include "checkpoint/safetensors.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <string_view>

#include "io/file_io.h"
#include "io/json.h"
#include "io/hash.h"
#include "core/checksum_policy.h"
#include "core/error.h"

namespace rfa {
namespace {

constexpr const char* kChecksumKey = "rfa.checksum";             // over the tensor table
constexpr const char* kTensorChecksumPrefix = "rfa.checksum.";   // + tensor name: its bytes
// Larger headers are refused before parsing (the reference implementation uses 100 MB).
constexpr uint64_t kMaxHeaderBytes = 100u << 20;

struct DTypeInfo {
  DType dtype;
  const char* name;
  size_t size;
};
constexpr DTypeInfo kDTypes[] = {{DType::F64, "F64", 8}, {DType::F32, "F32", 4}, {DType::F16, "F16", 2},
                                 {DType::BF16, "BF16", 2}, {DType::I64, "I64", 8}, {DType::I32, "I32", 4},
                                 {DType::I16, "I16", 2},  {DType::I8, "I8", 1},    {DType::U8, "U8", 1},
                                 {DType::BOOL, "BOOL", 1}};

// One tensor's place in the data section.
struct Entry {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end;
};

// The text the table checksum is taken over: every tensor's name, dtype, shape,
// offsets and payload hash, then the user metadata, one line each in data order.
std::string table_text(const std::vector<Entry>& entries, const std::vector<std::string>& hashes,
                       const std::map<std::string, std::string>& metadata) {
  std::string text;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    text += fmt::format("tensor {} {} {} {} {} {}\n", json_quote(e.name), dtype_name(e.dtype),
                        shape_string(e.shape), e.begin, e.end, hashes[i]);
  }
  for (const auto& [k, v] : metadata) text += fmt::format("meta {} {}\n", json_quote(k), json_quote(v));
  return text;
}

// numel * element size, or fail if the shape is negative or overflows.
uint64_t byte_count(const std::vector<int64_t>& shape, DType dtype, const std::string& where) {
  uint64_t n = dtype_size(dtype);
  for (int64_t d : shape) {
    if (d < 0) fail("{}: negative dimension in shape {}", where, shape_string(shape));
    if (d != 0 && n > (uint64_t{1} << 62) / static_cast<uint64_t>(d)) {
      fail("{}: shape {} is too large", where, shape_string(shape));
    }
    n *= static_cast<uint64_t>(d);
  }
  return n;
}

Entry entry_parse(const std::string& name, const JsonValue& v, const std::string& source) {
  const std::string where = fmt::format("{}: tensor '{}'", source, name);
  if (v.kind != JsonValue::Kind::object) fail("{}: entry is not a JSON object", where);
  for (const auto& [key, unused] : v.members) {
    if (key != "dtype" && key != "shape" && key != "data_offsets") fail("{}: unknown field \"{}\"", where, key);
  }
  const JsonValue* dtype = v.find("dtype");
  const JsonValue* shape = v.find("shape");
  const JsonValue* offsets = v.find("data_offsets");
  if (!dtype || !shape || !offsets) fail("{}: needs \"dtype\", \"shape\" and \"data_offsets\"", where);
  Entry e;
  e.name = name;
  if (!dtype_parse(dtype->as_string(where + " dtype"), &e.dtype)) {
    fail("{}: unknown dtype \"{}\"", where, dtype->text);
  }
  if (shape->kind != JsonValue::Kind::array) fail("{}: shape is not an array", where);
  for (const JsonValue& d : shape->items) e.shape.push_back(d.as_int64(where + " shape entry"));
  if (offsets->kind != JsonValue::Kind::array || offsets->items.size() != 2) {
    fail("{}: data_offsets must be [begin, end]", where);
  }
  e.begin = offsets->items[0].as_uint64(where + " data_offsets begin");
  e.end = offsets->items[1].as_uint64(where + " data_offsets end");
  if (e.end < e.begin) fail("{}: data_offsets [{}, {}] end before they begin", where, e.begin, e.end);
  uint64_t bytes = byte_count(e.shape, e.dtype, where);
  if (e.end - e.begin != bytes) {
    fail("{}: dtype {} shape {} needs {} bytes but data_offsets [{}, {}] hold {}", where, dtype_name(e.dtype),
         shape_string(e.shape), bytes, e.begin, e.end, e.end - e.begin);
  }
  return e;
}

}  // namespace

const char* dtype_name(DType dtype) {
  for (const DTypeInfo& d : kDTypes) {
    if (d.dtype == dtype) return d.name;
  }
  return "?";
}

bool dtype_parse(const std::string& name, DType* out) {
  for (const DTypeInfo& d : kDTypes) {
    if (name == d.name) {
      *out = d.dtype;
      return true;
    }
  }
  return false;
}

size_t dtype_size(DType dtype) {
  for (const DTypeInfo& d : kDTypes) {
    if (d.dtype == dtype) return d.size;
  }
  return 0;
}

std::string shape_string(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

int64_t shape_numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

const Tensor* SafetensorsFile::find(const std::string& name) const {
  for (const Tensor& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

void safetensors_write(const std::string& path, const std::vector<TensorRef>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::vector<Entry> entries;
  std::vector<std::string> hashes;
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const TensorRef& t : tensors) {
    if (t.name.empty() || t.name == "__metadata__") fail("{}: invalid tensor name '{}'", path, t.name);
    if (!names.insert(t.name).second) fail("{}: tensor name '{}' appears twice", path, t.name);
    uint64_t bytes = byte_count(t.shape, t.dtype, fmt::format("{}: tensor '{}'", path, t.name));
    RFA_ASSERT(bytes == 0 || t.data != nullptr, "tensor '{}' has no data", t.name);
    entries.push_back({t.name, t.dtype, t.shape, offset, offset + bytes});
    hashes.push_back(hash_hex(xxhash64(t.data, bytes)));
    offset += bytes;
  }
  for (const auto& [key, unused] : metadata) {
    if (key.rfind(kChecksumKey, 0) == 0) fail("{}: metadata key '{}' is reserved", path, key);
  }

  std::string header = "{\"__metadata__\":{";
  auto add_meta = [&](const std::string& k, const std::string& v) {
    if (header.back() != '{') header += ',';
    header += json_quote(k) + ":" + json_quote(v);
  };
  for (const auto& [k, v] : metadata) add_meta(k, v);
  const std::string table = table_text(entries, hashes, metadata);
  add_meta(kChecksumKey, hash_hex(xxhash64(table.data(), table.size())));
  for (size_t i = 0; i < entries.size(); ++i) add_meta(kTensorChecksumPrefix + entries[i].name, hashes[i]);
  header += "}";
  for (const Entry& e : entries) {
    header += fmt::format(",{}:{{\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{},{}]}}", json_quote(e.name),
                          dtype_name(e.dtype), fmt::join(e.shape, ","), e.begin, e.end);
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');  // the data section starts 8-byte aligned

  uint8_t length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(static_cast<uint64_t>(header.size()) >> (8 * i));
  FileWriter writer(path);
  writer.write(length, 8);
  writer.write(header);
  for (size_t i = 0; i < tensors.size(); ++i) writer.write(tensors[i].data, entries[i].end - entries[i].begin);
  writer.finish();
}

namespace {

// A file's header, parsed and checked against the size of its data section: the tensors in data
// order, each with its stored payload checksum, and the user metadata (our checksum entries taken out).
struct Header {
  std::vector<Entry> entries;
  std::vector<std::string> stored_hashes;  // per entry
  std::map<std::string, std::string> metadata;
  std::string stored_table_hash;
};

uint64_t header_length(const uint8_t* first8, uint64_t file_size, const std::string& source) {
  if (file_size < 8) fail("{}: truncated: {} bytes, too short for the 8-byte header length", source, file_size);
  uint64_t header_size = 0;
  for (int i = 0; i < 8; ++i) header_size |= static_cast<uint64_t>(first8[i]) << (8 * i);
  if (header_size == 0 || header_size > kMaxHeaderBytes || header_size > file_size - 8) {
    fail("{}: bad header length {} for a file of {} bytes (truncated or not a safetensors file)", source,
         header_size, file_size);
  }
  return header_size;
}

Header header_parse(std::string_view header_text, uint64_t data_size, const std::string& source) {
  JsonValue json = json_parse(header_text, source + " header");
  if (json.kind != JsonValue::Kind::object) fail("{}: header is not a JSON object", source);
  Header h;
  for (const auto& [name, value] : json.members) {
    if (name == "__metadata__") {
      if (value.kind != JsonValue::Kind::object) fail("{}: __metadata__ is not a JSON object", source);
      for (const auto& [k, v] : value.members) h.metadata[k] = v.as_string(source + " __metadata__ value");
      continue;
    }
    h.entries.push_back(entry_parse(name, value, source));
  }

  // The tensors must tile [0, data_size) exactly: no gap, no overlap, nothing out of range.
  std::stable_sort(h.entries.begin(), h.entries.end(), [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
  uint64_t covered = 0;
  std::string previous = "the start of the data";
  for (const Entry& e : h.entries) {
    if (e.end > data_size) {
      fail("{}: tensor '{}' data_offsets [{}, {}] run past the end of the data ({} bytes): file truncated?",
           source, e.name, e.begin, e.end, data_size);
    }
    if (e.begin != covered) {
      fail("{}: tensor '{}' begins at byte {} but {} ends at byte {} ({})", source, e.name, e.begin, previous,
           covered, e.begin < covered ? "overlap" : "gap");
    }
    covered = e.end;
    previous = fmt::format("tensor '{}'", e.name);
  }
  if (covered != data_size) {
    fail("{}: the data section has {} bytes but the tensors cover {} (trailing bytes)", source, data_size, covered);
  }

  for (const Entry& e : h.entries) {
    auto stored = h.metadata.find(kTensorChecksumPrefix + e.name);
    if (stored == h.metadata.end()) fail("{}: tensor '{}' has no checksum in __metadata__", source, e.name);
    h.stored_hashes.push_back(stored->second);
    h.metadata.erase(stored);
  }
  auto stored_table = h.metadata.find(kChecksumKey);
  if (stored_table == h.metadata.end())
    fail("{}: no \"{}\" in __metadata__ (not written by rfa?)", source, kChecksumKey);
  h.stored_table_hash = stored_table->second;
  h.metadata.erase(stored_table);
  for (const auto& [k, unused] : h.metadata) {
    if (k.rfind(kChecksumKey, 0) == 0) fail("{}: checksum '{}' names no tensor", source, k);
  }
  return h;
}

// The table's checksum (names, dtypes, shapes, offsets, metadata and the payload hashes given).
void table_check(const Header& h, const std::vector<std::string>& hashes, const std::string& source) {
  const std::string table = table_text(h.entries, hashes, h.metadata);
  const std::string actual = hash_hex(xxhash64(table.data(), table.size()));
  if (checksums_enforced() && actual != h.stored_table_hash) {
    fail("{}: header is corrupted: tensor table checksum {} != stored {}", source, actual, h.stored_table_hash);
  }
}

void payload_check(const std::string& name, const std::string& stored, const std::string& actual,
                   const std::string& source) {
  if (checksums_enforced() && stored != actual) {
    fail("{}: tensor '{}' is corrupted: payload checksum {} != stored {}", source, name, actual, stored);
  }
}

}  // namespace

SafetensorsFile safetensors_read(const std::string& path) { return safetensors_parse(file_read_bytes(path), path); }

SafetensorsFile safetensors_parse(std::vector<uint8_t> file, const std::string& source) {
  const uint64_t header_size = header_length(file.data(), file.size(), source);
  const std::string_view header_text(reinterpret_cast<const char*>(file.data()) + 8, header_size);
  const uint64_t data_size = file.size() - 8 - header_size;
  Header h = header_parse(header_text, data_size, source);
  uint8_t* data = file.data() + 8 + header_size;

  // Checksums: each tensor's payload, then the table over the payloads' hashes.
  std::vector<std::string> hashes;
  for (size_t i = 0; i < h.entries.size(); ++i) {
    const Entry& e = h.entries[i];
    hashes.push_back(hash_hex(xxhash64(data + e.begin, e.end - e.begin)));
    payload_check(e.name, h.stored_hashes[i], hashes.back(), source);
  }
  table_check(h, hashes, source);

  SafetensorsFile out;
  out.metadata = std::move(h.metadata);
  out.storage = std::move(file);  // the same buffer: `data` still points into it
  for (Entry& e : h.entries) {
    out.tensors.push_back({std::move(e.name), e.dtype, std::move(e.shape),
                           std::span<uint8_t>(data + e.begin, data + e.end)});
  }
  return out;
}

SafetensorsReader::SafetensorsReader(const std::string& path) : file_(path) {
  uint8_t first8[8] = {};
  if (file_.size() >= 8) file_.read_at(0, first8, 8);
  const uint64_t header_size = header_length(first8, file_.size(), path);
  std::string header_text(header_size, '\0');
  file_.read_at(8, header_text.data(), header_text.size());
  data_start_ = 8 + header_size;
  Header h = header_parse(header_text, file_.size() - data_start_, path);
  table_check(h, h.stored_hashes, path);  // each payload is checked against its stored hash when read
  metadata = std::move(h.metadata);
  for (size_t i = 0; i < h.entries.size(); ++i) {
    Entry& e = h.entries[i];
    tensors.push_back({std::move(e.name), e.dtype, std::move(e.shape), e.begin, e.end - e.begin,
                       std::move(h.stored_hashes[i])});
  }
}

const TensorEntry* SafetensorsReader::find(const std::string& name) const {
  for (const TensorEntry& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

void SafetensorsReader::read_f32(const std::string& name, float* dst, int64_t count) const {
  const TensorEntry* t = find(name);
  if (t == nullptr) fail("{}: no tensor '{}'; it was written for another model shape", file_.path(), name);
  if (t->dtype != DType::F32 || t->bytes != static_cast<uint64_t>(count) * sizeof(float)) {
    fail("{}: tensor '{}' is {} with {} bytes; cannot read it into {} floats", file_.path(), t->name,
         dtype_name(t->dtype), t->bytes, count);
  }
  file_.read_at(data_start_ + t->offset, dst, static_cast<size_t>(t->bytes));
  payload_check(t->name, t->checksum, hash_hex(xxhash64(dst, static_cast<size_t>(t->bytes))), file_.path());
}

namespace {

// Either kind of file: its `tensors` (name, dtype, shape) and `find(name)`.
template <typename File>
void validate_tensors(const File& file, const std::vector<TensorSpec>& expected, const std::string& source) {
  for (const TensorSpec& spec : expected) {
    const auto* t = file.find(spec.name);
    if (t == nullptr) fail("{}: tensor '{}' is missing (expected {} {})", source, spec.name, dtype_name(spec.dtype),
                           shape_string(spec.shape));
    if (t->dtype != spec.dtype || t->shape != spec.shape) {
      fail("{}: tensor '{}' is {} {} in the checkpoint but the config expects {} {}", source, spec.name,
           dtype_name(t->dtype), shape_string(t->shape), dtype_name(spec.dtype), shape_string(spec.shape));
    }
  }
  for (const auto& t : file.tensors) {
    bool known = std::any_of(expected.begin(), expected.end(), [&](const TensorSpec& s) { return s.name == t.name; });
    if (!known) fail("{}: unexpected tensor '{}' {} {} that the config does not have", source, t.name,
                     dtype_name(t.dtype), shape_string(t.shape));
  }
}

}  // namespace

void safetensors_validate(const SafetensorsFile& file, const std::vector<TensorSpec>& expected,
                          const std::string& source) {
  validate_tensors(file, expected, source);
}

void safetensors_validate(const SafetensorsReader& file, const std::vector<TensorSpec>& expected,
                          const std::string& source) {
  validate_tensors(file, expected, source);
}

void tensor_copy_to(const Tensor& tensor, float* dst, int64_t count) {
  if (tensor.dtype != DType::F32 || tensor.bytes.size() != static_cast<size_t>(count) * sizeof(float)) {
    fail("tensor '{}' is {} with {} bytes; cannot copy it into {} floats", tensor.name, dtype_name(tensor.dtype),
         tensor.bytes.size(), count);
  }
  std::memcpy(dst, tensor.bytes.data(), tensor.bytes.size());
}

}  // namespace rfa
