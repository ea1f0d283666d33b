// SequenceBackend over one Decoder<float> whose rows are the slots (sequence_backend.h):
// each row at its own position; a tick's prompt pieces prefilled in one pass
// (Decoder::prefill_pieces; prefill buffers of 2 x prefill_chunk rows) and its tokens one
// batched step (Decoder::step_rows), where the weight products are (n, C) x (C, N) matrix
// products over the n stepping slots.
#include <algorithm>
#include <cstring>

#include "attention/attention_core.h"
#include "config/config_enums.h"
#include "core/error.h"
#include "core/memory_check.h"
#include "core/parallel.h"
#include "decode/decode_memory.h"
#include "decode/decoder.h"
#include "serve/sequence_backend.h"

namespace rfa {
namespace {

DecoderOptions decoder_options(const BackendOptions& o) {
  DecoderOptions d;
  d.batch = o.slots;
  // A tick's pieces (engine.h: up to 2 x prefill_chunk tokens) in one prefill; a piece is at most
  // prefill_chunk tokens.
  d.prefill_rows = std::min(2, o.slots);
  d.max_segment = o.prefill_chunk;
  d.max_positions = o.max_positions;
  d.window = 0;  // softmax: a linear cache of max_positions, bounded by the context
  d.precision = o.precision;
  d.release_model_matrices = o.release_model_matrices;
  return d;
}

class DecoderSlots final : public SequenceBackend {
 public:
  DecoderSlots(Model<float>& model, const BackendOptions& o)
      : model_(model), options_(o), decoder_(model, decoder_options(o)) {
    in_use_.assign(static_cast<size_t>(o.slots), false);
    pieces_.reserve(static_cast<size_t>(o.slots));
    rows_.assign(static_cast<size_t>(o.slots), 0);
    tokens_.assign(static_cast<size_t>(o.slots), 0);
  }

  int slot_count() const override { return options_.slots; }
  int vocab() const override { return model_.spec.V; }
  int prefill_chunk() const override { return options_.prefill_chunk; }
  int64_t position_limit() const override { return options_.max_positions; }

  // The layers' state tensors, one row's, "pos" for the axis positions fill: a state saved by
  // another model shape or kind is refused by this string (state_files.cpp).
  std::string state_layout() const override {
    std::string out = fmt::format("L={}", model_.spec.L);
    for (const AttentionState<float>& st : decoder_.attention_states()) {
      out += fmt::format("; {}", enum_name(st.spec().kind));
      for (const AttentionStateTensor& t : st.tensors()) {
        out += " " + t.name + "(";
        for (size_t d = 0; d < t.shape.size(); ++d)
          out += (d ? "," : "") + (int(d) == t.position_axis ? std::string("pos") : std::to_string(t.shape[d]));
        out += ")";
      }
    }
    return out;
  }

  int acquire() override {
    for (size_t i = 0; i < in_use_.size(); ++i) {
      if (in_use_[i]) continue;
      decoder_.reset_row(static_cast<int>(i));
      in_use_[i] = true;
      return static_cast<int>(i);
    }
    return -1;
  }

  void release(int slot) override { in_use_[checked(slot)] = false; }
  int64_t position(int slot) const override { return decoder_.position(static_cast<int>(checked(slot))); }

  const float* prefill(int slot, std::span<const int32_t> tokens) override {
    RFA_ASSERT(!tokens.empty() && static_cast<int>(tokens.size()) <= options_.prefill_chunk, "prefill of {} tokens",
               tokens.size());
    const int b = static_cast<int>(checked(slot));
    decoder_.prefill_row(b, tokens.data(), static_cast<int>(tokens.size()));
    return decoder_.row_logits(b);
  }

  void prefill_batch(std::span<const SlotPrefill> pieces, std::span<const float*> logits) override {
    RFA_ASSERT(pieces.size() == logits.size() && pieces.size() <= rows_.size(), "{} pieces, {} logits, {} slots",
               pieces.size(), logits.size(), rows_.size());
    if (pieces.empty()) return;
    // bf16's prefill products (oneDNN's) are not batch-invariant: there each piece runs alone.
    if (pieces.size() == 1 || !decoder_.prefill_batch_invariant()) {
      for (const SlotPrefill& p : pieces)  // all checked before any runs: a throw changes nothing
        decoder_.check_prefill_row(static_cast<int>(checked(p.slot)), p.tokens.data(),
                                   static_cast<int>(p.tokens.size()));
      for (size_t i = 0; i < pieces.size(); ++i) logits[i] = prefill(pieces[i].slot, pieces[i].tokens);
      return;
    }
    pieces_.clear();  // reserved for every slot: no allocation
    for (const SlotPrefill& p : pieces) {
      RFA_ASSERT(!p.tokens.empty() && static_cast<int>(p.tokens.size()) <= options_.prefill_chunk,
                 "prefill of {} tokens", p.tokens.size());
      pieces_.push_back({static_cast<int>(checked(p.slot)), p.tokens.data(), static_cast<int>(p.tokens.size())});
    }
    decoder_.prefill_pieces(pieces_);
    for (size_t i = 0; i < pieces.size(); ++i) logits[i] = decoder_.row_logits(pieces_[i].row);
  }

  void step(std::span<const SlotToken> batch, std::span<const float*> logits) override {
    RFA_ASSERT(batch.size() == logits.size() && batch.size() <= rows_.size(), "{} tokens, {} logits, {} slots",
               batch.size(), logits.size(), rows_.size());
    if (batch.empty()) return;
    const int n = static_cast<int>(batch.size());
    for (int i = 0; i < n; ++i) {
      rows_[size_t(i)] = static_cast<int>(checked(batch[size_t(i)].slot));
      tokens_[size_t(i)] = batch[size_t(i)].token;
    }
    const float* out = decoder_.step_rows(rows_.data(), n, tokens_.data());
    for (int i = 0; i < n; ++i) logits[size_t(i)] = out + int64_t(i) * model_.spec.V;
  }

  int64_t state_bytes(int slot) const override {
    return decoder_.row_state_size(position(slot)) * int64_t(sizeof(float));
  }

  void save(int slot, SlotState& out) const override {
    const int b = static_cast<int>(checked(slot));
    const float* logits = decoder_.row_logits(b);
    RFA_ASSERT(logits != nullptr, "saving slot {} before anything was decoded", slot);
    out.position = decoder_.position(b);
    out.state.resize(static_cast<size_t>(decoder_.row_state_size(out.position)));
    decoder_.row_state_save(b, out.state.data());
    out.logits.assign(logits, logits + model_.spec.V);
  }

  void restore(int slot, const SlotState& in) override {
    const int b = static_cast<int>(checked(slot));
    if (options_.max_positions > 0 && in.position > options_.max_positions)
      fail("a state at position {} does not fit this server's {} positions", in.position, options_.max_positions);
    const int64_t want = decoder_.row_state_size(in.position);
    if (static_cast<int64_t>(in.state.size()) != want || static_cast<int>(in.logits.size()) != model_.spec.V)
      fail("a state of {} values and {} logits does not fit this model ({} values and {} logits at position {})",
           in.state.size(), in.logits.size(), want, model_.spec.V, in.position);
    decoder_.row_state_restore(b, in.position, in.state.data(), in.logits.data());
  }

 private:
  size_t checked(int slot) const {
    RFA_ASSERT(slot >= 0 && slot < options_.slots, "slot {} of {}", slot, options_.slots);
    return static_cast<size_t>(slot);
  }

  Model<float>& model_;
  BackendOptions options_;
  Decoder<float> decoder_;
  std::vector<bool> in_use_;
  std::vector<int> rows_;         // (slots) a step's rows
  std::vector<int32_t> tokens_;   // (slots) a step's tokens
  std::vector<Decoder<float>::RowTokens> pieces_;  // a prefill_batch's pieces
};

}  // namespace

std::unique_ptr<SequenceBackend> sequence_backend_create(Model<float>& model, const BackendOptions& o) {
  if (o.slots < 1) fail("--parallel {} must be at least 1", o.slots);
  if (o.prefill_chunk < 1) fail("--prefill-chunk {} must be at least 1", o.prefill_chunk);
  const MemoryEstimate need = memory_estimate_decoder(
      model.spec, decoder_options(o), thread_count(), fmt::format("--prefill-chunk ({})", o.prefill_chunk),
      fmt::format("--ctx-size ({}), --parallel ({})", o.max_positions, o.slots));
  memory_require(need, fmt::format("serving {} concurrent sequences", o.slots));
  return std::make_unique<DecoderSlots>(model, o);
}

}  // namespace rfa
