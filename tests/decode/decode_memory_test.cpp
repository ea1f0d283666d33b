// The decoder's memory estimate against the state the decoder allocates, and
// the growth of a softmax KV cache with the positions.
#include <doctest/doctest.h>

#include <string>

#include "attention/attention_core.h"
#include "core/parallel.h"
#include "decode/decode_memory.h"
#include "decode/decoder.h"
#include "support/attention_variants.h"
#include "support/tiny_model.h"

using namespace rfa;

namespace {

double part_bytes(const MemoryEstimate& e, const std::string& name) {
  for (const MemoryPart& p : e.parts)
    if (p.name == name) return p.bytes;
  return 0;
}

}  // namespace

TEST_CASE("decode memory: the RFA state and the KV cache equal what the decoder reserves") {
  // Every variant whose layers are all alike (a mixed model reserves a part per layer kind,
  // which the formulas below do not sum).
  for (const test::AttentionVariant& v : test::attention_variants())
    for (int window : {0, 5}) {
      if (v.mixed) continue;
      INFO("variant ", std::string(v.name));
      CAPTURE(window);
      Model<float> model(test::tiny_spec(
          test::with_variant(test::tiny_config(AttentionKind::softmax, {.context = 16, .num_features = 3}), v)));
      DecoderOptions o;
      o.batch = 2;
      o.max_segment = 7;
      o.max_positions = 40;
      o.window = window;
      const MemoryEstimate e = memory_estimate_decoder(model.spec, o, thread_count(), "segment", "positions");
      Decoder<float> dec(model, o);
      // The per-row tensors and the step's scratch (RFA: S and the feature maps' rows; softmax:
      // keys, values and the score row (B, H, slots)).
      const double reserved = double(dec.state_reserved_bytes());
      if (!model.spec.attn_state_grows()) {  // a recurrent state, or a trained window's ring of w slots
        const bool ring = model.spec.attn[0].kind == AttentionKind::softmax;
        CHECK(part_bytes(e, ring ? "sliding-window KV cache" : "RFA state") == reserved);
        if (ring) {  // keys, values and the score row (B, H, w)
          const double w = model.spec.attn[0].window, H = model.spec.H, Dh = model.spec.attn[0].Dh;
          CHECK(reserved == double(model.spec.L) * o.batch * H * w * (2 * Dh + 1) * sizeof(float));
        }
      } else {
        const int slots = window > 0 ? window : 40;
        const double scores = double(model.spec.L) * o.batch * model.spec.H * slots * sizeof(float);
        // With attention.output_gate the step also keeps z (B, C) per layer.
        const double gate =
            model.spec.attn[0].output_gate ? double(model.spec.L) * o.batch * model.spec.C * sizeof(float) : 0.0;
        CHECK(reserved == double(dec.state_capacity_bytes()) + scores + gate);
        CHECK(part_bytes(e, "KV cache") == reserved);
      }
      CHECK(part_bytes(e, "decoding activations") > 0);
    }
}

TEST_CASE("decode memory: the step's packed weights are what the decoder packs; a prefill-only decoder packs none") {
  for (const test::AttentionVariant& v : test::attention_variants()) {
    INFO("variant ", std::string(v.name));
    Model<float> model(test::tiny_spec(
        test::with_variant(test::tiny_config(AttentionKind::softmax, {.context = 16, .num_features = 3}), v)));
    DecoderOptions o;
    o.batch = 2;
    o.max_positions = 40;
    for (bool steps : {true, false}) {
      CAPTURE(steps);
      o.steps = steps;
      const MemoryEstimate e = memory_estimate_decoder(model.spec, o, thread_count(), "segment", "positions");
      Decoder<float> dec(model, o);
      CHECK(part_bytes(e, "packed weights of the decoding step") == double(dec.step_weights_bytes()));
      // At least every matrix of the blocks and lm_head once (panels pad N to whole registers).
      const ModelSpec& s = model.spec;
      const double matrices = double(s.L) * (4.0 * s.C * s.C + 3.0 * s.Hf * s.C) + double(s.V) * s.C;
      CHECK(double(dec.step_weights_bytes()) >= (steps ? matrices * sizeof(float) : 0.0));
      if (!steps) {
        CHECK(dec.step_weights_bytes() == 0);
        const int32_t tokens[2] = {1, 2};
        CHECK_THROWS(dec.step(tokens));  // a prefill-only decoder refuses a step
      }
    }
  }
}

TEST_CASE("decode memory: a trained window reserves its w slots, not the positions") {
  Config c = test::tiny_config(AttentionKind::softmax, {.context = 16});
  c.attention.window = 4;
  Model<float> model(test::tiny_spec(c));
  DecoderOptions o;
  o.max_segment = 512;
  o.max_positions = 1000000000;
  const MemoryEstimate e = memory_estimate_decoder(model.spec, o, 1, "segment", "-n");
  // L * B * H * w * (2 Dh + 1) floats: keys, values and the score row.
  CHECK(part_bytes(e, "sliding-window KV cache") == 2.0 * 1 * 2 * 4 * (2 * 8 + 1) * 4);
  CHECK(part_bytes(e, "KV cache") == 0);
}

TEST_CASE("decode memory: a softmax cache of 10^9 positions is terabytes, a window keeps it small") {
  Model<float> model(test::tiny_spec(AttentionKind::softmax, {.context = 16}));
  DecoderOptions o;
  o.max_segment = 512;
  o.max_positions = 1000000000;
  const MemoryEstimate whole = memory_estimate_decoder(model.spec, o, 1, "segment", "-n");
  CHECK(whole.total() > 1e11);  // L=2, C=16: 2 * 2 * 16 * 4 bytes of keys and values per position, and RoPE
  o.window = 16;
  const MemoryEstimate windowed = memory_estimate_decoder(model.spec, o, 1, "segment", "-n");
  CHECK(part_bytes(windowed, "KV cache") < 1e5);
}

// A decoder that releases the model's matrices (generate, serve, chat) counts its packed copy less
// the whole 2 MiB pages the matrices give back while it packs, but for one matrix a thread in
// flight; where nothing is given back (small matrices, an arena on the heap) the whole copy.
TEST_CASE("decode memory: a releasing decoder counts its packed copy less what the matrices give back") {
  const std::string packed = "packed weights of the decoding step",
                    less = "packed weights of the decoding step, less the model's pages given back";
  DecoderOptions keep;
  keep.max_positions = 256;
  DecoderOptions release = keep;
  release.release_model_matrices = true;
  // 12 x 768, V 8000 (no allocation: the estimate is arithmetic): w13 (12.6 MB) holds at least 5 whole
  // huge pages wherever it starts, w2 (6.3 MB) 2, the LM head (24.6 MB) 10, the 2.4 MB projections none.
  Config big = test::tiny_config(AttentionKind::rfa_gate, {.vocab = 8000, .context = 256, .d_model = 768,
                                                           .n_heads = 12, .n_layers = 12});
  const ModelSpec spec = test::tiny_spec(big);
  const double whole = part_bytes(memory_estimate_decoder(spec, keep, 2, "segment", "positions"), packed);
  const MemoryEstimate e = memory_estimate_decoder(spec, release, 2, "segment", "positions");
  CHECK(part_bytes(e, packed) == 0);
  const double page = double(kHugePageBytes);
#if defined(__SANITIZE_ADDRESS__)
  CHECK(part_bytes(e, less) == whole);  // heap arenas keep their pages
#else
  CHECK(part_bytes(e, less) == doctest::Approx(whole - (12 * (5 + 2) + 10) * page + 2 * 10 * page));
#endif
  // A small model's matrices hold no whole huge page: the whole copy.
  const ModelSpec small = test::tiny_spec(AttentionKind::rfa_gate, {.vocab = 300, .d_model = 128, .n_heads = 4});
  CHECK(part_bytes(memory_estimate_decoder(small, release, 2, "segment", "positions"), less) ==
        part_bytes(memory_estimate_decoder(small, keep, 2, "segment", "positions"), packed));
  // bf16 releases after packing: its estimate is the peak's, unchanged.
  keep.precision = release.precision = Precision::bf16;
  CHECK(memory_estimate_decoder(spec, release, 2, "segment", "positions").total() ==
        memory_estimate_decoder(spec, keep, 2, "segment", "positions").total());
}
