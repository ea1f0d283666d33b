#include "core/step_profile.h"

#include <time.h>

#include <initializer_list>

namespace rfa {
namespace {

ProfileRow rows[kProfiledKernels];
ProductProfileRow shape_rows[kProfiledShapes];
int shape_count = 0;
ProfileRow other_shapes;

ProfileRow& shape_row(const ProductShape& shape) {
  for (int i = 0; i < shape_count; ++i)
    if (shape_rows[i].shape == shape) return shape_rows[i].row;
  if (shape_count == kProfiledShapes) return other_shapes;
  shape_rows[shape_count].shape = shape;
  return shape_rows[shape_count++].row;
}
// The time of every call that ended so far inside some scope, each counted once: a scope's
// inner calls are the growth of these over its life, and at its end its whole time replaces
// theirs (its own scope, if any, subtracts it whole).
int64_t inner_wall_ns = 0, inner_cpu_ns = 0;

}  // namespace

namespace profile_detail {

bool enabled = false;
bool cpu_clocks = true;
thread_local bool muted = false;
thread_local double work_scale = 1;
thread_local bool thread_clock = false;

int64_t clock_ns(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec;
}

Stamp now() {
  // (No scope spans a shard's edge, so a scope's stamps and the inner sums it reads use one clock.)
  const int64_t cpu = cpu_clocks ? clock_ns(thread_clock ? CLOCK_THREAD_CPUTIME_ID : CLOCK_PROCESS_CPUTIME_ID) : 0;
  return Stamp{clock_ns(CLOCK_MONOTONIC), cpu, inner_wall_ns, inner_cpu_ns};
}

void add(ProfiledKernel k, const Stamp& start, double flop, double bytes, const ProductShape* shape) {
  const Stamp end = now();
  const int64_t wall = end.wall_ns - start.wall_ns, cpu = end.cpu_ns - start.cpu_ns;
  const double own_ms = double(wall - (inner_wall_ns - start.inner_wall_ns)) * 1e-6;
  const double own_cpu_ms = double(cpu - (inner_cpu_ns - start.inner_cpu_ns)) * 1e-6;
  inner_wall_ns = start.inner_wall_ns + wall;
  inner_cpu_ns = start.inner_cpu_ns + cpu;
  for (ProfileRow* r : {&rows[static_cast<int>(k)], shape ? &shape_row(*shape) : nullptr}) {
    if (!r) continue;
    r->calls += 1;
    r->ms += own_ms;
    r->cpu_ms += own_cpu_ms * work_scale;
    r->flop += flop * work_scale;
    r->bytes += bytes * work_scale;
  }
}

void add_wait(ProfiledKernel k, int64_t wall_ns) {
  ProfileRow& r = rows[static_cast<int>(k)];
  r.calls += 1;
  r.ms += double(wall_ns) * 1e-6;
  inner_wall_ns += wall_ns;  // (an enclosing scope's own time excludes it, as an inner call's)
}

}  // namespace profile_detail

ProfileShard::ProfileShard(int shard, double shards) {
  profile_detail::muted = shard != 0;
  profile_detail::work_scale = shards;
  profile_detail::thread_clock = true;
}

ProfileShard::~ProfileShard() {
  profile_detail::muted = false;
  profile_detail::work_scale = 1;
  profile_detail::thread_clock = false;
}

const char* profiled_kernel_name(ProfiledKernel k) {
  switch (k) {
    case ProfiledKernel::gemm: return "gemm";
    case ProfiledKernel::step_products: return "step products";
    case ProfiledKernel::attention_forward: return "attention forward";
    case ProfiledKernel::attention_backward: return "attention backward";
    case ProfiledKernel::attention_step: return "attention step";
    case ProfiledKernel::short_conv: return "short conv";
    case ProfiledKernel::output_gate: return "output gate";
    case ProfiledKernel::rmsnorm: return "rmsnorm";
    case ProfiledKernel::swiglu: return "swiglu";
    case ProfiledKernel::cross_entropy: return "cross-entropy";
    case ProfiledKernel::embedding: return "embedding";
    case ProfiledKernel::bf16_copy: return "bf16 copies";
    case ProfiledKernel::optimizer: return "adamw";
    case ProfiledKernel::grad_norm: return "grad norm/clip";
    case ProfiledKernel::random_features: return "random features";
    case ProfiledKernel::grad_sum: return "gradient copies sum";
    case ProfiledKernel::split_wait: return "batch split join";
    case ProfiledKernel::count: break;
  }
  return "?";
}

void step_profile_clear() {
  for (ProfileRow& r : rows) r = ProfileRow{};
  for (ProductProfileRow& r : shape_rows) r = ProductProfileRow{};
  shape_count = 0;
  other_shapes = ProfileRow{};
}

void step_profile_enable(bool on, bool cpu_clocks) {
  step_profile_clear();
  profile_detail::enabled = on;
  profile_detail::cpu_clocks = cpu_clocks;
}

bool step_profile_enabled() { return profile_detail::enabled; }

const ProfileRow& step_profile_row(ProfiledKernel k) { return rows[static_cast<int>(k)]; }

int step_profile_shape_count() { return shape_count; }
const ProductProfileRow& step_profile_shape(int i) { return shape_rows[i]; }
const ProfileRow& step_profile_other_shapes() { return other_shapes; }

}  // namespace rfa
