#pragma once
// A parallel region whose threads each run a share of one job (the training step's batch shards,
// a decode step's row split), profiled as one caller (core/step_profile.h): under --profile thread
// 0's kernel calls count for all threads, scaled by the work of all over its own, and its wait at
// the region's end for the others is a call of ProfiledKernel::split_wait (equal shares on cores
// that run at different speeds wait there, not in any kernel).
#include "core/parallel.h"
#include "core/step_profile.h"

namespace rfa {

// body(t, nt) on each thread as parallel_region_serial_calls runs it; work_scale(t, nt): the work of
// all the threads over thread t's (only thread 0's is used).
template <typename Scale, typename Body>
void profiled_region_serial_calls(Scale&& work_scale, Body&& body) {
  const bool profiled = step_profile_enabled();
  profile_detail::Stamp first_done;  // thread 0's, when profiled
  parallel_region_serial_calls([&](int t, int nt) {
    const ProfileShard shard(t, work_scale(t, nt));
    body(t, nt);
    if (profiled && t == 0) first_done = profile_detail::now();
  });
  if (profiled) profile_detail::add_wait(ProfiledKernel::split_wait, profile_detail::now().wall_ns - first_done.wall_ns);
}

}  // namespace rfa
