// The memory estimate against what the code allocates: the parameter table,
// the activations and the model's arenas of tiny models of every kind, exactly;
// and the refusal message for a model no machine holds.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "config/config_keys.h"
#include "core/parallel.h"
#include "model/activations.h"
#include "model/memory_estimate.h"
#include "model/model.h"
#include "support/attention_variants.h"
#include "support/test_files.h"
#include "support/tiny_model.h"
#include "train/train_session.h"

using namespace rfa;
using rfa::test::has;

namespace {

double part_bytes(const MemoryEstimate& e, const std::string& name) {
  for (const MemoryPart& p : e.parts)
    if (p.name == name) return p.bytes;
  return 0;
}

}  // namespace

TEST_CASE("memory estimate: parameters and activations equal the allocated sizes") {
  for (const test::AttentionVariant& v : test::attention_variants())
    for (bool tied : {true, false})
      for (int B : {1, 3})
        for (Precision precision : {Precision::fp32, Precision::bf16}) {
        Config c = test::tiny_config(AttentionKind::softmax, {.vocab = 29, .context = 11, .d_model = 24, .n_heads = 3,
                                                              .num_features = 5, .chunk_size = 4, .tied = tied});
        c.model.ffn_hidden = 40;
        const ModelSpec spec = test::tiny_spec(test::with_variant(c, v));
        INFO("variant ", std::string(v.name));
        CAPTURE(tied);
        CAPTURE(B);
        CAPTURE(static_cast<int>(precision));
        Model<float> model(spec, precision);
        CHECK(memory_param_elements(spec) == double(model.param_size()));
        Activations<float> acts(spec, B, spec.model.context_length, precision);
        CHECK(memory_activation_elements(spec, B, spec.model.context_length, thread_count(), precision) *
                  sizeof(float) ==
              double(acts.bytes()));

        c.train.batch_size = B;
        c.train.precision = precision;
        const MemoryEstimate e = memory_estimate_train(spec, c.train, thread_count());
        const double P = double(model.param_size()) * sizeof(float);
        CHECK(part_bytes(e, "weights") == P);
        CHECK(part_bytes(e, "gradients") == P);
        CHECK(part_bytes(e, "AdamW m and v") == 2 * P);
        CHECK(part_bytes(e, "bf16 weight copies") == double(model.bf16_bytes()));
        CHECK(part_bytes(e, "random feature matrices") == double(2 * model.random_size) * sizeof(float));
        CHECK(part_bytes(e, "activations") == double(acts.bytes()) + 2.0 * B * spec.model.context_length * 4);
        // Decoding or evaluating never touches the gradient half of the arena: not counted.
        const MemoryEstimate inference = memory_estimate_model(spec, precision, ModelUse::inference);
        CHECK(part_bytes(inference, "weights") == P);
        CHECK(part_bytes(inference, "gradients") == 0);
        CHECK(part_bytes(inference, "bf16 weight copies") == double(model.bf16_bytes()));
      }
}

TEST_CASE("memory estimate: a stateful run's carried states are the session's and the checkpoint's arenas") {
  for (int short_conv : {0, 3}) {
  CAPTURE(short_conv);
  Config c = test::tiny_config(AttentionKind::rfa_gate, {.context = 16});
  c.attention.short_conv = short_conv;
  c.train.batch_size = 3;
  c.train.grad_accum = 2;
  c.train.stateful = true;
  const ModelSpec spec = test::tiny_spec(c);
  TrainSession session(c, spec);
  const double slot = double(session.carry_slot()), ranks = 4;
  auto arena = [](double bytes) { return std::ceil(bytes / 64) * 64; };
  const MemoryEstimate e = memory_estimate_train(spec, c.train, 1, 4);
  CHECK(part_bytes(e, "carried states") ==
        arena(2 * 2 * slot * 4) + arena(ranks * 2 * slot * 4) + arena(ranks * 2 * 3 * 8.0));
  c.train.stateful = false;
  CHECK(part_bytes(memory_estimate_train(spec, c.train, 1, 4), "carried states") == 0);
  // Per layer and row: the RFA state (H, F = 2D, Dh + 1) and the convolution's history (3, K-1, C).
  const int64_t Dh = spec.C / spec.H, history = short_conv > 0 ? 3 * (short_conv - 1) * int64_t(spec.C) : 0;
  CHECK(session.carry_slot() == spec.L * 3 * (spec.H * 2 * spec.attn[0].D * (Dh + 1) + history));
  }
}

TEST_CASE("memory estimate: a model at the keys' bounds is estimated without overflow and refused") {
  Config c;
  c.model.vocab_size = kMaxVocab;
  c.model.n_layers = kMaxLayers;
  c.model.d_model = kMaxWidth;
  c.model.ffn_hidden = kMaxFfnHidden;
  c.model.context_length = 4096;
  const ModelSpec spec = model_spec_make(c.model, c.attention);
  const MemoryEstimate e = memory_estimate_train(spec, c.train, 2);
  // Per layer 4 C^2 + 3 Hf C = 2^34 + 3 * 2^36 weights: about 2^48 bytes per copy over 1024 layers.
  CHECK(part_bytes(e, "weights") > 0x1p49);
  CHECK(e.total() > 4 * part_bytes(e, "weights"));
  std::string message = test::error_of([&] { memory_check(e, "training this model", 24.0 * (1 << 30)); });
  CHECK(has(message, "not enough memory: training this model needs about "));
  CHECK(has(message, "but 24.00 GiB is available (MemAvailable in /proc/meminfo)"));
  CHECK(has(message, "the largest part is AdamW m and v: shrink model.n_layers (1024), model.d_model (65536), "
                     "model.ffn_hidden (1048576) or the vocabulary (16777216)"));
}

TEST_CASE("memory estimate: the largest part decides the advice; unknown memory is no refusal") {
  Config c = test::tiny_config(AttentionKind::softmax, {.context = 1024});
  c.train.batch_size = 64;
  const MemoryEstimate e = memory_estimate_train(test::tiny_spec(c), c.train, 1);
  // Softmax keeps (B, H, T, T) probabilities per layer: activations dwarf a tiny model's weights.
  std::string message = test::error_of([&] { memory_check(e, "training this model", 1e6); });
  CHECK(has(message, "the largest part is activations: shrink train.batch_size (64), model.context_length (1024)"));
  CHECK_NOTHROW(memory_check(e, "training this model", e.total()));
  CHECK_NOTHROW(memory_check(e, "training this model", -1));
  message = test::error_of([&] { memory_check(e, "training this model", 1e6, "the memory cgroup's limit, 2.0 MiB"); });
  CHECK(has(message, "but 976.6 KiB is available (the memory cgroup's limit, 2.0 MiB); the largest part is activations"));
}

TEST_CASE("memory estimate: the machine's available memory is read") {
  const int64_t available = memory_available_bytes();
  CHECK(available > 0);  // Linux has had MemAvailable since 3.14
  CHECK(bytes_text(512) == "512 B");
  CHECK(bytes_text(1536) == "1.5 KiB");
  CHECK(bytes_text(11.3 * (1 << 30)) == "11.30 GiB");
}

TEST_CASE("memory estimate: other processes doing the same (mpirun's ranks on one machine) count as one part") {
  MemoryEstimate e;
  e.add("weights", 100, "model.d_model (128)");
  e.add("activations", 300, "train.batch_size (12)");
  e.add_copies("the other ranks on this machine", 0, "the ranks per machine (mpirun -np: 1 here)");
  CHECK(e.parts.size() == 2);
  e.add_copies("the other ranks on this machine", 3, "the ranks per machine (mpirun -np: 4 here)");
  CHECK(e.total() == doctest::Approx(1600));
  const std::string message = test::error_of([&] { memory_check(e, "training this model", 1000); });
  CHECK(has(message, "the largest part is the other ranks on this machine: shrink the ranks per machine (mpirun -np: 4 here)"));
}
