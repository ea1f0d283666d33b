#include "data/batch_sampler.h"

#include <algorithm>

#include "core/error.h"
#include "core/rng.h"

namespace rfa {
namespace {

void check_split(const TokenSplit& split, int B, int T, const char* what) {
  if (B <= 0 || T <= 0) fail("{}: batch size {} and context length {} must be > 0", what, B, T);
  if (split.size() < static_cast<int64_t>(T) + 1)
    fail("{}: the split has {} tokens, fewer than context_length + 1 = {}; use a shorter model.context_length, a "
         "larger corpus, or a larger data.val_fraction (then re-run `rfa data prepare`)", what, split.size(), T + 1);
}

}  // namespace

BatchSampler::BatchSampler(const TokenSplit& split, int batch_size, int context_length, uint64_t seed)
    : split_(split), B_(batch_size), T_(context_length), seed_(seed) {
  check_split(split, B_, T_, "batch sampler");
}

void BatchSampler::set_documents(const DocumentTable& documents, int64_t first) {
  documents_ = documents;
  documents_first_ = first;
}

int64_t BatchSampler::window_start(CounterRng& rng) const {
  return static_cast<int64_t>(rng.below(static_cast<uint64_t>(split_.size() - T_)));  // windows of T+1 tokens
}

void BatchSampler::sample(int64_t step, int micro_batch, int32_t* inputs, int32_t* targets) const {
  CounterRng rng(seed_, static_cast<uint64_t>(step), static_cast<uint64_t>(micro_batch));
  for (int b = 0; b < B_; ++b) {
    int64_t s = window_start(rng);
    split_.copy(s, T_, inputs + static_cast<int64_t>(b) * T_);
    split_.copy(s + 1, T_, targets + static_cast<int64_t>(b) * T_);
  }
}

void BatchSampler::sample(int64_t step, int micro_batch, TokenBatch& out) const {
  RFA_ASSERT(out.batch_size == B_ && out.context_length == T_, "batch is ({}, {}), sampler ({}, {})", out.batch_size,
             out.context_length, B_, T_);
  sample(step, micro_batch, out.inputs.data(), out.targets.data());
  if (documents_.size() == 0) return;
  CounterRng rng(seed_, static_cast<uint64_t>(step), static_cast<uint64_t>(micro_batch));  // the same windows
  for (int b = 0; b < B_; ++b)
    document_starts_fill(documents_, documents_first_ + window_start(rng), T_, out.starts.data() + int64_t(b) * T_);
}

void document_starts_fill(const DocumentTable& documents, int64_t first, int T, uint8_t* starts) {
  std::fill(starts, starts + T, uint8_t{0});
  for (int64_t d = documents.find(first); d < documents.size() && documents.start(d) < first + T; ++d)
    if (documents.start(d) >= first) starts[documents.start(d) - first] = 1;
}

std::vector<int64_t> document_starts_in(const DocumentTable& documents, int64_t first, int64_t n) {
  std::vector<int64_t> out;
  for (int64_t d = documents.find(first); d < documents.size() && documents.start(d) < first + n; ++d)
    if (documents.start(d) >= first) out.push_back(documents.start(d) - first);
  return out;
}

SequentialBatches::SequentialBatches(const TokenSplit& split, int batch_size, int context_length,
                                     int64_t max_windows)
    : split_(split), B_(batch_size), T_(context_length) {
  check_split(split, B_, T_, "evaluation windows");
  windows_ = (split.size() - 1) / T_;
  if (max_windows > 0 && max_windows < windows_) windows_ = max_windows;
}

int SequentialBatches::next(int32_t* inputs, int32_t* targets) {
  int rows = static_cast<int>(std::min<int64_t>(B_, windows_ - next_window_));
  for (int b = 0; b < rows; ++b) {
    int64_t s = (next_window_ + b) * T_;
    split_.copy(s, T_, inputs + static_cast<int64_t>(b) * T_);
    split_.copy(s + 1, T_, targets + static_cast<int64_t>(b) * T_);
  }
  next_window_ += rows;
  return rows;
}

int SequentialBatches::next(TokenBatch& out) {
  RFA_ASSERT(out.batch_size == B_ && out.context_length == T_, "batch is ({}, {}), windows ({}, {})", out.batch_size,
             out.context_length, B_, T_);
  return next(out.inputs.data(), out.targets.data());
}

}  // namespace rfa
