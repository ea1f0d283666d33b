#include "data/stream_sampler.h"

#include "core/error.h"

namespace rfa {

StreamSampler::StreamSampler(const TokenSplit& split, int batch_size, int context_length, int micro_batches)
    : split_(split), B_(batch_size), T_(context_length), A_(micro_batches) {
  if (B_ <= 0 || T_ <= 0 || A_ <= 0)
    fail("stream sampler: batch size {}, context length {} and micro-batches {} must be > 0", B_, T_, A_);
  const int64_t streams = int64_t(B_) * A_;
  const int64_t shortest = split.size() / streams;  // floor: every stream has at least this many tokens
  if (shortest < int64_t(T_) + 1)
    fail("train.stateful: {} tokens cut into train.batch_size x train.grad_accum = {} x {} streams leave {} tokens "
         "per stream, fewer than model.context_length + 1 = {}; lower train.batch_size, train.grad_accum or "
         "model.context_length, or use a larger corpus",
         split.size(), B_, A_, shortest, T_ + 1);
}

int64_t StreamSampler::stream_begin(int micro, int b) const {
  const int64_t streams = int64_t(B_) * A_, sigma = int64_t(micro) * B_ + b;
  // sigma * N fits: N < 2^40 tokens, sigma < 2^20 rows.
  return sigma * split_.size() / streams;
}

int64_t StreamSampler::stream_period(int micro, int b) const {
  const int64_t len = (b + 1 < B_ ? stream_begin(micro, b + 1)
                                  : (micro + 1 < A_ ? stream_begin(micro + 1, 0) : split_.size())) -
                      stream_begin(micro, b);
  return (len - 1) / T_ * T_;  // whole windows, each needing one token past its end
}

int64_t StreamSampler::offset(int64_t step, int micro, int b) const {
  const int64_t period = stream_period(micro, b);
  return stream_begin(micro, b) + (step % (period / T_)) * T_;
}

void StreamSampler::sample(int64_t step, int micro, int32_t* inputs, int32_t* targets) const {
  for (int b = 0; b < B_; ++b) {
    const int64_t s = offset(step, micro, b);
    split_.copy(s, T_, inputs + static_cast<int64_t>(b) * T_);
    split_.copy(s + 1, T_, targets + static_cast<int64_t>(b) * T_);
  }
}

void StreamSampler::sample(int64_t step, int micro, TokenBatch& out) const {
  RFA_ASSERT(out.batch_size == B_ && out.context_length == T_, "batch is ({}, {}), streams ({}, {})", out.batch_size,
             out.context_length, B_, T_);
  sample(step, micro, out.inputs.data(), out.targets.data());
}

}  // namespace rfa
