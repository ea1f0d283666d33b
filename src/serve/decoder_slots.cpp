// SequenceBackend over one Decoder<float> of batch 1 per slot, stepped one after another
// (sequence_backend.h). A slot's decoder is built when the slot is first acquired and kept
// for reuse: at most BackendOptions::slots of them.
#include <cstring>

#include "attention/attention_core.h"
#include "core/error.h"
#include "core/memory_check.h"
#include "core/parallel.h"
#include "decode/decode_memory.h"
#include "decode/decoder.h"
#include "serve/sequence_backend.h"

namespace rfa {
namespace {

class DecoderSlots final : public SequenceBackend {
 public:
  DecoderSlots(Model<float>& model, const BackendOptions& o) : model_(model), options_(o) {
    decoder_options_.batch = 1;
    decoder_options_.max_segment = o.prefill_chunk;
    decoder_options_.max_positions = o.max_positions;
    decoder_options_.window = 0;  // softmax: a linear cache of max_positions, bounded by the context
    decoder_options_.precision = o.precision;
    slots_.resize(static_cast<size_t>(o.slots));
    in_use_.assign(static_cast<size_t>(o.slots), false);
  }

  int slot_count() const override { return options_.slots; }
  int vocab() const override { return model_.spec.V; }
  int prefill_chunk() const override { return options_.prefill_chunk; }
  int64_t position_limit() const override { return options_.max_positions; }

  std::string state_layout() const override {
    const ModelSpec& s = model_.spec;
    if (attention_state_grows(s.attn))
      return fmt::format("softmax kv L={} H={} Dh={}", s.L, s.attn.H, s.attn.Dh);
    Decoder<float>& d = decoder(0);
    const std::vector<int64_t> shape = attention_state_shape(d.attention_states()[0]);
    return fmt::format("rfa S L={} H={} F={} Dh+1={}", s.L, shape[1], shape[2], shape[3]);
  }

  int acquire() override {
    for (size_t i = 0; i < in_use_.size(); ++i) {
      if (in_use_[i]) continue;
      Decoder<float>& d = decoder(static_cast<int>(i));
      d.reset();
      in_use_[i] = true;
      return static_cast<int>(i);
    }
    return -1;
  }

  void release(int slot) override { in_use_[checked(slot)] = false; }
  int64_t position(int slot) const override { return decoder(slot).position(); }

  const float* prefill(int slot, std::span<const int32_t> tokens) override {
    RFA_ASSERT(!tokens.empty() && static_cast<int>(tokens.size()) <= options_.prefill_chunk, "prefill of {} tokens",
               tokens.size());
    Decoder<float>& d = decoder(slot);
    d.prefill(tokens.data(), static_cast<int>(tokens.size()));
    return d.last_logits();
  }

  void step(std::span<const SlotToken> batch, std::span<const float*> logits) override {
    RFA_ASSERT(batch.size() == logits.size(), "{} tokens, {} logits", batch.size(), logits.size());
    for (size_t i = 0; i < batch.size(); ++i) logits[i] = decoder(batch[i].slot).step(&batch[i].token);
  }

  int64_t state_bytes(int slot) const override { return decoder(slot).state_bytes(); }

  void save(int slot, SlotState& out) const override {
    const Decoder<float>& d = decoder(slot);
    RFA_ASSERT(d.last_logits() != nullptr, "saving slot {} before anything was decoded", slot);
    out.position = d.position();
    out.state.resize(static_cast<size_t>(state_floats(d, d.position())));
    float* dst = out.state.data();
    for (const AttentionState<float>& st : d.attention_states()) {
      if (attention_state_grows(model_.spec.attn)) {
        for (const std::vector<float>* kv : {&st.kv.k, &st.kv.v})
          for (int h = 0; h < st.kv.H; ++h) {
            const size_t n = static_cast<size_t>(st.kv.len) * st.kv.Dh;
            std::memcpy(dst, kv->data() + size_t(h) * st.kv.max_len * st.kv.Dh, sizeof(float) * n);
            dst += n;
          }
      } else {
        const size_t n = st.rfa.S.size();
        std::memcpy(dst, attention_state_data(st), sizeof(float) * n);
        dst += n;
      }
    }
    out.logits.assign(d.last_logits(), d.last_logits() + model_.spec.V);
  }

  void restore(int slot, const SlotState& in) override {
    Decoder<float>& d = decoder(slot);
    if (options_.max_positions > 0 && in.position > options_.max_positions)
      fail("a state at position {} does not fit this server's {} positions", in.position, options_.max_positions);
    if (static_cast<int64_t>(in.state.size()) != state_floats(d, in.position) ||
        static_cast<int>(in.logits.size()) != model_.spec.V)
      fail("a state of {} values and {} logits does not fit this model ({} values and {} logits at position {})",
           in.state.size(), in.logits.size(), state_floats(d, in.position), model_.spec.V, in.position);
    d.reset();
    const float* src = in.state.data();
    for (AttentionState<float>& st : d.attention_states()) {
      if (attention_state_grows(model_.spec.attn)) {
        st.kv.len = static_cast<int>(in.position);
        for (std::vector<float>* kv : {&st.kv.k, &st.kv.v})
          for (int h = 0; h < st.kv.H; ++h) {
            const size_t n = static_cast<size_t>(st.kv.len) * st.kv.Dh;
            std::memcpy(kv->data() + size_t(h) * st.kv.max_len * st.kv.Dh, src, sizeof(float) * n);
            src += n;
          }
      } else {
        const size_t n = st.rfa.S.size();
        std::memcpy(attention_state_data(st), src, sizeof(float) * n);
        src += n;
      }
    }
    d.set_position(in.position);
    d.last_logits_restore(in.logits.data());
  }

 private:
  size_t checked(int slot) const {
    RFA_ASSERT(slot >= 0 && slot < options_.slots, "slot {} of {}", slot, options_.slots);
    return static_cast<size_t>(slot);
  }

  Decoder<float>& decoder(int slot) const {
    std::unique_ptr<Decoder<float>>& d = slots_[checked(slot)];
    if (!d) d = std::make_unique<Decoder<float>>(model_, decoder_options_);
    return *d;
  }

  int64_t state_floats(const Decoder<float>& d, int64_t position) const {
    int64_t n = 0;
    for (const AttentionState<float>& st : d.attention_states())
      n += attention_state_grows(model_.spec.attn) ? 2 * int64_t(st.kv.H) * position * st.kv.Dh
                                                   : static_cast<int64_t>(st.rfa.S.size());
    return n;
  }

  Model<float>& model_;
  BackendOptions options_;
  DecoderOptions decoder_options_;
  mutable std::vector<std::unique_ptr<Decoder<float>>> slots_;  // built on first use
  std::vector<bool> in_use_;
};

}  // namespace

std::unique_ptr<SequenceBackend> sequence_backend_create(Model<float>& model, const BackendOptions& o) {
  if (o.slots < 1) fail("--parallel {} must be at least 1", o.slots);
  if (o.prefill_chunk < 1) fail("--prefill-chunk {} must be at least 1", o.prefill_chunk);
  DecoderOptions d;
  d.batch = 1;
  d.max_segment = o.prefill_chunk;
  d.max_positions = o.max_positions;
  d.precision = o.precision;
  const MemoryEstimate one = memory_estimate_decoder(model.spec, d, thread_count(),
                                                     fmt::format("--prefill-chunk ({})", o.prefill_chunk),
                                                     fmt::format("--ctx-size ({})", o.max_positions));
  MemoryEstimate all;
  for (const MemoryPart& p : one.parts)
    all.add(p.name, p.bytes * o.slots, p.keys + fmt::format(", --parallel ({})", o.slots));
  memory_require(all, fmt::format("serving {} concurrent sequences", o.slots));
  return std::make_unique<DecoderSlots>(model, o);
}

}  // namespace rfa
