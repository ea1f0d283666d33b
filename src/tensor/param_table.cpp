#include "tensor/param_table.h"

#include "core/error.h"
#include "tensor/arena.h"

namespace rfa {

int64_t ParamTable::add(const std::string& name, std::vector<int64_t> shape, bool decay, ParamInit init,
                        bool grad_by_gemm) {
  RFA_ASSERT(!index_.count(name), "parameter {} added twice", name);
  int64_t numel = 1;
  for (int64_t d : shape) {
    RFA_ASSERT(d > 0, "parameter {} has a dimension {}", name, d);
    numel *= d;
  }
  ParamEntry e{name, size_, std::move(shape), numel, decay, init, grad_by_gemm};
  size_ += arena_round<float>(numel);  // float alignment; also 64-byte aligned for double * 2
  index_[name] = entries_.size();
  entries_.push_back(std::move(e));
  return entries_.back().offset;
}

const ParamEntry* ParamTable::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

const ParamEntry& ParamTable::get(const std::string& name) const {
  const ParamEntry* e = find(name);
  if (!e) fail("no parameter named '{}' in this model ({} tensors)", name, entries_.size());
  return *e;
}

int64_t ParamTable::count() const {
  int64_t n = 0;
  for (const auto& e : entries_) n += e.numel;
  return n;
}

std::vector<float> ParamTable::decay_mask() const {
  std::vector<float> mask(static_cast<size_t>(size_), 0.0f);
  for (const auto& e : entries_)
    if (e.decay)
      for (int64_t i = 0; i < e.numel; ++i) mask[static_cast<size_t>(e.offset + i)] = 1.0f;
  return mask;
}

}  // namespace rfa
