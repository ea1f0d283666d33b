// rfa_tensor_compare A.safetensors B.safetensors TOLERANCE: for each F32 tensor of A (B must
// hold the same names and shapes), the relative difference max|a - b| / max|a| (the
// tensor's largest difference against its largest value, so tiny elements do not dominate).
// Prints each tensor's and the worst; exits 1 if the worst exceeds TOLERANCE, 2 on bad input.
// The data-parallel e2e tests use it (tests/e2e/mpi_equivalence.sh).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "checkpoint/safetensors.h"
#include "core/error.h"

int main(int argc, char** argv) {
  using namespace rfa;
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s A.safetensors B.safetensors TOLERANCE\n", argv[0]);
    return 2;
  }
  try {
    const SafetensorsFile a = safetensors_read(argv[1]), b = safetensors_read(argv[2]);
    const double tolerance = std::strtod(argv[3], nullptr);
    double worst = 0;
    for (const Tensor& ta : a.tensors) {
      const Tensor* tb = b.find(ta.name);
      if (tb == nullptr || tb->shape != ta.shape || ta.dtype != DType::F32 || tb->dtype != DType::F32)
        fail("tensor {}: missing from {} or not F32 of the same shape", ta.name, argv[2]);
      const int64_t n = shape_numel(ta.shape);
      std::vector<float> x(n), y(n);
      tensor_copy_to(ta, x.data(), n);
      tensor_copy_to(*tb, y.data(), n);
      double diff = 0, scale = 0;
      for (int64_t i = 0; i < n; ++i) {
        diff = std::max(diff, std::fabs(double(x[i]) - y[i]));
        scale = std::max(scale, std::fabs(double(x[i])));
      }
      const double rel = scale > 0 ? diff / scale : diff;
      worst = std::max(worst, rel);
      std::printf("%s: max|diff| %.3e max|a| %.3e relative %.3e\n", ta.name.c_str(), diff, scale, rel);
    }
    std::printf("worst relative difference %.3e (tolerance %.1e)\n", worst, tolerance);
    return worst <= tolerance ? 0 : 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
