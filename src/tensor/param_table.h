#pragma once
// The parameter table: name -> (offset, shape, decay?) over one flat array.
// Parameters, gradients and AdamW's m and v all use this one layout, so the
// optimizer, zero-grad and checkpoint I/O are each one flat loop over `size()`
// elements. Every tensor starts on a 64-byte boundary (offsets are rounded up
// for float; the padding between tensors is zero and stays zero).
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace rfa {

// How model_init fills a tensor: normal(0, init_std * value) from the tensor's own
// stream, or the constant `value`.
struct ParamInit {
  // first_row: `value` in the first `row` elements (row 0 of a (rows, row) tensor), 0 after them
  // (a convolution's taps as the identity)
  enum class Kind { normal, constant, first_row };
  Kind kind = Kind::normal;
  double value = 1.0;
  int64_t row = 0;  // first_row: the row's length
  static ParamInit normal(double std_scale) { return {Kind::normal, std_scale}; }
  static ParamInit constant(double v) { return {Kind::constant, v}; }
  static ParamInit first_row(double v, int64_t row) { return {Kind::first_row, v, row}; }
};

struct ParamEntry {
  std::string name;            // ggml-like: "layers.0.attn.wq", "final_norm"
  int64_t offset = 0;          // element offset into the flat array
  std::vector<int64_t> shape;  // row-major, last index fastest
  int64_t numel = 0;
  bool decay = false;          // AdamW weight decay applies (weight matrices only)
  ParamInit init;              // how model_init fills it
  bool grad_by_gemm = false;   // a backward gemm writes its whole gradient (beta 0 can overwrite it)

  // The RFA kinds' feature bandwidth (layers.{l}.attn.sigma): its own learning rate scale and floor.
  bool is_sigma() const { return name.ends_with(".sigma"); }
};

class ParamTable {
 public:
  // Appends a tensor; names must be unique. Returns its offset.
  int64_t add(const std::string& name, std::vector<int64_t> shape, bool decay, ParamInit init = {},
              bool grad_by_gemm = false);

  const ParamEntry& get(const std::string& name) const;  // throws Error naming the missing tensor
  const ParamEntry* find(const std::string& name) const;  // nullptr if absent
  const std::vector<ParamEntry>& entries() const { return entries_; }
  int64_t size() const { return size_; }         // flat length including alignment padding
  int64_t count() const;                         // number of real parameters (no padding)

  // 1 where weight decay applies, 0 elsewhere (padding included); length size().
  std::vector<float> decay_mask() const;

 private:
  std::vector<ParamEntry> entries_;
  std::unordered_map<std::string, size_t> index_;
  int64_t size_ = 0;
};

}  // namespace rfa
