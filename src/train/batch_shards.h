#pragma once
// The batch split of a training step (train.thread_split batch, docs/cpu-targets.md): thread t of
// n runs the whole forward and backward of its own rows [B t / n, B (t + 1) / n) of the
// micro-batch, every kernel on that thread alone, into its own activations and, past thread 0,
// its own copy of the gradients (thread 0 writes the model's). After the step's micro-batches
// reduce_grads() sums the copies into the model's gradients, element by element in thread order.
// Against each kernel split over the threads (a fork and a join per kernel and per product, the
// weight gradients' partial sums), a forward or a backward is one fork and one join. The results
// depend on the thread count only, as the kernel split's do (not the same bits as it).
// Everything is allocated in the constructor; the step allocates nothing.
#include <cstdint>
#include <exception>
#include <memory>
#include <vector>

#include "layers/grad_write.h"
#include "model/activations.h"
#include "model/model.h"
#include "model/model_forward.h"
#include "tensor/arena.h"

namespace rfa {

class BatchShards {
 public:
  // The shards of a (B, T) micro-batch over `threads` threads: the pool's (thread_count(), which
  // must not change while this lives), 1 <= threads <= B. Each thread builds (and so first
  // touches) its own activations.
  BatchShards(Model<float>& model, int B, int T, Precision precision, int threads);

  int count() const { return static_cast<int>(acts_.size()); }
  int first_row(int shard) const { return rows_[static_cast<size_t>(shard)]; }
  int rows(int shard) const { return rows_[static_cast<size_t>(shard) + 1] - rows_[static_cast<size_t>(shard)]; }
  Activations<float>& acts(int shard) { return *acts_[static_cast<size_t>(shard)]; }

  // model_forward over the whole (B, T) micro-batch, each shard its rows (no carried state;
  // segment_start (B, T) or null). Returns the mean loss over the targets not ignored (0 if none),
  // summed in row order as model_forward sums it. Throws Error for a token outside the vocabulary.
  double forward(const int32_t* inputs, const int32_t* targets, const float* random, const uint8_t* segment_start);
  // model_backward(loss_scale, write) of the last forward: each shard's gradients into its own copy.
  void backward(const int32_t* inputs, const int32_t* targets, const float* random, double loss_scale,
                GradWrite write);
  // Adds every shard's copy into the model's gradients: once a step, after its last backward.
  void reduce_grads();

  int64_t activation_bytes() const;  // the shards' activations together
  int64_t copy_bytes() const { return copies_.size() * int64_t(sizeof(float)); }  // the gradient copies

 private:
  Model<float>& model_;
  int T_ = 0;
  std::vector<int> rows_;  // (threads + 1) shard t's rows [rows_[t], rows_[t + 1])
  std::vector<std::unique_ptr<Activations<float>>> acts_;
  Arena<float> copies_;  // (threads - 1, P) the gradients of shards 1.. (shard 0 writes the model's)
  std::vector<ModelWeights<float>> views_;  // (threads) each shard's gradient views
  std::vector<float*> bases_;               // (threads) each shard's gradient base
  std::vector<std::exception_ptr> errors_;  // (threads) each_shard's, kept so a step allocates nothing
  int64_t targets_ = 0;                     // targets not ignored in the last forward
};

}  // namespace rfa
