#include <doctest/doctest.h>

#include <time.h>

#include <chrono>

#include "core/step_profile.h"

using namespace rfa;

TEST_CASE("step profile: scopes add to their kernel's row only while enabled") {
  step_profile_enable(false);
  { ProfileScope s(ProfiledKernel::gemm, 10, 20); }
  CHECK(step_profile_row(ProfiledKernel::gemm).calls == 0);
  step_profile_enable(true);
  CHECK(step_profile_enabled());
  for (int i = 0; i < 3; ++i) {
    ProfileScope s(ProfiledKernel::swiglu, 1.5, 100);
  }
  { ProfileScope s(ProfiledKernel::optimizer, 7, 0); }
  const ProfileRow& sw = step_profile_row(ProfiledKernel::swiglu);
  CHECK(sw.calls == 3);
  CHECK(sw.flop == doctest::Approx(4.5));
  CHECK(sw.bytes == doctest::Approx(300));
  CHECK(sw.ms >= 0);
  CHECK(sw.cpu_ms >= 0);
  CHECK(step_profile_row(ProfiledKernel::optimizer).calls == 1);
  CHECK(step_profile_row(ProfiledKernel::gemm).calls == 0);
  step_profile_clear();
  CHECK(step_profile_row(ProfiledKernel::swiglu).calls == 0);
  step_profile_enable(false);
  CHECK_FALSE(step_profile_enabled());
  for (int k = 0; k < kProfiledKernels; ++k) CHECK(profiled_kernel_name(static_cast<ProfiledKernel>(k))[0] != '?');
}

namespace {
double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e3 + double(t.tv_nsec) * 1e-6;
}
// Keeps this thread busy for `ms` of its own CPU time (the wall time may be longer on a busy machine).
void spin_for(double ms) {
  const double start = thread_cpu_ms();
  volatile double x = 0;
  while (thread_cpu_ms() - start < ms) x = x + 1;
}
}  // namespace

TEST_CASE("step profile: a scope inside another counts in its own row only; the rows add up to the outer time") {
  step_profile_enable(true);
  const auto start = std::chrono::steady_clock::now();
  {
    ProfileScope outer(ProfiledKernel::attention_forward, 0, 0);
    spin_for(20);
    {
      ProfileScope inner(ProfiledKernel::output_gate, 0, 0);
      spin_for(10);
      {
        ProfileScope innermost(ProfiledKernel::gemm, 0, 0);
        spin_for(30);
      }
    }
    spin_for(5);
  }
  const double total = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const ProfileRow& a = step_profile_row(ProfiledKernel::attention_forward);
  const ProfileRow& g = step_profile_row(ProfiledKernel::output_gate);
  const ProfileRow& m = step_profile_row(ProfiledKernel::gemm);
  CHECK(m.cpu_ms >= 30);
  CHECK(g.cpu_ms >= 10);
  CHECK(g.cpu_ms < 30);  // without its inner gemm
  CHECK(a.cpu_ms >= 25);
  CHECK(a.cpu_ms < 55);  // without the gate and the gemm
  CHECK(a.ms + g.ms + m.ms == doctest::Approx(total).epsilon(0.02));  // each wall instant in one row
  CHECK(m.ms >= m.cpu_ms * 0.95);
  step_profile_enable(false);
}
