#pragma once
// The model's tensors as the checkpoint library sees them: every parameter by
// its table name, plus the fixed evaluation random matrices of each layer whose attention
// draws some as "layers.{l}.attn.random" (RFA kinds: (H, D, Dh)). The optimizer file holds AdamW's
// moments as "{name}.adam_m" / "{name}.adam_v" with the parameter's shape.
// Refs borrow the model's memory: keep the model alive while writing.
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "checkpoint/safetensors.h"
#include "model/model.h"

namespace rfa {

std::vector<TensorRef> model_tensor_refs(Model<float>& model);
std::vector<TensorSpec> model_tensor_specs(const ModelSpec& spec);

// m and v: (P) each, in the parameter layout.
std::vector<TensorRef> optimizer_tensor_refs(const Model<float>& model, const float* m, const float* v);
std::vector<TensorSpec> optimizer_tensor_specs(const ModelSpec& spec);

// Copies validated tensors (model_tensor_specs) into the model's parameters and fixed random matrices:
// from a file in memory, or from a loaded checkpoint's model.safetensors, each tensor read straight into
// the arena and checked there (an unreadable or corrupt one is an Error naming the checkpoint's others,
// checkpoint_damaged_fix).
void model_tensors_load(Model<float>& model, const SafetensorsFile& file);
void model_tensors_load(Model<float>& model, const LoadedCheckpoint& checkpoint);
// Copies AdamW moments back into m and v (P each), likewise.
void optimizer_tensors_load(const Model<float>& model, const SafetensorsFile& file, float* m, float* v);
void optimizer_tensors_load(const Model<float>& model, const LoadedCheckpoint& checkpoint, float* m, float* v);

}  // namespace rfa
