#pragma once
// The engine's view of the model: a fixed number of slots, each one sequence's decoding
// state (its position, recurrent state or KV cache, and last logits). Only the scheduler
// (engine.h) calls it, always from its one thread; nothing here is thread safe.
//
// The implementation (decoder_slots.cpp) is one Decoder<float> whose rows are the slots:
// step() is one (n, C) · (C, N) product per weight matrix over the n stepping slots, and
// prefill_batch() one pass over several prompts' pieces. docs/serving.md, "The backend".
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/model.h"
#include "serve/state_pool.h"

namespace rfa {

struct SlotToken {
  int slot = 0;
  int32_t token = 0;
};

// One slot's piece of a prompt for prefill_batch.
struct SlotPrefill {
  int slot = 0;
  std::span<const int32_t> tokens;
};

// One slot's state copied out: what the state cache and state files hold. The layout of
// `state` is the backend's (state_layout() names it) and must not depend on the batch:
//   RFA kinds: per layer l, S (H, F, Dh+1) of the one sequence;
//   softmax:   per layer l, K (H, position, Dh) then V (H, position, Dh).
struct SlotState {
  int64_t position = 0;        // tokens the state has consumed
  StateFloats state;            // in the state pool's huge pages when it is on (serve/state_pool.h)
  std::vector<float> logits;   // (V) after the last of those tokens
};

struct BackendOptions {
  int slots = 1;               // sequences decoded at once (--parallel)
  int prefill_chunk = 256;     // most tokens per prefill() call (--prefill-chunk)
  int64_t max_positions = 0;   // positions a slot can reach; 0 = no limit (an RFA kind without RoPE)
  Precision precision = Precision::fp32;
  bool release_model_matrices = false;  // the backend is the model's last reader (DecoderOptions'): a server
};

class SequenceBackend {
 public:
  virtual ~SequenceBackend() = default;

  virtual int slot_count() const = 0;
  virtual int vocab() const = 0;
  virtual int prefill_chunk() const = 0;
  virtual int64_t position_limit() const = 0;  // positions a slot can hold; 0 = none
  virtual std::string state_layout() const = 0;

  // A free slot at position 0 with no logits; -1 when every slot is in use.
  virtual int acquire() = 0;
  virtual void release(int slot) = 0;
  virtual int64_t position(int slot) const = 0;

  // Runs 1..prefill_chunk() tokens into the slot; returns the logits (V) after the last.
  virtual const float* prefill(int slot, std::span<const int32_t> tokens) = 0;
  // Several slots' pieces (distinct slots, each 1..prefill_chunk() tokens, together at most
  // 2 * prefill_chunk()), in one pass where the backend can batch them; logits[i] (V) after
  // piece i's last token, valid until the slot runs again. A piece's results are what prefill()
  // gives it alone. Either every piece runs, or it throws (Error) having changed nothing.
  virtual void prefill_batch(std::span<const SlotPrefill> pieces, std::span<const float*> logits) = 0;
  // One token for each listed slot (distinct slots); logits[i] (V) is batch[i]'s next-token
  // logits, valid until the next call. Never allocates.
  virtual void step(std::span<const SlotToken> batch, std::span<const float*> logits) = 0;

  virtual int64_t state_bytes(int slot) const = 0;  // in use now
  virtual void save(int slot, SlotState& out) const = 0;
  // Throws Error when the state does not fit this backend (another layout or position limit).
  virtual void restore(int slot, const SlotState& in) = 0;
};

// Throws Error when the slots cannot fit in memory (core/memory_check.h).
std::unique_ptr<SequenceBackend> sequence_backend_create(Model<float>& model, const BackendOptions& options);

}  // namespace rfa
