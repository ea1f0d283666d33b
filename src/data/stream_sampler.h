#pragma once
// Training batches for stateful training (train.stateful): the split is cut into
// S = B * micro_batches contiguous streams, the classic recurrent-LM batching.
// Stream σ = micro * B + b covers tokens [floor(σ N / S), floor((σ+1) N / S));
// at step s its row reads the window of T+1 tokens starting T*s tokens into the
// stream, modulo the stream's whole windows (the stream wraps at its end, where
// the text jumps back to the stream's start: the carried state crosses it like a
// document boundary). A batch is a pure function of (step, micro): exact resume.
#include <cstdint>

#include "data/batch_sampler.h"
#include "data/token_file.h"

namespace rfa {

class StreamSampler {
 public:
  // Throws Error if a stream is shorter than T+1 tokens, naming the keys that shrink the streams.
  StreamSampler(const TokenSplit& split, int batch_size, int context_length, int micro_batches);

  // First token of stream (micro, b) in the split.
  int64_t stream_begin(int micro, int b) const;
  // Tokens the stream's windows cycle through: its whole windows of T (plus one target token).
  int64_t stream_period(int micro, int b) const;
  // Split index of the first input token of row b of (step, micro).
  int64_t offset(int64_t step, int micro, int b) const;

  // inputs[b, t] = split[offset + t], targets[b, t] = split[offset + t + 1].
  void sample(int64_t step, int micro, int32_t* inputs, int32_t* targets) const;  // (B, T), (B, T)
  void sample(int64_t step, int micro, TokenBatch& out) const;

  int batch_size() const { return B_; }
  int context_length() const { return T_; }
  int micro_batches() const { return A_; }

 private:
  TokenSplit split_;
  int B_, T_, A_;
};

}  // namespace rfa
