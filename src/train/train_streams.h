#pragma once
// Stateful training's part of a checkpoint (train.stateful, docs/long-context.md):
// stream.safetensors holds, over the A = ranks x grad_accum global micro-batches
// (batch_global_micro order, so a resume may split A differently over ranks):
//   "stream.offsets" I64 (A, B): the split index where each stream's next window starts
//   "stream.state"   F32 (A, L, B, H, F, Dh+1): the states each row enters the next step with (a
//                    model whose layers differ: (A, slot), every layer's (B, carry shape) in turn)
// The offsets are a function of the step (data/stream_sampler.h); saving them lets a
// resume prove that the token data still cuts into the same streams.
#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint/safetensors.h"
#include "data/stream_sampler.h"
#include "tensor/arena.h"

namespace rfa {

class TrainSession;

class StreamCheckpoint {
 public:
  // Allocates the gathered tensors (every rank: they arrive by broadcast).
  StreamCheckpoint(TrainSession& session, const StreamSampler& streams);

  // Collective: every rank calls it at the same point. Gathers every rank's carried states
  // and the offsets of step `next_step` (the first step a resume would take).
  void gather(int64_t next_step);
  std::vector<TensorRef> refs() const;  // after gather(): what rank 0 writes
  std::vector<TensorSpec> specs() const;

  // Copies this rank's micro-batches' states from a loaded file (validated against
  // specs()) into the session. Throws Error naming `source` if the saved offsets are not
  // the streams' offsets at `step` (the token data changed since the checkpoint).
  void load(const SafetensorsFile& file, int64_t step, const std::string& source);

  // Bytes of the gathered tensors: for the memory estimate.
  static double bytes(int64_t carry_slot, int micro_batches, int batch_size);

 private:
  TrainSession& session_;
  const StreamSampler& streams_;
  int64_t slot_ = 0;           // L * B * H * F * (Dh+1)
  std::vector<int64_t> shape_;  // (A, L, B, H, F, Dh+1), or (A, slot)
  Arena<float> state_;          // (A, slot)
  Arena<int64_t> offsets_;      // (A, B)
};

}  // namespace rfa
