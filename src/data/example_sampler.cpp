#include "data/example_sampler.h"

#include <algorithm>

#include "config/config_enums.h"
#include "core/error.h"
#include "core/rng.h"

namespace rfa {

int64_t example_supervised(const DocumentTable& docs, int64_t d, bool train_on_prompt) {
  const int64_t n = docs.end(d) - docs.start(d), p = docs.response_start(d) - docs.start(d);
  if (train_on_prompt) return n - 1;
  if (!docs.answers_only()) return n - std::max<int64_t>(p, 1);  // targets t[j], j in [max(p, 1), n)
  int64_t answers = 0;  // mqar: t[j], j in [max(p, 1), n), at odd offsets j - p
  for (int64_t j = std::max<int64_t>(p, 1); j < n; ++j) answers += docs.response_target(j, p);
  return answers;
}

ExampleSampler::ExampleSampler(const TokenSplit& tokens, const DocumentTable& docs, int64_t first, int64_t count,
                               const ExampleLayout& layout, uint64_t seed, int micro_batches)
    : tokens_(tokens), docs_(docs), layout_(layout), seed_(seed), M_(micro_batches) {
  RFA_ASSERT(first >= 0 && count >= 0 && first + count <= docs.size(), "examples [{}, {}) of {}", first,
             first + count, docs.size());
  RFA_ASSERT(layout.batch_size > 0 && layout.context_length > 0 && micro_batches > 0, "layout");
  const int64_t capacity = int64_t(layout.context_length) + 1;  // tokens in a row
  int64_t used = capacity;                                      // of the row being filled: none open yet
  order_.reserve(static_cast<size_t>(count));
  // 0: the example can be trained on; 1: too long; 2: nothing to learn (drop() counts it once per unit).
  auto unfit = [&](int64_t d) {
    if (docs.end(d) - docs.start(d) > capacity) return 1;
    return example_supervised(docs, d, layout.train_on_prompt) <= 0 ? 2 : 0;
  };
  auto drop = [&](int why) { ++(why == 1 ? counts_.too_long : counts_.nothing_to_learn); };
  if (layout.pairs) {
    RFA_ASSERT(count % 2 == 0 && first % 2 == 0 && layout.batch_size % 2 == 0 && layout.packing == Packing::pad,
               "pairs of documents [{}, {}), batch {}", first, first + count, layout.batch_size);
    unit_rows_ = 2;
    for (int64_t d = first; d < first + count; d += 2) {
      if (const int why = unfit(d) ? unfit(d) : unfit(d + 1)) {
        drop(why);
        continue;
      }
      ++counts_.kept;
      for (int64_t e : {d, d + 1}) {
        row_begin_.push_back(static_cast<int64_t>(order_.size()));
        order_.push_back(e);
      }
    }
  } else {
    for (int64_t d = first; d < first + count; ++d) {
      if (const int why = unfit(d)) {
        drop(why);
        continue;
      }
      const int64_t n = docs.end(d) - docs.start(d);
      ++counts_.kept;
      if (layout.packing == Packing::pad || used + n > capacity) {  // a new row
        row_begin_.push_back(static_cast<int64_t>(order_.size()));
        used = 0;
      }
      order_.push_back(d);
      used += n;
    }
  }
  row_begin_.push_back(static_cast<int64_t>(order_.size()));
  if (counts_.kept == 0)
    fail("none of the {} training examples can be trained on: {} are longer than model.context_length + 1 = {} "
         "tokens and {} have no response token; raise model.context_length (it may differ from an --init-from "
         "parent's) or shorten the examples",
         count, counts_.too_long, capacity, counts_.nothing_to_learn);
}

int64_t ExampleSampler::unit_of(int64_t global_unit) const {
  const uint64_t U = static_cast<uint64_t>(units());
  const uint64_t u = static_cast<uint64_t>(global_unit), epoch = u / U;
  return static_cast<int64_t>(permute_index(u % U, U, mix64(seed_ ^ mix64(epoch + 0x51A8E5ull))));
}

int64_t ExampleSampler::unit(int64_t step, int micro, int slot) const {
  return unit_of((step * M_ + micro) * (layout_.batch_size / unit_rows_) + slot);
}

int64_t ExampleSampler::row_supervised(int64_t row) const {
  int64_t n = 0;
  for (int64_t k = row_begin_[static_cast<size_t>(row)]; k < row_begin_[static_cast<size_t>(row) + 1]; ++k)
    n += example_supervised(docs_, order_[static_cast<size_t>(k)], layout_.train_on_prompt);
  return n;
}

int64_t ExampleSampler::supervised(int64_t step, int micro) const {
  int64_t n = 0;
  for (int slot = 0; slot < layout_.batch_size / unit_rows_; ++slot)
    for (int r = 0; r < unit_rows_; ++r) n += row_supervised(unit(step, micro, slot) * unit_rows_ + r);
  return n;
}

int64_t ExampleSampler::supervised_step(int64_t step) const {
  int64_t n = 0;
  for (int m = 0; m < M_; ++m) n += supervised(step, m);
  return n;
}

void ExampleSampler::sample(int64_t step, int micro, TokenBatch& out) const {
  RFA_ASSERT(out.batch_size == layout_.batch_size && out.context_length == layout_.context_length,
             "batch is ({}, {}), examples ({}, {})", out.batch_size, out.context_length, layout_.batch_size,
             layout_.context_length);
  for (int slot = 0; slot < layout_.batch_size / unit_rows_; ++slot) fill_unit(unit(step, micro, slot), slot, out);
}

void ExampleSampler::fill_unit(int64_t unit, int slot, TokenBatch& out) const {
  for (int r = 0; r < unit_rows_; ++r) fill_row(unit * unit_rows_ + r, slot * unit_rows_ + r, out);
}

void ExampleSampler::fill_row(int64_t row, int b, TokenBatch& out) const {
  const int T = layout_.context_length;
  int32_t* inputs = out.inputs.data() + int64_t(b) * T;
  int32_t* targets = out.targets.data() + int64_t(b) * T;
  uint8_t* roles = out.roles.data() + int64_t(b) * T;
  uint8_t* starts = out.starts.data() + int64_t(b) * T;
  int64_t pos = 0;  // row index of the next example's first token
  for (int64_t k = row_begin_[static_cast<size_t>(row)]; k < row_begin_[static_cast<size_t>(row) + 1]; ++k) {
    const int64_t d = order_[static_cast<size_t>(k)];
    const int64_t s = docs_.start(d), n = docs_.end(d) - s, p = docs_.response_start(d) - s;
    for (int64_t j = 0; j < n; ++j) {  // token j of the example sits at row index q
      const int64_t q = pos + j;
      const int32_t t = tokens_[s + j];
      if (q < T) {
        inputs[q] = t;
        starts[q] = j == 0;
      }
      if (q == 0) continue;  // the row's first token is no target
      // t[0] of an example is predicted by nothing in it: across examples, no target.
      // mqar: only the answers are response targets; the query keys and EOS count as prompt.
      const TargetRole role = j == 0                                  ? TargetRole::none
                              : j < p || !docs_.response_target(j, p) ? TargetRole::prompt
                                                                      : TargetRole::response;
      const bool trained = role == TargetRole::response || (role == TargetRole::prompt && layout_.train_on_prompt);
      targets[q - 1] = trained ? t : -1;
      roles[q - 1] = static_cast<uint8_t>(role);
    }
    pos += n;
  }
  for (int64_t q = pos; q <= T; ++q) {  // padding: inputs from pos on, targets from pos - 1 on
    if (q < T) {
      inputs[q] = layout_.pad_id;
      starts[q] = 0;
    }
    targets[q - 1] = -1;
    roles[q - 1] = static_cast<uint8_t>(TargetRole::none);
  }
}

}  // namespace rfa
