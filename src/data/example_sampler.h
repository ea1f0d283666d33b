#pragma once
// Training rows of instruction examples (data.format alpaca / prompt_completion: documents of a
// version 3 token file, each prompt ++ response ++ [EOS], docs/fine-tuning.md).
//
// An example of n tokens t[0..n) with its response from index p gives the n - 1 targets
// t[1..n): t[j] is a response target when j >= p (the response and its EOS), a prompt target
// when j < p. A row holds T + 1 tokens (inputs row[0..T), targets row[1..T]):
//   pad:  one example per row, then padding (the EOS id as input, no target);
//   pack: whole examples back to back, as many as fit, then padding; the target that would
//         have the next example's first token predicted by this one's EOS is no target
//         (TargetRole::none), so nothing is learned across examples (what the attention
//         sees across them is data.document_boundaries' business).
// An example longer than T + 1 tokens would lose its end (its EOS), and one with no response
// target (an empty prompt and response, or a response cut off) would train on nothing: both
// are dropped and counted, never trained on.
//
// Rows are laid out once, in file order (pack fills each row greedily), then drawn in a
// shuffled order that is a pure function of (seed, epoch): global row r = (step * M + micro)
// * B + b, with M the global micro-batches per step (ranks x grad_accum), is row
// permute_index(r mod R, R, key(seed, r / R)) of the R rows, so every row is trained on once
// per epoch, a resume redraws the same rows, and B x M rows per step give the same rows however
// they split into micro-batches and ranks. Memory: 16 bytes per example (the layout).
#include <cstdint>
#include <vector>

#include "config/config.h"
#include "data/batch_sampler.h"
#include "data/token_file.h"

namespace rfa {

struct ExampleLayout {
  Packing packing = Packing::pad;
  int batch_size = 0;            // B
  int context_length = 0;        // T
  bool train_on_prompt = false;  // prompt targets are trained on too
  int32_t pad_id = 0;            // the input at padded positions (the tokenizer's EOS)
  // preference pairs (DPO): documents 2u and 2u + 1 are the chosen and rejected answers of pair
  // u; each is a padded row, and the two rows of a pair are drawn together, side by side
  // (rows 2j and 2j + 1 of a micro-batch; B even).
  bool pairs = false;
};

// The examples a range of documents holds: what is kept and why the rest was dropped (pairs:
// a pair is dropped when either answer would be).
struct ExampleCounts {
  int64_t kept = 0;
  int64_t too_long = 0;        // more than T + 1 tokens
  int64_t nothing_to_learn = 0;  // no response target
};

class ExampleSampler {
 public:
  // The examples are documents [first, first + count) of `docs`, over `tokens` (TokenFile::all()).
  // micro_batches: M, the global micro-batches per step. Throws Error naming the counts and
  // the keys to change when no example fits a row.
  ExampleSampler(const TokenSplit& tokens, const DocumentTable& docs, int64_t first, int64_t count,
                 const ExampleLayout& layout, uint64_t seed, int micro_batches);

  // Global micro-batch `micro` of `step`: inputs, targets (-1 where nothing is trained on),
  // roles and starts (out sized (B, T) by the caller). No allocation.
  void sample(int64_t step, int micro, TokenBatch& out) const;
  // The targets micro-batch `micro` of `step` trains on, and those of the whole step (all M).
  int64_t supervised(int64_t step, int micro) const;
  int64_t supervised_step(int64_t step) const;

  // Units: the rows that are drawn together (one, or a pair's two). Slot j of a micro-batch is
  // its rows [j * unit_rows, (j + 1) * unit_rows).
  int64_t units() const { return rows() / unit_rows_; }
  int unit_rows() const { return unit_rows_; }
  int64_t unit(int64_t step, int micro, int slot) const;   // the layout unit a slot draws
  void fill_unit(int64_t unit, int slot, TokenBatch& out) const;  // the unit's rows into slot `slot`

  const ExampleCounts& counts() const { return counts_; }
  int64_t rows() const { return static_cast<int64_t>(row_begin_.size()) - 1; }
  int micro_batches() const { return M_; }

 private:
  int64_t unit_of(int64_t global_unit) const;  // the layout unit a global unit draws
  int64_t row_supervised(int64_t row) const;
  void fill_row(int64_t row, int b, TokenBatch& out) const;

  TokenSplit tokens_;
  DocumentTable docs_;
  ExampleLayout layout_;
  uint64_t seed_;
  int M_;
  int unit_rows_ = 1;
  ExampleCounts counts_;
  std::vector<int64_t> order_;      // the kept examples' document indices, in file order
  std::vector<int64_t> row_begin_;  // row k holds order_[row_begin_[k] .. row_begin_[k+1])
};

// The targets example document `d` trains on (n - max(p, 1), or n - 1 with the prompt; mqar: its
// answers, DocumentTable::response_target), as above.
int64_t example_supervised(const DocumentTable& docs, int64_t d, bool train_on_prompt);

}  // namespace rfa
