#include "train/train_streams.h"

#include <algorithm>
#include <cstring>

#include "attention/attention_core.h"
#include "core/error.h"
#include "data/batch_sampler.h"
#include "dist/dist.h"
#include "train/train_session.h"

namespace rfa {
namespace {

constexpr const char* kOffsetsName = "stream.offsets";
constexpr const char* kStateName = "stream.state";

const Tensor& require(const SafetensorsFile& file, const char* name, const std::string& source) {
  const Tensor* t = file.find(name);
  if (!t) fail("{}: no tensor {}", source, name);
  return *t;
}

}  // namespace

StreamCheckpoint::StreamCheckpoint(TrainSession& session, const StreamSampler& streams)
    : session_(session), streams_(streams), slot_(session.carry_slot()) {
  const ModelSpec& s = session.model().spec;
  const int A = streams.micro_batches(), B = streams.batch_size();
  RFA_ASSERT(slot_ > 0 && A == session.config().train.grad_accum * dist_size(),
             "stream checkpoint: carry slot {}, {} micro-batches", slot_, A);
  // Layers alike: (A, L, B, carry shape); else every layer's (B, carry shape) one after another, flat
  // (also with a short convolution, whose history follows the kind's B rows: attention_carry_shape).
  shape_ = {A, slot_};
  if (s.attn_uniform() && s.attn[0].short_conv == 0) {
    shape_ = {A, s.L, B};
    for (int64_t d : attention_carry_shape(s.attn[0])) shape_.push_back(d);  // RFA kinds (H, F, Dh+1)
  }
  state_ = Arena<float>(int64_t(A) * slot_);
  offsets_ = Arena<int64_t>(int64_t(A) * B);
}

double StreamCheckpoint::bytes(int64_t carry_slot, int micro_batches, int batch_size) {
  return double(micro_batches) * (double(carry_slot) * sizeof(float) + double(batch_size) * sizeof(int64_t));
}

void StreamCheckpoint::gather(int64_t next_step) {
  const int ranks = dist_size(), rank = dist_rank();
  const int A = streams_.micro_batches(), B = streams_.batch_size();
  // Global micro-batch g = m * ranks + r is rank r's local micro-batch m (batch_global_micro).
  for (int g = 0; g < A; ++g) {
    const int owner = g % ranks, local = g / ranks;
    float* dst = state_.data() + int64_t(g) * slot_;
    if (owner == rank) std::memcpy(dst, session_.carry_state() + local * slot_, sizeof(float) * size_t(slot_));
    dist_broadcast(dst, int64_t(sizeof(float)) * slot_, owner);
    for (int b = 0; b < B; ++b) offsets_.data()[int64_t(g) * B + b] = streams_.offset(next_step, g, b);
  }
}

std::vector<TensorRef> StreamCheckpoint::refs() const {
  const std::vector<int64_t> offsets_shape = {streams_.micro_batches(), streams_.batch_size()};
  return {TensorRef{kOffsetsName, DType::I64, offsets_shape, offsets_.data()},
          TensorRef{kStateName, DType::F32, shape_, state_.data()}};
}

std::vector<TensorSpec> StreamCheckpoint::specs() const {
  const std::vector<int64_t> offsets_shape = {streams_.micro_batches(), streams_.batch_size()};
  return {TensorSpec{kOffsetsName, DType::I64, offsets_shape}, TensorSpec{kStateName, DType::F32, shape_}};
}

void StreamCheckpoint::load(const SafetensorsFile& file, int64_t step, const std::string& source) {
  const int ranks = dist_size(), rank = dist_rank();
  const int A = streams_.micro_batches(), B = streams_.batch_size();
  const Tensor& offsets = require(file, kOffsetsName, source);
  for (int g = 0; g < A; ++g)
    for (int b = 0; b < B; ++b) {
      int64_t saved = 0;
      std::memcpy(&saved, offsets.bytes.data() + (size_t(g) * B + b) * sizeof(int64_t), sizeof(int64_t));
      const int64_t now = streams_.offset(step, g, b);
      if (saved != now)
        fail("{}: stream {} (micro-batch {}, row {}) continues at token {} of the train split, but the token data "
             "cuts it to continue at {}: the token file or data.val_fraction changed since the checkpoint; resume "
             "with the run's own token data",
             source, int64_t(g) * B + b, g, b, saved, now);
    }
  tensor_copy_to(require(file, kStateName, source), state_.data(), int64_t(A) * slot_);
  for (int m = 0; m * ranks + rank < A; ++m)
    std::memcpy(session_.carry_state() + m * slot_, state_.data() + int64_t(m * ranks + rank) * slot_,
                sizeof(float) * size_t(slot_));
}

}  // namespace rfa
