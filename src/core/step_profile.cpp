#include "core/step_profile.h"

#include <time.h>

namespace rfa {
namespace {

ProfileRow rows[kProfiledKernels];
// The time of every call that ended so far inside some scope, each counted once: a scope's
// inner calls are the growth of these over its life, and at its end its whole time replaces
// theirs (its own scope, if any, subtracts it whole).
int64_t inner_wall_ns = 0, inner_cpu_ns = 0;

}  // namespace

namespace profile_detail {

bool enabled = false;

int64_t clock_ns(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec;
}

Stamp now() {
  return Stamp{clock_ns(CLOCK_MONOTONIC), clock_ns(CLOCK_PROCESS_CPUTIME_ID), inner_wall_ns, inner_cpu_ns};
}

void add(ProfiledKernel k, const Stamp& start, double flop, double bytes) {
  const Stamp end = now();
  const int64_t wall = end.wall_ns - start.wall_ns, cpu = end.cpu_ns - start.cpu_ns;
  ProfileRow& r = rows[static_cast<int>(k)];
  r.calls += 1;
  r.ms += double(wall - (inner_wall_ns - start.inner_wall_ns)) * 1e-6;
  r.cpu_ms += double(cpu - (inner_cpu_ns - start.inner_cpu_ns)) * 1e-6;
  inner_wall_ns = start.inner_wall_ns + wall;
  inner_cpu_ns = start.inner_cpu_ns + cpu;
  r.flop += flop;
  r.bytes += bytes;
}

}  // namespace profile_detail

const char* profiled_kernel_name(ProfiledKernel k) {
  switch (k) {
    case ProfiledKernel::gemm: return "gemm";
    case ProfiledKernel::attention_forward: return "attention forward";
    case ProfiledKernel::attention_backward: return "attention backward";
    case ProfiledKernel::short_conv: return "short conv";
    case ProfiledKernel::output_gate: return "output gate";
    case ProfiledKernel::rmsnorm: return "rmsnorm";
    case ProfiledKernel::swiglu: return "swiglu";
    case ProfiledKernel::cross_entropy: return "cross-entropy";
    case ProfiledKernel::embedding: return "embedding";
    case ProfiledKernel::bf16_copy: return "bf16 copies";
    case ProfiledKernel::optimizer: return "adamw";
    case ProfiledKernel::grad_norm: return "grad norm/clip";
    case ProfiledKernel::count: break;
  }
  return "?";
}

void step_profile_clear() {
  for (ProfileRow& r : rows) r = ProfileRow{};
}

void step_profile_enable(bool on) {
  step_profile_clear();
  profile_detail::enabled = on;
}

bool step_profile_enabled() { return profile_detail::enabled; }

const ProfileRow& step_profile_row(ProfiledKernel k) { return rows[static_cast<int>(k)]; }

}  // namespace rfa
