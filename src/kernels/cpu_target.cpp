#include "kernels/cpu_target.h"

#include <fmt/format.h>

#include <cstdlib>
#include <string_view>

#if defined(__aarch64__)
#include <sys/auxv.h>  // getauxval, and glibc's HWCAP_* and HWCAP2_* values
#endif

#include "core/error.h"
#include "kernels/gemm.h"
#include "kernels/vector_math.h"

#ifndef RFA_ARCH_NAME
#define RFA_ARCH_NAME "unknown"
#endif

namespace rfa {
namespace {

struct Feature {
  bool compiled;     // the build uses it (the compiler's predefined macro)
  const char* name;  // __builtin_cpu_supports's name, also /proc/cpuinfo's (mostly)
};

#if defined(__x86_64__)
// The features a compiler enables for x86-64-v2..v4 and the AVX-512 extensions of
// recent cores; a -march=native build uses whichever its machine had.
const Feature kFeatures[] = {
#define RFA_FEATURE(macro, name) {macro, name}
#ifdef __SSE4_2__
    RFA_FEATURE(true, "sse4.2"),
#endif
#ifdef __POPCNT__
    RFA_FEATURE(true, "popcnt"),
#endif
#ifdef __AVX__
    RFA_FEATURE(true, "avx"),
#endif
#ifdef __AVX2__
    RFA_FEATURE(true, "avx2"),
#endif
#ifdef __FMA__
    RFA_FEATURE(true, "fma"),
#endif
#ifdef __BMI2__
    RFA_FEATURE(true, "bmi2"),
#endif
#ifdef __F16C__
    RFA_FEATURE(true, "f16c"),
#endif
#ifdef __AVX512F__
    RFA_FEATURE(true, "avx512f"),
#endif
#ifdef __AVX512BW__
    RFA_FEATURE(true, "avx512bw"),
#endif
#ifdef __AVX512DQ__
    RFA_FEATURE(true, "avx512dq"),
#endif
#ifdef __AVX512VL__
    RFA_FEATURE(true, "avx512vl"),
#endif
#ifdef __AVX512CD__
    RFA_FEATURE(true, "avx512cd"),
#endif
#ifdef __AVX512VNNI__
    RFA_FEATURE(true, "avx512vnni"),
#endif
#ifdef __AVX512BF16__
    RFA_FEATURE(true, "avx512bf16"),
#endif
#ifdef __AVX512FP16__
    RFA_FEATURE(true, "avx512fp16"),
#endif
#ifdef __AVX512VBMI__
    RFA_FEATURE(true, "avx512vbmi"),
#endif
#undef RFA_FEATURE
    {false, ""},  // keeps the array non-empty
};
bool cpu_has(const char* name) {
  // __builtin_cpu_supports needs a literal per name; compare against the few we list.
#define RFA_CHECK(lit) \
  if (std::string_view(name) == lit) return __builtin_cpu_supports(lit);
  RFA_CHECK("sse4.2") RFA_CHECK("popcnt") RFA_CHECK("avx") RFA_CHECK("avx2") RFA_CHECK("fma") RFA_CHECK("bmi2")
  RFA_CHECK("f16c") RFA_CHECK("avx512f") RFA_CHECK("avx512bw") RFA_CHECK("avx512dq") RFA_CHECK("avx512vl")
  RFA_CHECK("avx512cd") RFA_CHECK("avx512vnni") RFA_CHECK("avx512bf16") RFA_CHECK("avx512fp16")
  RFA_CHECK("avx512vbmi")
#undef RFA_CHECK
  return true;
}
#elif defined(__aarch64__)
// arm64: Advanced SIMD (NEON) and FMA are part of armv8-a itself; what -march may add beyond it
// (armv8.2-a+..., native on a newer core), checked against the kernel's hwcaps (names as in
// /proc/cpuinfo's Features line).
const Feature kFeatures[] = {
#define RFA_FEATURE(macro, name) {macro, name}
#ifdef __ARM_FEATURE_ATOMICS
    RFA_FEATURE(true, "atomics"),
#endif
#ifdef __ARM_FEATURE_FP16_VECTOR_ARITHMETIC
    RFA_FEATURE(true, "asimdhp"),
#endif
#ifdef __ARM_FEATURE_DOTPROD
    RFA_FEATURE(true, "asimddp"),
#endif
#ifdef __ARM_FEATURE_SVE
    RFA_FEATURE(true, "sve"),
#endif
#ifdef __ARM_FEATURE_SVE2
    RFA_FEATURE(true, "sve2"),
#endif
#ifdef __ARM_FEATURE_MATMUL_INT8
    RFA_FEATURE(true, "i8mm"),
#endif
#ifdef __ARM_FEATURE_BF16_VECTOR_ARITHMETIC
    RFA_FEATURE(true, "bf16"),
#endif
#undef RFA_FEATURE
    {false, ""},  // keeps the array non-empty
};
bool cpu_has(const char* name) {
  const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
  const std::string_view n(name);
  if (n == "atomics") return hw & HWCAP_ATOMICS;
  if (n == "asimdhp") return hw & HWCAP_ASIMDHP;
  if (n == "asimddp") return hw & HWCAP_ASIMDDP;
  if (n == "sve") return hw & HWCAP_SVE;
  if (n == "sve2") return hw2 & HWCAP2_SVE2;
  if (n == "i8mm") return hw2 & HWCAP2_I8MM;
  if (n == "bf16") return hw2 & HWCAP2_BF16;
  return true;
}
#endif

// The level oneDNN may dispatch to, matching the build's own vectors.
GemmIsa gemm_isa_for_build() {
  if (std::string_view(RFA_ARCH_NAME) == "native") return GemmIsa::any;
#if defined(__AVX512F__)
  return GemmIsa::avx512;
#elif defined(__AVX2__)
  return GemmIsa::avx2;
#elif defined(__x86_64__)
  return GemmIsa::sse41;
#else
  return GemmIsa::any;
#endif
}

const char* vector_isa_text() {
#if defined(__AVX512F__)
  return "AVX-512";
#elif defined(__AVX2__) && defined(__FMA__)
  return "AVX2+FMA";
#elif defined(__AVX__)
  return "AVX";
#elif defined(__aarch64__)
  return "NEON";
#elif defined(__SSE2__)
  return "SSE2";
#else
  return "generic";
#endif
}

}  // namespace

const char* cpu_target_name() { return RFA_ARCH_NAME; }

std::string cpu_target_description() {
  return fmt::format("{}: {} vectors of {} bytes ({} floats), {} registers; oneDNN runs {}", cpu_target_name(),
                     vector_isa_text(), kVectorBytes, kVectorBytes / 4, kVectorRegisters, gemm_isa_effective());
}

std::string cpu_target_vectors() { return fmt::format("{}, {}-byte vectors", vector_isa_text(), kVectorBytes); }

std::string cpu_target_missing() {
  std::string missing;
#if defined(__x86_64__) || defined(__aarch64__)
  for (const Feature& f : kFeatures)
    if (f.compiled && !cpu_has(f.name)) {
      if (!missing.empty()) missing += ' ';
      missing += f.name;
    }
#endif
  return missing;
}

// The level to suggest for a binary that runs on every machine of this architecture.
#if defined(__aarch64__)
#define RFA_COMMON_LEVEL "armv8-a"
#else
#define RFA_COMMON_LEVEL "x86-64-v3"
#endif

void cpu_target_apply() {
  const std::string missing = cpu_target_missing();
  if (!missing.empty())
    fail("this rfa was built for {} ({} vectors), but this CPU lacks {}; rebuild for it with "
         "`RFA_ARCH=native scripts/build.sh` in a fresh build directory, or for a level every machine has "
         "(e.g. RFA_ARCH=" RFA_COMMON_LEVEL "; docs/cpu-targets.md)",
         cpu_target_name(), vector_isa_text(), missing);
  if (std::getenv("ONEDNN_MAX_CPU_ISA") || std::getenv("DNNL_MAX_CPU_ISA")) return;  // the user's choice
  gemm_isa_cap(gemm_isa_for_build());
}

std::string cpu_kernels_identity() {
  std::string features;
#if defined(__x86_64__) || defined(__aarch64__)
  for (const Feature& f : kFeatures)
    if (f.compiled) {
      if (!features.empty()) features += ',';
      features += f.name;
    }
#endif
  return fmt::format("rfa {} {} W{} [{}] / oneDNN {}", cpu_target_name(), vector_isa_text(), kVectorBytes / 4,
                     features, gemm_isa_effective());
}

}  // namespace rfa
