#include <doctest/doctest.h>

#include <time.h>

#include <atomic>
#include <chrono>
#include <thread>

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

TEST_CASE("step profile: under the batch split, shard 0 counts for all shards and the others for none") {
  step_profile_enable(true);
  {
    const ProfileShard other(1, 3);
    ProfileScope s(ProfiledKernel::rmsnorm, 10, 20);
  }
  CHECK(step_profile_row(ProfiledKernel::rmsnorm).calls == 0);
  {
    const ProfileShard first(0, 3);
    ProfileScope s(ProfiledKernel::rmsnorm, 10, 20);
  }
  const ProfileRow& row = step_profile_row(ProfiledKernel::rmsnorm);
  CHECK(row.calls == 1);
  CHECK(row.flop == doctest::Approx(30));
  CHECK(row.bytes == doctest::Approx(60));
  { ProfileScope s(ProfiledKernel::rmsnorm, 10, 20); }  // past the shard's body: counted once again
  CHECK(row.calls == 2);
  CHECK(row.flop == doctest::Approx(40));
  step_profile_enable(false);
}

TEST_CASE("step profile: wall clock only leaves the CPU time 0; a shard's work scale need not be whole") {
  step_profile_enable(true, false);
  {
    const ProfileShard first(0, 2.5);  // the decode step's row split: 12 rows, the first thread's 5 (wall only)
    ProfileScope s(ProfiledKernel::attention_step, 4, 8);
  }
  const ProfileRow& row = step_profile_row(ProfiledKernel::attention_step);
  CHECK(row.calls == 1);
  CHECK(row.flop == doctest::Approx(10));
  CHECK(row.bytes == doctest::Approx(20));
  CHECK(row.ms >= 0);
  CHECK(row.cpu_ms == 0);
  step_profile_enable(true);  // the CPU clocks back
  {
    ProfileScope s(ProfiledKernel::attention_step, 1, 1);
    volatile double x = 0;
    for (int i = 0; i < 2000000; ++i) x = x + 1;
  }
  CHECK(step_profile_row(ProfiledKernel::attention_step).cpu_ms > 0);
  step_profile_enable(false);
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

TEST_CASE("step profile: under the batch split, shard 0's CPU time is its own thread's, times the shards") {
  // Another thread busy beside the shard would be in the process's clock: with it, the row would read
  // own + other (about 2x here), not 3x own.
  step_profile_enable(true);
  std::atomic<bool> stop{false};
  std::thread other([&] {
    volatile double x = 0;
    while (!stop.load()) x = x + 1;
  });
  double own = 0;
  {
    const ProfileShard first(0, 3);
    const double start = thread_cpu_ms();
    {
      ProfileScope s(ProfiledKernel::swiglu, 0, 0);
      spin_for(30);
    }
    own = thread_cpu_ms() - start;
  }
  stop = true;
  other.join();
  const ProfileRow& row = step_profile_row(ProfiledKernel::swiglu);
  CHECK(row.cpu_ms >= 3 * 30 * 0.97);
  CHECK(row.cpu_ms <= 3 * own * 1.03);
  step_profile_enable(false);
}

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

TEST_CASE("step profile: products by shape, in the order first seen, repeats summed, past the table in 'other'") {
  step_profile_enable(true);
  const ProductShape a{false, true, 768, 128, 128}, b{true, false, 128, 128, 768};
  for (int i = 0; i < 3; ++i) {
    ProfileScope s(a, 10, 1);
  }
  { ProfileScope s(b, 5, 2); }
  { ProfileScope s(ProfiledKernel::gemm, 7, 0); }  // a product without a shape: the gemm row only
  REQUIRE(step_profile_shape_count() == 2);
  CHECK(step_profile_shape(0).shape == a);
  CHECK(step_profile_shape(0).row.calls == 3);
  CHECK(step_profile_shape(0).row.flop == doctest::Approx(30));
  CHECK(step_profile_shape(1).shape == b);
  CHECK(step_profile_shape(1).row.bytes == doctest::Approx(2));
  const ProfileRow& gemm = step_profile_row(ProfiledKernel::gemm);
  CHECK(gemm.calls == 5);
  CHECK(gemm.flop == doctest::Approx(42));
  CHECK(gemm.ms >= step_profile_shape(0).row.ms + step_profile_shape(1).row.ms);
  // Fill the table: the shapes past it sum in one row, nothing is dropped or allocated.
  for (int64_t m = 1; m <= kProfiledShapes; ++m) {
    ProfileScope s(ProductShape{false, false, m, 1, 1}, 1, 0);
  }
  CHECK(step_profile_shape_count() == kProfiledShapes);
  CHECK(step_profile_other_shapes().calls == 2);  // m = kProfiledShapes - 1 and kProfiledShapes
  CHECK(step_profile_row(ProfiledKernel::gemm).calls == 5 + kProfiledShapes);
  step_profile_clear();
  CHECK(step_profile_shape_count() == 0);
  CHECK(step_profile_other_shapes().calls == 0);
  step_profile_enable(false);
  { ProfileScope s(a, 1, 1); }  // off: nothing counted
  CHECK(step_profile_shape_count() == 0);
}

TEST_CASE("step profile: a join's wait is its own row, wall time only, and not an enclosing scope's own time") {
  step_profile_enable(true);
  {
    ProfileScope outer(ProfiledKernel::attention_forward, 0, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    profile_detail::add_wait(ProfiledKernel::split_wait, 15'000'000);  // 15 ms of the 20 were a wait
  }
  const ProfileRow& wait = step_profile_row(ProfiledKernel::split_wait);
  CHECK(wait.calls == 1);
  CHECK(wait.ms == doctest::Approx(15));
  CHECK(wait.cpu_ms == 0);
  CHECK(wait.flop == 0);
  const ProfileRow& outer = step_profile_row(ProfiledKernel::attention_forward);
  CHECK(outer.ms >= 4.9);
  CHECK(outer.ms < 15);  // 20 or more of wall time, less the wait's 15 (a slow machine adds to both)
  step_profile_enable(false);
}
