#pragma once
// Where a training step's time goes (`rfa bench train --profile`): each
// instrumented kernel call adds its wall time, floating-point operations and
// bytes moved to its kernel's row. Off unless enabled: then one predictable
// branch per call. A call inside another's scope (the output gate's product inside
// the attention's) counts in its own row only: the outer row gets the time
// outside its inner calls, so the rows add up to the step. The rows are plain
// sums written by the calling thread, and every instrumented call is made from
// the step's one caller thread (the kernels start their own threads inside the
// call), so no locks are needed; enable it only where that holds (the benchmark).
#include <cstdint>

namespace rfa {

enum class ProfiledKernel : int {
  gemm,                // the model's matrix products (oneDNN), fp32 or bf16
  step_products,       // the decode step's batch-invariant fp32 products (kernels/step_gemm.h)
  attention_forward,   // the attention kind's core: RoPE, feature maps, chunked / blockwise products
  attention_backward,
  attention_step,      // the kind's one-token decode step over its rows' states (RoPE, feature maps, state pass)
  short_conv,          // the short convolution on q, k, v (forward and backward; attention.short_conv)
  output_gate,         // the output norm and gate around its product (forward and backward; attention.output_gate)
  rmsnorm,             // forward (with the fused residual add) and backward
  swiglu,
  cross_entropy,
  embedding,
  bf16_copy,           // bf16 copies of operands (train.precision bf16)
  optimizer,           // AdamW
  grad_norm,           // the global norm, clipping and the finiteness checks
  random_features,     // the RFA kinds' random matrices, redrawn every step (model_draw_random)
  grad_sum,            // the batch split's gradient copies summed into the model's (train/batch_shards.h)
  split_wait,          // the batch split's joins (the decode step's row split's): the first shard's thread waiting
                       // for the others (wall time only)
  count
};
inline constexpr int kProfiledKernels = static_cast<int>(ProfiledKernel::count);

struct ProfileRow {
  int64_t calls = 0;
  double ms = 0;     // wall time inside the calls
  double cpu_ms = 0; // CPU time of the whole process inside the calls (all threads): on a shared
                     // machine it counts only the time the cores were ours. Under the batch split
                     // the first shard's thread's own CPU time, times the shards (the process's
                     // clock there would count whatever the other shards ran meanwhile)
  double flop = 0;   // floating-point operations (a multiply-add is 2)
  double bytes = 0;  // bytes read plus written, each operand counted once per call
};

const char* profiled_kernel_name(ProfiledKernel k);

// A matrix product's shape, for the products' own table: C (M, N) = op(A) · op(B), op a
// transpose where trans_a / trans_b (gemm.h's layout).
struct ProductShape {
  bool trans_a = false, trans_b = false;
  int64_t M = 0, N = 0, K = 0;
  bool operator==(const ProductShape&) const = default;
};
struct ProductProfileRow {
  ProductShape shape;
  ProfileRow row;
};
// The first kProfiledShapes distinct shapes a step's products have, in the order first seen
// (a fixed table: the step allocates nothing); products of further shapes sum in
// step_profile_other_shapes(). A product with no shape given counts in the gemm row only.
inline constexpr int kProfiledShapes = 64;
int step_profile_shape_count();
const ProductProfileRow& step_profile_shape(int i);
const ProfileRow& step_profile_other_shapes();

// Also clears the rows. cpu_clocks false: wall time only, cpu_ms left 0 (the CPU clocks are system
// calls, about a microsecond each under a VM: too dear for a decode step's 40 calls of a few µs).
void step_profile_enable(bool on, bool cpu_clocks = true);
void step_profile_clear();
bool step_profile_enabled();
const ProfileRow& step_profile_row(ProfiledKernel k);

namespace profile_detail {
extern bool enabled;
extern bool cpu_clocks;
// The batch split (train/batch_shards.h) on this thread: muted on every shard but the first, whose
// calls count `work_scale` times their operations, bytes and CPU time (the work of all the shards,
// which run side by side on equal rows), its CPU time read from its own thread's clock; not muted,
// 1 and the process's clock elsewhere.
extern thread_local bool muted;
extern thread_local double work_scale;
extern thread_local bool thread_clock;
struct Stamp {
  int64_t wall_ns = -1, cpu_ns = 0;
  int64_t inner_wall_ns = 0, inner_cpu_ns = 0;  // the time of the calls inside scopes, at the start
};
void add(ProfiledKernel k, const Stamp& start, double flop, double bytes, const ProductShape* shape);
Stamp now();
// A wait of `wall_ns` that ended now on the caller's thread outside any call of a kernel (the
// batch split's join): one call of `k`, its wall time, nothing else.
void add_wait(ProfiledKernel k, int64_t wall_ns);
}  // namespace profile_detail

// For the life of a shard's body in the batch split, on its thread: the first of `shards` shards
// is profiled for all of them, the others not at all (the rows stay one caller's). `shards` is the
// work of all the shards over the first's: the decode step's row split gives it the step's rows
// over the first thread's. Out of line, beside the thread_local definitions: inlined into
// profiled_region_serial_calls's OpenMP body (through the extern thread_local's wrapper), GCC 12's
// AddressSanitizer + UBSan build reported its store to work_scale as a store to a null pointer and
// failed 15 unit tests (scripts/test.sh --sanitize); the normal builds ran correctly.
class ProfileShard {
 public:
  ProfileShard(int shard, double shards);
  ~ProfileShard();
  ProfileShard(const ProfileShard&) = delete;
  ProfileShard& operator=(const ProfileShard&) = delete;
};

// Times the enclosing scope as one call of `kernel` doing `flop` operations on `bytes`.
class ProfileScope {
 public:
  ProfileScope(ProfiledKernel kernel, double flop, double bytes)
      : kernel_(kernel), flop_(flop), bytes_(bytes) {
    if (profile_detail::enabled && !profile_detail::muted) start_ = profile_detail::now();
  }
  // A product, also counted in its shape's row.
  ProfileScope(ProductShape shape, double flop, double bytes)
      : kernel_(ProfiledKernel::gemm), flop_(flop), bytes_(bytes), shape_(shape), has_shape_(true) {
    if (profile_detail::enabled && !profile_detail::muted) start_ = profile_detail::now();
  }
  ~ProfileScope() {
    if (start_.wall_ns >= 0) profile_detail::add(kernel_, start_, flop_, bytes_, has_shape_ ? &shape_ : nullptr);
  }
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  ProfiledKernel kernel_;
  double flop_, bytes_;
  ProductShape shape_;
  bool has_shape_ = false;
  profile_detail::Stamp start_;
};

}  // namespace rfa
