#pragma once
// A `rfa train` run small enough for a unit test: 300 lines of text written into `dir`, the
// committed char tokenizer of tests/checkpoint/fixtures (no tokenizer is trained, so the token
// file is the same everywhere) and a tiny model (L=2, C=16, H=2, T=16, F=4, chunks of 8), with
// train.run_dir dir/`run`. The caller sets the batch, the steps and the cadence.
#include <string>

#include "config/config.h"
#include "support/temp_dir.h"

namespace rfa::test {

inline const std::string kTextRunTokenizer =
    std::string(RFA_SOURCE_DIR) + "/tests/checkpoint/fixtures/v2-rfa_gate/tokenizer.model";

inline Config text_run_config(const TempDir& dir, const std::string& run = "run") {
  std::string corpus;
  for (int i = 1; i <= 300; ++i) corpus += "Line " + std::to_string(i) + ": the quick brown fox jumps over the lazy dog.\n";
  Config c;
  c.model.n_layers = 2;
  c.model.d_model = 16;
  c.model.n_heads = 2;
  c.model.context_length = 16;
  c.attention.num_features = 4;
  c.attention.chunk_size = 8;
  c.tokenizer.path = kTextRunTokenizer;
  c.tokenizer.kind = TokenizerKind::character;
  c.tokenizer.vocab_size = 300;
  c.data.corpus = dir.write("corpus.txt", corpus);
  c.data.tokens = dir / "corpus.tokens";
  c.train.run_dir = dir / run;
  return c;
}

}  // namespace rfa::test
