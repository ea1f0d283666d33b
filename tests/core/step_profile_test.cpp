#include <doctest/doctest.h>

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
