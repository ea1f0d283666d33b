#include "model/model_io.h"

#include "core/error.h"

namespace rfa {
namespace {

std::string random_name(int l) { return "layers." + std::to_string(l) + ".attn.random"; }

const AttentionSpec& layer_attn(const ModelSpec& s, int l) { return s.attn[static_cast<size_t>(l)]; }

const Tensor& require(const SafetensorsFile& file, const std::string& name) {
  const Tensor* t = file.find(name);
  if (!t) fail("checkpoint has no tensor '{}'; it was written for another model shape", name);
  return *t;
}

}  // namespace

std::vector<TensorRef> model_tensor_refs(Model<float>& m) {
  m.matrices_check_kept("saving or loading the model's tensors");
  std::vector<TensorRef> refs;
  for (const ParamEntry& e : m.table.entries()) refs.push_back({e.name, DType::F32, e.shape, m.params() + e.offset});
  for (int l = 0; l < m.spec.L; ++l)  // the layers whose attention draws random matrices
    if (attention_random_size(layer_attn(m.spec, l)) > 0)
      refs.push_back({random_name(l), DType::F32, attention_random_shape(layer_attn(m.spec, l)),
                      m.random_fixed() + m.random_offset(l)});
  return refs;
}

std::vector<TensorSpec> model_tensor_specs(const ModelSpec& spec) {
  std::vector<TensorSpec> specs;
  const ParamTable t = model_param_table(spec);  // named: a loop over a temporary's entries() would dangle
  for (const ParamEntry& e : t.entries()) specs.push_back({e.name, DType::F32, e.shape});
  for (int l = 0; l < spec.L; ++l)
    if (attention_random_size(layer_attn(spec, l)) > 0)
      specs.push_back({random_name(l), DType::F32, attention_random_shape(layer_attn(spec, l))});
  return specs;
}

std::vector<TensorRef> optimizer_tensor_refs(const Model<float>& m, const float* adam_m, const float* adam_v) {
  std::vector<TensorRef> refs;
  for (const ParamEntry& e : m.table.entries()) refs.push_back({e.name + ".adam_m", DType::F32, e.shape, adam_m + e.offset});
  for (const ParamEntry& e : m.table.entries()) refs.push_back({e.name + ".adam_v", DType::F32, e.shape, adam_v + e.offset});
  return refs;
}

std::vector<TensorSpec> optimizer_tensor_specs(const ModelSpec& spec) {
  std::vector<TensorSpec> specs;
  ParamTable t = model_param_table(spec);
  for (const char* suffix : {".adam_m", ".adam_v"})
    for (const ParamEntry& e : t.entries()) specs.push_back({e.name + suffix, DType::F32, e.shape});
  return specs;
}

namespace {

// load(name, dst, count) fills dst with tensor `name`'s `count` floats.
template <typename Load>
void model_tensors_load_with(Model<float>& m, Load load) {
  for (const ParamEntry& e : m.table.entries()) load(e.name, m.params() + e.offset, e.numel);
  for (int l = 0; l < m.spec.L; ++l)
    if (const int64_t n = attention_random_size(layer_attn(m.spec, l)); n > 0)
      load(random_name(l), m.random_fixed() + m.random_offset(l), n);
}

template <typename Load>
void optimizer_tensors_load_with(const Model<float>& m, Load load, float* adam_m, float* adam_v) {
  for (const ParamEntry& e : m.table.entries()) {
    load(e.name + ".adam_m", adam_m + e.offset, e.numel);
    load(e.name + ".adam_v", adam_v + e.offset, e.numel);
  }
}

}  // namespace

void model_tensors_load(Model<float>& m, const SafetensorsFile& file) {
  model_tensors_load_with(
      m, [&](const std::string& name, float* dst, int64_t n) { tensor_copy_to(require(file, name), dst, n); });
}

void model_tensors_load(Model<float>& m, const LoadedCheckpoint& ck) {
  checkpoint_file_read(ck.dir, [&] {
    model_tensors_load_with(m, [&](const std::string& name, float* dst, int64_t n) { ck.model.read_f32(name, dst, n); });
  });
}

void optimizer_tensors_load(const Model<float>& m, const SafetensorsFile& file, float* adam_m, float* adam_v) {
  optimizer_tensors_load_with(
      m, [&](const std::string& name, float* dst, int64_t n) { tensor_copy_to(require(file, name), dst, n); }, adam_m,
      adam_v);
}

void optimizer_tensors_load(const Model<float>& m, const LoadedCheckpoint& ck, float* adam_m, float* adam_v) {
  checkpoint_file_read(ck.dir, [&] {
    optimizer_tensors_load_with(
        m, [&](const std::string& name, float* dst, int64_t n) { ck.optimizer.read_f32(name, dst, n); }, adam_m,
        adam_v);
  });
}

}  // namespace rfa
