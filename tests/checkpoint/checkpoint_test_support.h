#pragma once
// A toy model for checkpoint tests: two weight tensors and their AdamW moments.
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "support/gradcheck.h"

namespace rfa::test {

struct ToyModel {
  std::vector<float> wq, norm, m, v;
  // Sizes past a million get a cheap deterministic pattern instead of normal draws.
  explicit ToyModel(uint64_t seed, int64_t wq_size = 32)
      : wq(values(wq_size, seed)), norm(values(8, seed + 1)), m(values(wq_size + 8, seed + 2)),
        v(values(wq_size + 8, seed + 3)) {}

  static std::vector<float> values(int64_t n, uint64_t seed) {
    if (n <= (1 << 20)) return random_vector<float>(size_t(n), seed);
    std::vector<float> out(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out[size_t(i)] = float((i * 2654435761u + seed) % 1000) * 1e-3f;
    return out;
  }

  std::vector<TensorRef> model_refs() const {
    return {{"layers.0.attn.wq", DType::F32, {int64_t(wq.size()) / 8, 8}, wq.data()},
            {"norm", DType::F32, {8}, norm.data()}};
  }
  std::vector<TensorRef> optimizer_refs() const {
    return {{"m", DType::F32, {int64_t(m.size())}, m.data()}, {"v", DType::F32, {int64_t(v.size())}, v.data()}};
  }
  std::vector<TensorSpec> model_specs() const {
    return {{"layers.0.attn.wq", DType::F32, {int64_t(wq.size()) / 8, 8}}, {"norm", DType::F32, {8}}};
  }
  std::vector<TensorSpec> optimizer_specs() const {
    return {{"m", DType::F32, {int64_t(m.size())}}, {"v", DType::F32, {int64_t(v.size())}}};
  }
  CheckpointContents contents(int64_t step, double val_loss) const {
    CheckpointContents c;
    c.model = model_refs();
    c.optimizer = optimizer_refs();
    c.state.step = step;
    c.state.seed = 1337;
    c.state.val_loss = val_loss;
    c.config_yaml = "model:\n  d_model: 8\n";
    return c;
  }
  // True if `loaded` holds exactly this model's bytes.
  bool matches(const LoadedCheckpoint& loaded) const {
    std::vector<float> a(wq.size()), b(norm.size());
    loaded.model.read_f32("layers.0.attn.wq", a.data(), int64_t(a.size()));
    loaded.model.read_f32("norm", b.data(), int64_t(b.size()));
    return a == wq && b == norm;
  }
};

}  // namespace rfa::test
