// Model construction, zero-grad, initialisation and the RFA random draws.

#include "core/parallel.h"
#include "core/rng.h"
#include "model/model.h"
#include "tensor/fill_zero.h"

namespace rfa {

template <typename T>
Model<T>::Model(const ModelSpec& s) : spec(s), table(model_param_table(s)) {
  attention = AttentionCore(spec.attn, spec.model.context_length);
  random_size = int64_t(spec.L) * attention_random_size(spec.attn);
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
  const int64_t per_layer = attention_random_size(s.attn);
  if (per_layer == 0) return;
  // Layers are independent streams: draw them in parallel (no gemm inside).
  parallel_for(s.L, [&](int64_t l) {
    attention_random_draw(s.attn, seed, step, static_cast<int>(l), out + l * per_layer);
  });
}

template <typename T>
void model_init(Model<T>& m, uint64_t seed) {
  const ModelSpec& s = m.spec;
  const auto& entries = m.table.entries();
  for (size_t i = 0; i < entries.size(); ++i) {
    const ParamEntry& e = entries[i];
    T* p = m.params() + e.offset;
    switch (e.init.kind) {
      case ParamInit::Kind::constant:
        for (int64_t j = 0; j < e.numel; ++j) p[j] = static_cast<T>(e.init.value);
        break;
      case ParamInit::Kind::normal: {
        const double std = s.model.init_std * e.init.value;
        CounterRng rng(seed, 0x1417, i);
        for (int64_t j = 0; j < e.numel; ++j) p[j] = static_cast<T>(rng.normal() * std);
        break;
      }
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
