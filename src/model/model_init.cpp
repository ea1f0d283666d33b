// Model construction, zero-grad, initialisation and the RFA random draws.
#include <cmath>
#include <cstring>

#include "attention/random_features.h"
#include "core/parallel.h"
#include "core/rng.h"
#include "model/model.h"
#include "tensor/fill_zero.h"

namespace rfa {

template <typename T>
Model<T>::Model(const ModelSpec& s) : spec(s), table(model_param_table(s)) {
  if (spec.rope) rope = RopeTable::build(spec.model.context_length, spec.Dh, spec.attention.rope_theta);
  random_size = spec.is_rfa() ? int64_t(spec.L) * spec.H * spec.D * spec.Dh : 0;
  arena_ = Arena<T>(2 * table.size());
  random_ = Arena<T>(2 * random_size);
  w = model_weights_view(spec, table, params());
  g = model_weights_view(spec, table, grads());
}

template <typename T>
void Model<T>::zero_grad() {
  fill_zero(grads(), table.size());
}

template <typename T>
void model_draw_random(const ModelSpec& s, uint64_t seed, uint64_t step, T* out) {
  if (!s.is_rfa()) return;  // softmax has no random matrices
  const int64_t per_layer = int64_t(s.H) * s.D * s.Dh;
  // Layers are independent streams: draw them in parallel (no gemm inside).
  parallel_for(s.L, [&](int64_t l) {
    random_features_draw(out + l * per_layer, seed, step, static_cast<int>(l), s.H, s.D, s.Dh,
                         s.attention.orthogonal_features);
  });
}

template <typename T>
void model_init(Model<T>& m, uint64_t seed) {
  const ModelSpec& s = m.spec;
  const double residual_scale = 1.0 / std::sqrt(2.0 * s.L);
  const auto& entries = m.table.entries();
  for (size_t i = 0; i < entries.size(); ++i) {
    const ParamEntry& e = entries[i];
    T* p = m.params() + e.offset;
    auto ends_with = [&](const char* suffix) {
      size_t n = std::strlen(suffix);
      return e.name.size() >= n && e.name.compare(e.name.size() - n, n, suffix) == 0;
    };
    auto fill = [&](double value) {
      for (int64_t j = 0; j < e.numel; ++j) p[j] = static_cast<T>(value);
    };
    if (ends_with("norm")) {
      fill(1.0);
    } else if (ends_with(".sigma")) {
      fill(s.attention.sigma_init);
    } else if (ends_with(".gate_b")) {
      fill(s.attention.gate_bias_init);
    } else {
      RFA_ASSERT(e.shape.size() == 2, "tensor {} has no init rule", e.name);
      double std = s.model.init_std;
      if (ends_with(".wo") || ends_with(".w2")) std *= residual_scale;
      CounterRng rng(seed, 0x1417, i);
      for (int64_t j = 0; j < e.numel; ++j) p[j] = static_cast<T>(rng.normal() * std);
    }
  }
  if (m.random_size > 0) model_draw_random(s, seed, kFixedRandomStep, m.random_fixed());
}

template class Model<float>;
template class Model<double>;
template void model_init(Model<float>&, uint64_t);
template void model_init(Model<double>&, uint64_t);
template void model_draw_random(const ModelSpec&, uint64_t, uint64_t, float*);
template void model_draw_random(const ModelSpec&, uint64_t, uint64_t, double*);

}  // namespace rfa
