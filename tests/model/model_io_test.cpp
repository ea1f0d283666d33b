// Checkpoint tensor lists: a model written through the safetensors library and
// loaded into a fresh model gives identical parameters and random matrices.
#include <doctest/doctest.h>

#include <algorithm>

#include "checkpoint/safetensors.h"
#include "model/activations_dump.h"
#include "model/model_flops.h"
#include "model/model_forward.h"
#include "model/model_io.h"
#include "support/conv_taps.h"
#include "support/temp_dir.h"
#include "support/tiny_model.h"

using namespace rfa;

namespace {

ModelSpec small_spec(AttentionKind kind, bool tied, int short_conv = 0, bool output_gate = false) {
  Config c = test::tiny_config(kind, {.vocab = 30, .tied = tied});
  c.attention.short_conv = short_conv;
  c.attention.output_gate = output_gate;
  return test::tiny_spec(c);
}

}  // namespace

TEST_CASE("model io: save and load round-trips every tensor") {
  for (AttentionKind kind : {AttentionKind::softmax, AttentionKind::rfa_gate})
  for (int short_conv : {0, 3})
  for (bool gate : {false, true}) {
    CAPTURE(short_conv);
    CAPTURE(gate);
    ModelSpec spec = small_spec(kind, kind == AttentionKind::softmax, short_conv, gate);
    Model<float> a(spec), b(spec);
    model_init(a, 3);
    model_init(b, 4);
    test::conv_taps_randomize(a, 3);  // else both hold the identity taps
    std::vector<float> m(static_cast<size_t>(a.param_size()), 0.5f), v(m.size(), 0.25f), m2(m.size()), v2(m.size());
    test::TempDir dir;
    safetensors_write(dir / "model.safetensors", model_tensor_refs(a));
    safetensors_write(dir / "opt.safetensors", optimizer_tensor_refs(a, m.data(), v.data()));
    SafetensorsFile fm = safetensors_read(dir / "model.safetensors");
    SafetensorsFile fo = safetensors_read(dir / "opt.safetensors");
    safetensors_validate(fm, model_tensor_specs(spec), "model");
    safetensors_validate(fo, optimizer_tensor_specs(spec), "optimizer");
    model_tensors_load(b, fm);
    optimizer_tensors_load(b, fo, m2.data(), v2.data());
    CHECK(std::equal(a.params(), a.params() + a.param_size(), b.params()));
    CHECK(std::equal(a.random_fixed(), a.random_fixed() + a.random_size, b.random_fixed()));
    for (const ParamEntry& e : a.table.entries()) {
      CHECK(m2[static_cast<size_t>(e.offset)] == 0.5f);
      CHECK(v2[static_cast<size_t>(e.offset + e.numel - 1)] == 0.25f);
    }
    CHECK((fm.find("layers.1.attn.random") != nullptr) == (kind != AttentionKind::softmax));
    for (const char* name : {"layers.0.attn.conv_q", "layers.1.attn.conv_k", "layers.1.attn.conv_v"}) {
      const Tensor* t = fm.find(name);  // (K, C) each, in the checkpoint by name
      REQUIRE((t != nullptr) == (short_conv > 0));
      if (t) CHECK(t->shape == std::vector<int64_t>{short_conv, spec.C});
    }
    const Tensor* norm = fm.find("layers.1.attn.out_norm");  // attention.output_gate: (C) and (C, C) by name
    const Tensor* gate_w = fm.find("layers.0.attn.out_gate");
    REQUIRE((norm != nullptr) == gate);
    REQUIRE((gate_w != nullptr) == gate);
    if (gate) {
      CHECK(norm->shape == std::vector<int64_t>{spec.C});
      CHECK(gate_w->shape == std::vector<int64_t>{spec.C, spec.C});
    }
  }
}

TEST_CASE("model flops: 6 N tokens for the matmuls, attention terms by hand") {
  ModelSpec s = small_spec(AttentionKind::softmax, true);  // C 16, L 2, Hf 64 (8/3*16 -> 43 -> 64), V 30
  CHECK(s.Hf == 64);
  CHECK(model_matmul_params(s) == 2 * (4 * 16 * 16 + 3 * 16 * 64) + 30 * 16);
  FlopCount f = model_train_flops(s, 3, 8);
  CHECK(f.matmul == doctest::Approx(6.0 * model_matmul_params(s) * 24));
  CHECK(f.attention == doctest::Approx(3.0 * 2 * 16 * 9 * 2 * 24));  // 3 x 2C(T+1) x L x tokens
  ModelSpec r = small_spec(AttentionKind::rfa, true);            // H 2, Dh 8, D 4, F 8, chunk min(64, 8) = 8
  FlopCount fr = model_train_flops(r, 1, 8);
  // One chunk: no inter-chunk terms; the causal triangle (8 + 1) / 2 keys a row.
  double per_head = 4 * 4 * 8 + (2 * 8 + 2 * 9) * 4.5;
  // Forward + backward = 3 x the forward less one feature-map projection per map (4 D Dh a head):
  // the drawn W gets no gradient.
  CHECK(fr.attention == doctest::Approx(2 * (3.0 * per_head - 4 * 4 * 8) * 2 * 8));
  // Two chunks of 64 at T 128: the inter-chunk terms in one of them, (64 + 1) / 2 keys a row.
  CHECK(AttentionConfig{}.chunk_size == 64);
  FlopCount f2 = model_train_flops(r, 1, 128);
  double per_head2 = 4 * 4 * 8 + 4 * 8 * 9 * 0.5 + (2 * 8 + 2 * 9) * 32.5;
  CHECK(f2.attention == doctest::Approx(2 * (3.0 * per_head2 - 4 * 4 * 8) * 2 * 128));
}


TEST_CASE("activations dump: every intermediate by name, with the forward's values") {
  ModelSpec spec = small_spec(AttentionKind::rfa_gate, true);
  Model<float> model(spec);
  model_init(model, 3);
  Activations<float> acts(spec, 2, 8);
  std::vector<int32_t> in(16), tg(16);
  for (int i = 0; i < 16; ++i) in[i] = i % 30, tg[i] = (i + 1) % 30;
  model_forward(model, acts, in.data(), tg.data(), model.random_fixed());
  test::TempDir dir;
  activations_dump(acts, dir / "acts.safetensors");
  SafetensorsFile f = safetensors_read(dir / "acts.safetensors");
  const Tensor* t = f.find("layers.1.ffn.gate_up");
  REQUIRE(t != nullptr);
  CHECK(t->shape == std::vector<int64_t>{2, 8, 2 * spec.Hf});
  std::vector<float> got(static_cast<size_t>(2 * 8 * 2 * spec.Hf));
  tensor_copy_to(*t, got.data(), static_cast<int64_t>(got.size()));
  CHECK(std::equal(got.begin(), got.end(), acts.layers[1].ffn_gate_up));
  CHECK(f.find("layers.0.attn.q") != nullptr);
  CHECK(f.find("logits") != nullptr);
  CHECK(f.tensors.size() == acts.tensors().size());
}
