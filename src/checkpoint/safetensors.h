#pragma once
// The safetensors format (https://github.com/huggingface/safetensors):
//   [8 bytes] N, little-endian u64: header length
//   [N bytes] JSON: {"name": {"dtype": "F32", "shape": [..], "data_offsets": [b, e]}, ...,
//                    "__metadata__": {string: string}}, padded with spaces to a multiple of 8
//   [rest]    raw little-endian tensor data; offsets are relative to the start of this
//             section, tensors tile it exactly (no gap, no overlap, nothing after).
// We add XXH64 checksums to __metadata__ ("rfa.checksum.<tensor>" per tensor,
// "rfa.checksum" over the tensor table) and verify them on read. See docs/checkpoints.md.
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "io/file_io.h"

namespace rfa {

enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL };

const char* dtype_name(DType dtype);               // "F32"
bool dtype_parse(const std::string& name, DType* out);
size_t dtype_size(DType dtype);                    // bytes per element

std::string shape_string(const std::vector<int64_t>& shape);  // "[128, 64]"
int64_t shape_numel(const std::vector<int64_t>& shape);

// A tensor to write: borrows its bytes (e.g. a slice of the flat parameter array).
struct TensorRef {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const void* data = nullptr;  // shape_numel(shape) * dtype_size(dtype) bytes
};

// A tensor read back: its bytes are a view into the SafetensorsFile that holds it.
struct Tensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::span<uint8_t> bytes;
};

// A whole file's bytes, read once, and the tensors viewing them: small files (a stateful run's
// stream offsets, decode states). A checkpoint's weights and moments are read tensor by tensor
// into the arena instead (SafetensorsReader below). Movable (the views stay valid: a moved vector
// keeps its buffer), not copyable.
struct SafetensorsFile {
  std::vector<Tensor> tensors;  // in data order
  std::map<std::string, std::string> metadata;  // without our rfa.checksum* entries
  std::vector<uint8_t> storage;  // the whole file, which `tensors` view

  SafetensorsFile() = default;
  SafetensorsFile(SafetensorsFile&&) = default;
  SafetensorsFile& operator=(SafetensorsFile&&) = default;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const Tensor* find(const std::string& name) const;  // nullptr if absent
};

// Writes (and fsyncs) the file. Names must be unique, non-empty, and not "__metadata__";
// metadata keys must not start with "rfa.checksum". Throws rfa::Error with path and reason.
void safetensors_write(const std::string& path, const std::vector<TensorRef>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// Reads and fully validates the file: header length, JSON, dtypes, shapes vs byte
// counts, offsets tiling the data, checksums. Any defect is an rfa::Error naming the file.
SafetensorsFile safetensors_read(const std::string& path);
// The same over bytes already in memory, which the result keeps; `source` names them in messages.
SafetensorsFile safetensors_parse(std::vector<uint8_t> file, const std::string& source);

// A tensor's entry in the header of a file opened by SafetensorsReader.
struct TensorEntry {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  uint64_t offset = 0;  // in the data section
  uint64_t bytes = 0;
  std::string checksum;  // the stored XXH64 of its bytes, hex
};

// A checkpoint's weights or moments read straight into their destination (the model's arena), without
// the whole file in memory first: a resume of a 91M-parameter model held its 1.1 GB of files beside
// the arena, zero-filled before the read (2.2 GB resident, a third of the load's time). Opening reads
// and checks the header as safetensors_read does (length, JSON, dtypes, shapes against byte counts,
// offsets tiling the data, the table's checksum); each tensor's bytes are checked against their
// checksum as they are read. The file stays open, so a checkpoint pruned meanwhile still reads.
// Move-only.
class SafetensorsReader {
 public:
  SafetensorsReader() = default;  // no file, no tensors (a checkpoint's optimizer file not asked for)
  explicit SafetensorsReader(const std::string& path);

  std::vector<TensorEntry> tensors;             // in data order
  std::map<std::string, std::string> metadata;  // without our rfa.checksum* entries

  const std::string& path() const { return file_.path(); }
  const TensorEntry* find(const std::string& name) const;  // nullptr if absent
  // Reads F32 tensor `name`, `count` floats, into dst and checks its checksum; an absent tensor,
  // another dtype or size, a short file or a checksum that differs is an rfa::Error naming the file.
  void read_f32(const std::string& name, float* dst, int64_t count) const;

 private:
  FileReader file_;
  uint64_t data_start_ = 0;
};

// What a loader expects to find.
struct TensorSpec {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
};

// Checks that `file` holds exactly the expected tensors (any order) with the expected
// dtype and shape; the error names the tensor and both shapes/dtypes.
void safetensors_validate(const SafetensorsFile& file, const std::vector<TensorSpec>& expected,
                          const std::string& source);
void safetensors_validate(const SafetensorsReader& file, const std::vector<TensorSpec>& expected,
                          const std::string& source);

// Copies a validated F32 tensor into dst, which holds `count` floats.
void tensor_copy_to(const Tensor& tensor, float* dst, int64_t count);

}  // namespace rfa
