// Hybrids with sliding-window softmax layers (attention.window, docs/hybrid.md): the key per
// layer and globally, its bounds, the spec and its text, what the config (so the checkpoint)
// records, and what the fixed-size state allows: no growing state, one-pass evaluation, a
// state that can be saved. The kernels' tests: tests/attention/softmax_window_test.cpp; decoding
// and the model-level tests walk "softmax (rope) window 3" and the hybrid variant.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "attention/attention_core.h"
#include "config/config_layers.h"
#include "config/config_load.h"
#include "eval/perplexity.h"
#include "model/model_spec.h"
#include "support/test_files.h"
#include "support/tiny_model.h"

using namespace rfa;
using test::has;

TEST_CASE("attention.window: per layer beside other overrides, and globally for softmax layers only") {
  Config c = test::tiny_config(AttentionKind::rfa_gate, {.n_layers = 4});
  c.attention.layers = "3*rfa_gate short_conv=4, softmax window=16 short_conv=4";
  Config valid;  // the default shape (4 layers) passes validation with the list
  valid.attention.layers = c.attention.layers;
  config_validate(valid);
  ModelSpec s = test::tiny_spec(c);
  for (int l = 0; l < 3; ++l) {
    CHECK(s.attn[size_t(l)].window == 0);
    CHECK(s.attn[size_t(l)].short_conv == 4);
  }
  CHECK(s.attn[3].kind == AttentionKind::softmax);
  CHECK(s.attn[3].window == 16);
  CHECK(s.attn[3].short_conv == 4);
  CHECK(!s.attn_state_grows());
  CHECK(model_spec_attention_text(s) == "rfa_gate x3, softmax window 16 (short_conv 4)");
  // Global: every softmax layer takes it; the RFA kinds ignore it (their spec keeps 0).
  c.attention.layers = "3*rfa_gate, softmax";
  c.attention.window = 8;
  s = test::tiny_spec(c);
  CHECK(s.attn[0].window == 0);
  CHECK(s.attn[3].window == 8);
  CHECK(model_spec_attention_text(s) == "rfa_gate x3, softmax window 8");
  // A full softmax layer beside a windowed one: the model's state grows again.
  c.attention.window = 0;
  c.attention.layers = "2*rfa_gate, softmax window=4, softmax";
  s = test::tiny_spec(c);
  CHECK(s.attn_state_grows());
  CHECK(model_spec_attention_text(s) == "rfa_gate x2, softmax window 4, softmax");
}

TEST_CASE("attention.window: out of bounds names the key, the entry and the value") {
  Config c;
  c.model.n_layers = 2;
  c.attention.layers = "rfa_gate, softmax window=-1";
  const std::string m = test::error_of([&] { config_validate(c); });
  CHECK(has(m, "'attention.layers' entry 2 ('softmax window=-1')"));
  CHECK(has(m, "'attention.window' is '-1'"));
  CHECK(has(test::error_of([] { config_load("", {"attention.window=-3"}); }), "attention.window"));
  // Stateful training carries RFA states only: a windowed layer says why it cannot.
  Config s;
  s.model.n_layers = 2;
  s.attention.layers = "rfa_gate, softmax window=8 positions=none";
  s.train.stateful = true;
  CHECK(has(test::error_of([&] { config_validate(s); }),
            "'attention.kind' is softmax (layer 1 of 'attention.layers') with 'attention.window' 8: its window of keys "
            "is not carried between training segments"));
}

TEST_CASE("attention.window: the config a checkpoint saves records it, per layer and globally") {
  Config c;  // the default shape: 4 layers
  c.model.vocab_size = 0;
  c.attention.layers = "3*rfa_gate, softmax window=16";
  c.attention.window = 5;
  const std::string yaml = config_dump(c);  // what checkpoint_save writes as config.yaml
  CHECK(has(yaml, "window: 5"));
  Config back = config_parse(yaml, "config.yaml");
  CHECK(back.attention == c.attention);
  back.model.vocab_size = 13;  // the tokenizer's, at load
  CHECK(test::tiny_spec(back).attn[3].window == 16);
  // An older config without the key: full attention, as before.
  CHECK(config_parse("attention:\n  kind: softmax\n", "old.yaml").attention.window == 0);
}

TEST_CASE("attention.window: a windowed hybrid evaluates in one pass and can save its state") {
  Config c = test::tiny_config(AttentionKind::rfa_gate, {.context = 16, .n_layers = 2});
  c.attention.layers = "rfa_gate, softmax window=4";
  const ModelSpec s = test::tiny_spec(c);
  const PerplexityPlan p = perplexity_plan(s, 1000, PerplexityOptions{});
  CHECK(p.recurrent);
  CHECK(has(perplexity_method(p), "one pass"));
  CHECK(attention_state_save_refusal(s.attn[1]).empty());
  CHECK(has(attention_state_form(s.attn[1]), "window 4"));
  // A full softmax layer still slides windows and refuses to save.
  c.attention.layers = "rfa_gate, softmax";
  const ModelSpec full = test::tiny_spec(c);
  CHECK(!perplexity_plan(full, 1000, PerplexityOptions{}).recurrent);
  CHECK(!attention_state_save_refusal(full.attn[1]).empty());
}
