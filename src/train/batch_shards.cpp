#include "train/batch_shards.h"

#include <algorithm>
#include <exception>

#include "core/error.h"
#include "core/parallel.h"
#include "core/profiled_region.h"
#include "kernels/vector_math.h"

namespace rfa {
namespace {

// body(t) on thread t of the pool's `n` (the shards' count), each with OpenMP's thread count 1 for
// what it calls (every kernel and product runs on the calling thread). An exception inside one
// thread is caught into its slot of `errors` (n, empty) and the first rethrown after the region:
// none may cross its edge.
// Under --profile, shard 0 counts for all and its wait for the others at the join is its own row
// (core/profiled_region.h).
template <typename Body>
void each_shard(int n, std::exception_ptr* errors, Body&& body) {
  profiled_region_serial_calls([n](int, int) { return double(n); }, [&](int t, int nt) {
    try {
      RFA_ASSERT(nt == n, "{} threads for {} shards: the thread count changed", nt, n);
      body(t);
    } catch (...) {
      errors[t] = std::current_exception();
    }
  });
  for (int t = 0; t < n; ++t)
    if (errors[t]) {
      std::exception_ptr e = std::move(errors[t]);
      for (int u = t; u < n; ++u) errors[u] = nullptr;
      std::rethrow_exception(e);
    }
}

}  // namespace

BatchShards::BatchShards(Model<float>& model, int B, int T, Precision precision, int threads)
    : model_(model), T_(T) {
  RFA_ASSERT(threads >= 1 && threads <= B, "{} shards of {} rows", threads, B);
  for (int t = 0; t <= threads; ++t) rows_.push_back(static_cast<int>(partition_begin(B, t, threads)));
  acts_.resize(static_cast<size_t>(threads));
  errors_.resize(static_cast<size_t>(threads));
  each_shard(threads, errors_.data(), [&](int t) {
    acts_[static_cast<size_t>(t)] = std::make_unique<Activations<float>>(model.spec, rows(t), T, precision, 1);
  });
  const int64_t P = model.param_size();
  copies_ = Arena<float>((threads - 1) * P);
  bases_.push_back(model.grads());
  for (int t = 1; t < threads; ++t) bases_.push_back(copies_.data() + (t - 1) * P);
  for (int t = 0; t < threads; ++t)
    views_.push_back(t == 0 ? model.g : model_weights_view(model.spec, model.table, bases_[static_cast<size_t>(t)]));
}

double BatchShards::forward(const int32_t* inputs, const int32_t* targets, const float* random,
                            const uint8_t* segment_start) {
  const int B = rows_.back();
  model_check_tokens(model_.spec, inputs, int64_t(B) * T_);  // before the region: its Error reaches the caller
  each_shard(count(), errors_.data(), [&](int t) {
    const int64_t at = int64_t(first_row(t)) * T_;
    ModelCarry<float> carry;
    carry.segment_start = segment_start ? segment_start + at : nullptr;
    model_forward(model_, acts(t), inputs + at, targets + at, random, carry);
  });
  // The mean as model_forward takes it over the whole batch: rows in order, in double.
  double sum = 0;
  targets_ = 0;
  for (int t = 0; t < count(); ++t) {
    const int64_t at = int64_t(first_row(t)) * T_, n = int64_t(rows(t)) * T_;
    const float* losses = acts(t).losses;
    for (int64_t i = 0; i < n; ++i)
      if (targets[at + i] >= 0) {
        sum += static_cast<double>(losses[i]);
        ++targets_;
      }
  }
  return targets_ > 0 ? sum / static_cast<double>(targets_) : 0.0;
}

void BatchShards::backward(const int32_t* inputs, const int32_t* targets, const float* random, double loss_scale,
                           GradWrite write) {
  // d loss / d losses[i] for the mean over the whole batch's targets (model_backward's)
  const float dloss = targets_ > 0 ? static_cast<float>(loss_scale / static_cast<double>(targets_)) : 0.0f;
  each_shard(count(), errors_.data(), [&](int t) {
    const int64_t at = int64_t(first_row(t)) * T_;
    const size_t i = static_cast<size_t>(t);
    model_backward_into(model_, acts(t), GradTarget<float>{bases_[i], &views_[i]}, inputs + at, targets + at, random,
                        dloss, write);
  });
}

void BatchShards::reduce_grads() {
  const int n = count();
  if (n == 1) return;
  const int64_t P = model_.param_size();
  // reads the model's gradients and n - 1 copies, writes the model's: one add per copy element
  ProfileScope profile(ProfiledKernel::grad_sum, double(n - 1) * double(P), sizeof(float) * double(n + 1) * double(P));
  float* g = model_.grads();
  const float* copies = copies_.data();
  // Blocks of 4096 floats (16 KiB) over the pool; each element g + copy 1 + copy 2 ... in that order.
  constexpr int64_t kBlock = 4096;
  parallel_for((P + kBlock - 1) / kBlock, [&](int64_t b) {
    const int64_t begin = b * kBlock, end = std::min(P, begin + kBlock);
    for (int t = 1; t < n; ++t) {
      const float* c = copies + (t - 1) * P;
      RFA_OMP_SIMD_FULL
      for (int64_t i = begin; i < end; ++i) g[i] += c[i];
    }
  });
}

int64_t BatchShards::activation_bytes() const {
  int64_t bytes = 0;
  for (const auto& a : acts_) bytes += a->bytes();
  return bytes;
}

}  // namespace rfa
