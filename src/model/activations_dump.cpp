#include "model/activations_dump.h"

#include <vector>

#include "checkpoint/safetensors.h"

namespace rfa {

void activations_dump(Activations<float>& acts, const std::string& path) {
  std::vector<TensorRef> refs;
  for (const ActTensor& t : acts.tensors()) refs.push_back({t.name, DType::F32, t.shape, acts.tensor_data(t)});
  safetensors_write(path, refs);
}

}  // namespace rfa
