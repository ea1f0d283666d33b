#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "kernels/cpu_target.h"
#include "kernels/gemm.h"
#include "kernels/vector_math.h"

using namespace rfa;

TEST_CASE("cpu target: the build's vectors, registers and oneDNN's level agree") {
  // The width follows the compiler's target, the tiles the register file.
  if (kVectorBytes == 64) CHECK(kVectorRegisters == 32);
#if defined(__AVX512F__)
  CHECK(kVectorBytes == 64);
#elif defined(__AVX__)
  CHECK(kVectorBytes == 32);
#else
  CHECK(kVectorBytes == 16);
#endif
  CHECK(Simd<float>::W * 4 == kVectorBytes);
  CHECK(Simd<double>::W * 8 == kVectorBytes);
  CHECK(2 * kTileRows + 3 <= kVectorRegisters);  // accumulators + two loads of B + a broadcast fit
  // The test binary runs on the machine it was built for (or a later one).
  CHECK(cpu_target_missing() == "");
  const std::string d = cpu_target_description();
  CHECK(d.find(cpu_target_name()) == 0);
  CHECK(d.find(std::to_string(kVectorBytes / 4) + " floats") != std::string::npos);
  const std::string id = cpu_kernels_identity();
  CHECK(id.find(cpu_target_name()) != std::string::npos);
  CHECK(id.find("W" + std::to_string(kVectorBytes / 4)) != std::string::npos);
#if defined(__x86_64__) && !defined(__AVX512F__)
  // Below AVX-512 oneDNN is held at the build's level (test_main applies it like rfa's main),
  // unless the user set the level: then bf16 products are not available either.
  if (!std::getenv("ONEDNN_MAX_CPU_ISA") && !std::getenv("DNNL_MAX_CPU_ISA") &&
      std::string(cpu_target_name()) != "native") {
    CHECK(gemm_isa_effective().find("avx512") == std::string::npos);
    CHECK_FALSE(gemm_isa_allows_bf16());
  }
#endif
}
