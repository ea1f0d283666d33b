#pragma once
// The instruction set this binary's own kernels were compiled for (CMake's
// RFA_ARCH: native, x86-64-v2, x86-64-v3, x86-64-v4, or a cross target), and the
// start-up checks that go with it:
//   - the CPU must have every instruction set the build uses (else an Error
//     naming the build and the fix, instead of SIGILL in the first kernel);
//   - oneDNN is held to the same level (unless the user set ONEDNN_MAX_CPU_ISA),
//     so that a build for x86-64-v3 runs AVX2 code throughout whatever machine
//     runs it: the AVX2 path can be measured on an AVX-512 machine, and ranks of
//     one build on mixed machines run the same products (docs/cpu-targets.md).
#include <string>

namespace rfa {

const char* cpu_target_name();         // RFA_ARCH as built: "native", "x86-64-v3", ...
std::string cpu_target_description();  // "x86-64-v3: AVX2+FMA vectors of 32 bytes (8 floats), 16 registers; oneDNN runs avx2"
std::string cpu_target_vectors();      // "AVX2+FMA, 32-byte vectors"

// The instruction sets the build was compiled with that this CPU lacks ("" = none).
std::string cpu_target_missing();

// Start-up, before any kernel runs: throws Error when cpu_target_missing() is not
// empty, then caps oneDNN at the build's level (a no-op for native builds, when
// ONEDNN_MAX_CPU_ISA or DNNL_MAX_CPU_ISA is set, or after oneDNN built a kernel).
void cpu_target_apply();

// What processes must share to compute bit-identical results: the build's target,
// its vector width, the CPU features it was compiled for, and the ISA oneDNN runs.
// MPI ranks compare it before training (dist/dist.h).
std::string cpu_kernels_identity();

}  // namespace rfa
