#pragma once
// Training batches: B random windows of T+1 tokens from a split.
// Window starts come from CounterRng(seed, step, micro_batch), so a batch is a
// pure function of (seed, step, micro_batch): no hidden state, exact resume.
#include <cstdint>
#include <vector>

#include "core/rng.h"
#include "data/token_file.h"

namespace rfa {

// What a target is, for the loss and for reporting (data/example_sampler.h).
enum class TargetRole : uint8_t {
  none = 0,      // trained on by no mode: padding, or the label across two examples of a packed row
  prompt = 1,    // an instruction example's prompt (trained on only with data.train_on_prompt)
  response = 2,  // a response and its EOS; every target of a text or jsonl window
};

// Inputs and targets of one micro-batch; targets are inputs shifted by one token (negative:
// not trained on).
struct TokenBatch {
  int batch_size = 0;              // B
  int context_length = 0;          // T
  std::vector<int32_t> inputs;     // (B, T)
  std::vector<int32_t> targets;    // (B, T)
  // Instruction examples only (ExampleSampler): the TargetRole of each target.
  std::vector<uint8_t> roles;      // (B, T)
  // Where documents begin: 1 where the input token is a document's first (an example's, or a
  // jsonl/text document's in a window that holds one), else 0; filled by the samplers of
  // document data. The data side of data.document_boundaries=reset, which the attention will
  // read to restart its state, mask and positions there.
  std::vector<uint8_t> starts;     // (B, T)
  TokenBatch() = default;
  TokenBatch(int B, int T)
      : batch_size(B), context_length(T), inputs(size_t(B) * T), targets(size_t(B) * T), roles(size_t(B) * T),
        starts(size_t(B) * T) {}
};

// Data parallel (dist/dist.h): a step's global batch is ranks * grad_accum micro-batches,
// numbered 0 .. ranks*grad_accum - 1 and each drawn as one rank's micro-batch of that
// number. Rank r's local micro-batch m is global micro-batch m * ranks + r: the ranks
// own disjoint sets whose union is every global micro-batch, so N ranks x grad_accum A
// draw the same rows as 1 rank x grad_accum N*A (and as any N', A' with N'A' = NA).
// With one rank it is m, as before data parallelism existed.
inline int batch_global_micro(int rank, int ranks, int micro) { return micro * ranks + rank; }

class BatchSampler {
 public:
  // Throws Error if the split has fewer than T+1 tokens.
  BatchSampler(const TokenSplit& split, int batch_size, int context_length, uint64_t seed);
  // Document data (a version 3 token file): `documents` indexes tokens from `first`, the
  // split's first token in the file; sample(..., TokenBatch&) then fills batch.starts.
  void set_documents(const DocumentTable& documents, int64_t first);

  // Row b is the window starting at token s_b: inputs[b,t] = split[s_b + t],
  // targets[b,t] = split[s_b + t + 1]; s_b uniform in [0, N - T).
  void sample(int64_t step, int micro_batch, int32_t* inputs, int32_t* targets) const;  // (B, T), (B, T)
  void sample(int64_t step, int micro_batch, TokenBatch& out) const;  // out sized (B, T) by the caller

  int batch_size() const { return B_; }
  int context_length() const { return T_; }

 private:
  int64_t window_start(CounterRng& rng) const;
  TokenSplit split_;
  int B_, T_;
  uint64_t seed_;
  DocumentTable documents_;
  int64_t documents_first_ = 0;
};

// starts[t] = 1 where token first + t (of the file `documents` indexes) begins a document,
// for t in [0, T); the window [first, first + T) lies in the file.
void document_starts_fill(const DocumentTable& documents, int64_t first, int T, uint8_t* starts);  // (T)
// The documents' first tokens in [first, first + n) of the file, as indices from `first`, in order:
// where evaluation restarts (data.document_boundaries reset).
std::vector<int64_t> document_starts_in(const DocumentTable& documents, int64_t first, int64_t n);

// Evaluation windows in order: window w covers tokens [w*T, w*T + T] (inputs the
// first T, targets the last T), so windows do not overlap in their targets and
// each token after the first is predicted once. A tail shorter than T+1 is dropped.
// Bits per byte over a pass: sum of target losses / (ln 2 * sum of
// Tokenizer::token_bytes(target)); TokenSplit::bytes() covers the whole split.
class SequentialBatches {
 public:
  // max_windows > 0 caps the number of windows (e.g. eval_batches * B); throws
  // Error if the split has fewer than T+1 tokens.
  SequentialBatches(const TokenSplit& split, int batch_size, int context_length, int64_t max_windows = 0);

  int64_t windows() const { return windows_; }  // total windows this pass yields
  // Fills the next rows (at most B); returns how many (0 once the pass is done).
  int next(int32_t* inputs, int32_t* targets);  // (B, T), (B, T)
  int next(TokenBatch& out);                    // out sized (B, T) by the caller
  void reset() { next_window_ = 0; }

 private:
  TokenSplit split_;
  int B_, T_;
  int64_t windows_ = 0;
  int64_t next_window_ = 0;
};

}  // namespace rfa
