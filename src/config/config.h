#pragma once
// The typed option tree. Defaults live here; config/config_load.h merges
// defaults < YAML file < --set overrides, validates, and dumps. Nothing outside
// src/config/ reads YAML: model, training and data code take these structs.
// Adding a field: also add its row to config/config_keys.cpp (the table that
// drives reading, validation, dump and the README table).
#include <cstdint>
#include <string>
#include <vector>

namespace rfa {

// Every attention kind, as `attention.kind` spells it, in the order the docs list them. Adding a
// kind is one line here plus its files in src/attention/ (its table, attention_kind.h; the
// checklist: docs/attention-kinds.md).
#define RFA_ATTENTION_KINDS(X) X(softmax) X(rfa) X(rfa_gate) X(rfa_delta)
#define RFA_ATTENTION_KIND_VALUE(name) name,
enum class AttentionKind { RFA_ATTENTION_KINDS(RFA_ATTENTION_KIND_VALUE) };
#undef RFA_ATTENTION_KIND_VALUE
enum class FeatureMapKind { gaussian, arccos };
enum class PositionKind { automatic, rope, none };  // automatic: rope for softmax, none for RFA kinds
enum class TokenizerKind { bpe, unigram, character };
enum class Precision { fp32, bf16 };  // of the matrix products (docs/bf16.md)
// How a training step uses the threads (train/batch_shards.h): each kernel split over them, each
// thread its own sequences of the batch, or auto (the batch split where it fits, docs/cpu-targets.md).
enum class ThreadSplit { automatic, batch, kernels };
enum class GateKind { scalar, feature };       // rfa_gate: one gate per head, or one per state feature
enum class TimeDiscountKind { none, log };     // RFA kinds: the feature written at position t scaled by log(t + c)
// data.format: one text; JSON Lines documents {"text"}; instruction examples; preference pairs (DPO)
// (docs/fine-tuning.md); mqar: multi-query associative recall written by `rfa data mqar` (docs/recall.md).
enum class DataFormat { text, jsonl, alpaca, prompt_completion, preference, mqar };
enum class DocumentBoundaries { none, reset };  // attention across a document's start: runs on, or restarts
enum class Packing { pad, pack };               // instruction examples: one per row, or several
enum class PromptTemplate { alpaca, alpaca_short };  // how an alpaca example's instruction and input become a prompt

struct ModelConfig {
  int vocab_size = 0;        // V; 0 = take it from the tokenizer
  int n_layers = 4;          // L
  int d_model = 128;         // C
  int n_heads = 4;           // H; must divide d_model
  int ffn_hidden = 0;        // SwiGLU hidden size; 0 = 8/3 * C rounded up to a multiple of 32
  int context_length = 64;   // T used in training (and softmax's window in evaluation)
  bool tie_embeddings = true;
  double norm_eps = 1e-5;    // RMSNorm epsilon
  double init_std = 0.02;    // normal(0, init_std); residual projections scaled by 1/sqrt(2L)

  friend bool operator==(const ModelConfig&, const ModelConfig&) = default;
};

struct AttentionConfig {
  AttentionKind kind = AttentionKind::rfa_gate;
  FeatureMapKind feature_map = FeatureMapKind::gaussian;
  int num_features = 32;             // D random vectors per head (gaussian gives 2D features)
  PositionKind positions = PositionKind::automatic;
  double rope_theta = 10000.0;
  int chunk_size = 64;               // chunk length of the training form
  double denominator_floor = 0.05;   // eps_d; measured in docs/attention-notes.md (1e-3 lost 0.025-0.035 val loss)
  double qk_norm_eps = 1e-6;         // eps_n of the l2 normalisation
  bool orthogonal_features = false;  // orthogonal random features (QR)
  double gate_bias_init = 2.0;       // b_g at init; sigmoid(2) ~ 0.88 keeps a long memory
  GateKind gate = GateKind::scalar;  // rfa_gate: scalar g_t per head, or a vector g_t over the F features
  TimeDiscountKind time_discount = TimeDiscountKind::none;
  double time_discount_c = 2.0;      // c of log(t + c); > 1 so that every weight is positive
  int64_t time_discount_horizon = 0; // t held at this position past it (log(min(t, horizon) + c)); 0 = no cap
  double sigma_init = 1.0;
  // Every kind: a causal depthwise convolution of this many taps on q, k and v before the
  // attention (and before RoPE); 0 = none (docs/short-conv.md).
  int short_conv = 0;
  // Every kind: each head's output RMS-normalised and gated by SiLU(n W_g) before the output
  // projection (docs/output-gate.md).
  bool output_gate = false;
  // softmax: a sliding window of this many positions (token i attends to i-window+1 .. i, in
  // training and decoding alike: a ring of `window` slots, a fixed-size state); 0 = full causal
  // attention (docs/hybrid.md).
  int window = 0;
  // Each layer's own kind and options: "" = the keys above in every layer; else one entry per
  // layer, "3*rfa_gate gate=feature, softmax" (config/config_layers.h).
  std::string layers = "";

  friend bool operator==(const AttentionConfig&, const AttentionConfig&) = default;
};

// Smallest tokenizer.vocab_size: SentencePiece's 3 control tokens (<unk>, <s>, </s>) + the 256
// byte-fallback tokens + 1 piece. The key table bounds the key with it and tokenizer_train refuses less.
inline constexpr int kTokenizerMinVocab = 260;

struct TokenizerConfig {
  std::string path = "";  // trained from `corpus` when missing; "" = next to it (config_tokenizer_path)
  TokenizerKind kind = TokenizerKind::bpe;
  int vocab_size = 2048;                       // bpe/unigram: exact V; char: upper bound
  std::string corpus = "";                     // "" = data.corpus
  int64_t max_sentences = 2000000;             // SentencePiece input_sentence_size
  double character_coverage = 1.0;

  friend bool operator==(const TokenizerConfig&, const TokenizerConfig&) = default;
};

struct DataConfig {
  std::string corpus = "data/kjv.txt";
  std::string tokens = "";          // prepared token file; "" = corpus path with ".tokens" appended
  double val_fraction = 0.1;        // last fraction of the tokens is the validation split
  DataFormat format = DataFormat::text;
  DocumentBoundaries document_boundaries = DocumentBoundaries::none;
  Packing packing = Packing::pad;
  PromptTemplate prompt_template = PromptTemplate::alpaca;  // key data.template
  bool train_on_prompt = false;     // instruction examples: the loss covers the prompt too, not only the response

  friend bool operator==(const DataConfig&, const DataConfig&) = default;
};

struct TrainConfig {
  std::string run_dir = "runs/default";
  int batch_size = 12;        // B sequences per micro-batch
  int grad_accum = 1;         // micro-batches per optimizer step
  int64_t steps = 2000;
  uint64_t seed = 1337;
  int log_every = 10;
  int eval_every = 250;       // 0 = only at the end
  int eval_batches = 0;       // 0 = the whole validation split; N = its first N * B * T + 1 tokens
  bool stateful = false;      // contiguous streams, each RFA layer's state carried across steps (data/stream_sampler.h)
  int stateful_redraw = 0;    // stateful: 0 = the fixed random features; K = a draw per K steps, states reset at each
  Precision precision = Precision::fp32;  // bf16: the matrix products read bf16 copies (docs/bf16.md)
  ThreadSplit thread_split = ThreadSplit::automatic;  // train/batch_shards.h
  std::string init_from = "";  // a run or checkpoint whose weights start this run (train/train_init.h); "" = random
  double dpo_beta = 0.1;       // data.format preference: DPO's beta (train/dpo.h)

  friend bool operator==(const TrainConfig&, const TrainConfig&) = default;
};

struct OptimConfig {
  double lr = 1e-3;           // peak learning rate
  double lr_min = 1e-4;       // end of the cosine decay
  int64_t warmup_steps = 100;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;  // weight matrices only
  double grad_clip = 1.0;     // global norm; 0 = off
  double sigma_lr_scale = 1;  // the RFA kinds' sigma learn at lr times this (docs/recall.md)
  // After every update each sigma element keeps |sigma| >= sigma_floor x min(1, t / sigma_floor_steps)
  // (t: updates taken; steps 0 = the whole floor from the first). 0 = off (docs/recall.md).
  double sigma_floor = 0;
  int64_t sigma_floor_steps = 0;

  friend bool operator==(const OptimConfig&, const OptimConfig&) = default;
};

struct CheckpointConfig {
  int64_t every = 500;        // 0 = only at the end
  int keep_last = 3;
  bool keep_best = true;

  friend bool operator==(const CheckpointConfig&, const CheckpointConfig&) = default;
};

struct Config {
  ModelConfig model;
  AttentionConfig attention;
  TokenizerConfig tokenizer;
  DataConfig data;
  TrainConfig train;
  OptimConfig optim;
  CheckpointConfig checkpoint;

  friend bool operator==(const Config&, const Config&) = default;
};

// Derived values every consumer needs; valid only after validation.
inline int config_head_size(const ModelConfig& m) { return m.d_model / m.n_heads; }
inline int config_ffn_hidden(const ModelConfig& m) {
  if (m.ffn_hidden > 0) return m.ffn_hidden;
  const int64_t h = (8 * int64_t(m.d_model) + 2) / 3;  // d_model <= kMaxWidth: fits an int
  return static_cast<int>((h + 31) / 32 * 32);
}
// The tokenizer trains on its own corpus when given, else on the data corpus.
inline const std::string& config_tokenizer_corpus(const Config& c) {
  return c.tokenizer.corpus.empty() ? c.data.corpus : c.tokenizer.corpus;
}
// The paths of a corpus (data.corpus, tokenizer.corpus): the text split at each ','.
std::vector<std::string> config_corpus_paths(const std::string& corpus);
// The files a config derives when their key is "" (config_paths.cpp), named after the corpus:
// a file's beside it, a directory's beside the directory (never inside, where they would join
// the corpus: data/books/ -> data/books...), a list's beside its first path.
// The prepared token file: the corpus path + ".tokens" (a list must name it: config_validate).
std::string config_tokens_path(const DataConfig& d);
// The tokenizer model file, named after the corpus it trains on (tokenizer.corpus, else
// data.corpus), the kind and the vocab: data/kjv.txt -> data/kjv-bpe2048.model, data/books/ ->
// data/books-bpe2048.model, a list data/a.txt,data/b.txt,c.txt -> data/a+2-bpe2048.model (+N:
// the N paths after the first). A tokenizer then follows the corpus as the token file does, and
// another corpus (or kind, or vocab) gets its own; one that was trained on another corpus than
// the configured one (two lists alike in first path and length) warns (data/data_setup.h).
std::string config_tokenizer_path(const Config& c);
// alpaca and prompt_completion: (prompt, response) examples, the loss on the response; mqar:
// recall examples, the loss on the answers (docs/recall.md).
inline bool config_supervised(const DataConfig& d) {
  return d.format == DataFormat::alpaca || d.format == DataFormat::prompt_completion || d.format == DataFormat::mqar;
}
// mqar: the data is generated (`rfa data mqar`), not encoded from a corpus.
inline bool config_generated(const DataConfig& d) { return d.format == DataFormat::mqar; }
// preference: (prompt, chosen, rejected) pairs, trained by DPO against the --init-from model.
inline bool config_preference(const DataConfig& d) { return d.format == DataFormat::preference; }
inline PositionKind config_positions(const AttentionConfig& a) {
  if (a.positions != PositionKind::automatic) return a.positions;
  return a.kind == AttentionKind::softmax ? PositionKind::rope : PositionKind::none;
}

}  // namespace rfa
