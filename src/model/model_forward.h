#pragma once
// The whole language model's forward and backward over a (B, T) batch.
#include <cstdint>
#include <type_traits>

#include "layers/grad_write.h"
#include "model/activations.h"
#include "model/model.h"

namespace rfa {

// Stateful training: every layer's state carried between segments, layer after layer, each
// (B, its carry shape) (attention_carry_size; RFA kinds (B, H, F, Dh+1)), or null. `in` null = empty states; `out` may alias `in`.
// pos0: the position of every row's first token in its carried text (the time discount's t,
// attention.time_discount): tokens since the rows' states were last empty.
// segment_start: document boundaries (data.document_boundaries reset), (B, T) nonzero at a
// document's first token, or null: every layer's attention restarts there (an empty state, no
// key before it, positions from 0: AttentionCall::segment_start). It must outlive the backward.
template <typename T>
struct ModelCarry {
  const T* in = nullptr;
  T* out = nullptr;
  int64_t pos0 = 0;
  const uint8_t* segment_start = nullptr;
};

// Runs the forward. `random` is the set of every layer's random matrices to
// use (model.random_step() in training, model.random_fixed() in evaluation;
// ignored for softmax). With targets (B, T) (negative = ignored) it computes
// the cross-entropy and returns the mean loss over the non-ignored targets;
// without targets it stops at the logits and returns 0. `carry`: each RFA layer
// starts from carry.in and leaves its final state in carry.out (stateful training);
// model_backward treats the entering states as constants.
// Throws Error if a token id is outside [0, V).
template <typename T>
double model_forward(Model<T>& model, Activations<T>& acts, const int32_t* inputs, const int32_t* targets,
                     std::type_identity_t<const T*> random, const ModelCarry<T>& carry = {});

// Backward of the last model_forward (same inputs, targets, random): adds
// loss_scale * d(mean loss)/d(params) into model.grads() (accumulate: does not
// zero them), or writes it over whatever they held (overwrite: every tensor,
// bit-identical to zero_grad then accumulate). loss_scale is 1/grad_accum
// under gradient accumulation.
template <typename T>
void model_backward(Model<T>& model, Activations<T>& acts, const int32_t* inputs, const int32_t* targets,
                    std::type_identity_t<const T*> random, double loss_scale = 1.0,
                    GradWrite write = GradWrite::accumulate);

// model_backward with a weight per target instead of loss_scale / count: adds (or writes)
// d(sum_i weights[i] * losses[i])/d(params) over the targets i that are not ignored. For
// losses that weigh each target otherwise, such as DPO's (train/dpo.h).
template <typename T>
void model_backward_weighted(Model<T>& model, Activations<T>& acts, const int32_t* inputs, const int32_t* targets,
                             std::type_identity_t<const T*> random, const double* weights /*(B*T)*/,
                             GradWrite write = GradWrite::accumulate);

// Where a backward writes the parameter gradients: `base` (P) in the model's flat layout and its
// views (model_weights_view). model_backward writes the model's own (model.grads(), model.g);
// the batch split of a training step (train/batch_shards.h) gives each thread its own.
template <typename T>
struct GradTarget {
  T* base = nullptr;
  const ModelWeights<T>* views = nullptr;
};

// model_backward into `target`, every target not ignored weighing `dloss` (d loss / d losses[i]):
// for a part of a batch whose loss is the mean over the whole batch's targets, dloss is
// loss_scale / (the whole batch's count).
template <typename T>
void model_backward_into(Model<T>& model, Activations<T>& acts, GradTarget<T> target, const int32_t* inputs,
                         const int32_t* targets, std::type_identity_t<const T*> random, T dloss,
                         GradWrite write = GradWrite::accumulate);

// Throws Error naming the first token id of inputs (N) outside [0, V).
void model_check_tokens(const ModelSpec& spec, const int32_t* inputs, int64_t N);

}  // namespace rfa
