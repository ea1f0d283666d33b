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

struct ParamEntry {
  std::string name;            // ggml-like: "layers.0.attn.wq", "final_norm"
  int64_t offset = 0;          // element offset into the flat array
  std::vector<int64_t> shape;  // row-major, last index fastest
  int64_t numel = 0;
  bool decay = false;          // AdamW weight decay applies (weight matrices only)
};

class ParamTable {
 public:
  // Appends a tensor; names must be unique. Returns its offset.
  int64_t add(const std::string& name, std::vector<int64_t> shape, bool decay);

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
