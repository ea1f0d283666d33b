#pragma once
// The language model (LLaMA recipe): token embedding (V, C) -> L pre-norm blocks
// -> final RMSNorm -> LM head (tied to the embedding unless configured) ->
// cross-entropy. Templated over float (training) and double (gradient checks).
//
// Memory: one arena holds the parameters and the gradients (same layout, see
// tensor/param_table.h): [params (P) | grads (P)], and in a bf16 run the bf16
// copies of the weight matrices at the same offsets as a (P) uint16 array. RFA's random matrices are not
// parameters: `random_fixed` (each layer's (H, D, Dh)) is the evaluation/decoding set, drawn
// once at init with step = kFixedRandomStep and stored with the model;
// `random_step` holds the per-training-step draw.
#include <cstdint>
#include <limits>
#include <vector>

#include "attention/attention_core.h"
#include "model/mixed_product.h"
#include "model/model_params.h"
#include "model/model_spec.h"
#include "tensor/arena.h"
#include "tensor/param_table.h"

namespace rfa {

// The step value that keys the fixed evaluation random matrices; training steps never reach it.
inline constexpr uint64_t kFixedRandomStep = std::numeric_limits<uint64_t>::max();

template <typename T>
class Model {
 public:
  // precision bf16 (float models only) adds the bf16 weight copies to the arena.
  explicit Model(const ModelSpec& spec, Precision precision = Precision::fp32);
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  ModelSpec spec;
  ParamTable table;
  std::vector<AttentionCore> attention;  // (L) each layer's, for training and evaluation: RoPE for
                                         // context_length positions
  ModelWeights<T> w;         // views of params()
  ModelWeights<T> g;         // views of grads(), same offsets
  int64_t random_size = 0;   // the layers' random matrices together (0 when no layer draws any)
  Precision precision = Precision::fp32;
  ModelWeightsBf16 wh;       // views of the bf16 copies (bf16 only; null pointers in fp32)

  T* params() { return arena_.data(); }                       // (P)
  T* grads() { return arena_.data() + table.size(); }         // (P)
  const T* params() const { return arena_.data(); }
  const T* grads() const { return arena_.data() + table.size(); }
  int64_t param_size() const { return table.size(); }         // P (flat, with padding)
  T* random_fixed() { return random_.data(); }                  // every layer's, one after another
  T* random_step() { return random_.data() + random_size; }     // the same layout
  // Where layer l's random matrices start in random_fixed() or random_step() (attention_random_size
  // of its spec; model_random_offsets).
  int64_t random_offset(int l) const { return random_offsets_[static_cast<size_t>(l)]; }
  uint16_t* bf16_params();  // (P) the bf16 copies at the parameters' offsets; null in fp32
  void zero_grad();
  // bf16: rewrites the bf16 copy of every weight matrix from params() (round to
  // nearest even). Call after anything changes the parameters (init, a load, an
  // optimizer step) and before the next product reads them; nothing in fp32.
  void bf16_refresh();
  int64_t bf16_bytes() const { return bf16_size_ * static_cast<int64_t>(sizeof(uint16_t)); }

  // A decoder that is a loaded model's last reader (generate, serve, chat: DecoderOptions::
  // release_model_matrices) packs the weight matrices for itself and gives the arena's pages under
  // them back, so the weights are held once, not twice. It marks the model first
  // (matrices_mark_released), then releases each matrix once packed (matrix_pages_release: whole
  // pages of `granule` bytes, 0 the base page, as Arena::release_pages; safe from the packing
  // threads). From then those matrices read zero: whatever would read them (another decoder, the
  // forward, saving, the checksum, bf16_refresh) calls matrices_check_kept first, which throws an
  // internal error instead of computing with zeros.
  void matrices_mark_released() { matrices_released_ = true; }
  bool matrices_released() const { return matrices_released_; }
  int64_t matrix_pages_release(const T* matrix, int64_t count, size_t granule = 0) {
    return arena_.release_pages(matrix, count, granule);
  }
  void matrices_check_kept(const char* reader) const;

 private:
  Arena<T> arena_;    // (2P) then, in bf16, the copies: P uint16 at the parameters' offsets
  int64_t bf16_size_ = 0;  // P in bf16, else 0
  bool matrices_released_ = false;
  Arena<T> random_;   // (2, random_size)
  std::vector<int64_t> random_offsets_;  // (L + 1)
};

// (L + 1) offsets of each layer's random matrices in one array of all of them; the last is the total.
std::vector<int64_t> model_random_offsets(const ModelSpec& spec);

// Each tensor as its table entry's ParamInit says (model_params.h): normal(0,
// init_std * scale) from its own stream CounterRng(seed, 0x1417, tensor index),
// or a constant. The fixed random matrices are drawn with step = kFixedRandomStep.
template <typename T>
void model_init(Model<T>& model, uint64_t seed);

// The attention's random matrices for every (layer, head) at `step`: layer l's at
// model_random_offsets(spec)[l], head h the draw keyed by (seed, step, l, h); nothing for a
// layer whose attention draws none. No allocation (float path); cheap vs a step.
template <typename T>
void model_draw_random(const ModelSpec& spec, uint64_t seed, uint64_t step, T* out);

}  // namespace rfa
