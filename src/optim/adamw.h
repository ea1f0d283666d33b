#pragma once
// AdamW over the model's flat parameter layout (llm.c style): params, grads, m
// and v are four float arrays of the same length n, element i of each belonging
// to the same parameter. Decoupled weight decay as in PyTorch's AdamW:
//   p <- p - lr * wd * p                       (only where the decay mask says so)
//   m <- b1 m + (1 - b1) g
//   v <- b2 v + (1 - b2) g^2
//   p <- p - lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
// with the step counter t starting at 1 for the first update.
#include <cstdint>
#include <vector>

#include "config/config.h"

namespace rfa {

// One contiguous run of parameters [offset, offset + count), whether weight decay
// applies to it (weight matrices: yes; norms, gate biases, sigma: no) and the factor on
// the learning rate of its update (optim.sigma_lr_scale for sigma; 1 elsewhere).
struct DecayRange {
  int64_t offset = 0;
  int64_t count = 0;
  bool decay = false;
  double lr_scale = 1;
};

// A validated partition of [0, size) into decay ranges, sorted by offset, with
// neighbours of equal flag merged. Built once; the update reads it without allocating.
struct DecayMask {
  int64_t size = 0;
  std::vector<DecayRange> ranges;
};

// Sorts and checks that `ranges` cover [0, size) exactly once (no gap, no overlap);
// throws rfa::Error naming the offending range otherwise.
DecayMask decay_mask_build(std::vector<DecayRange> ranges, int64_t size);

// The scalars of one update, computed once per step from the config.
struct AdamWStep {
  double lr = 0;            // this step's learning rate (from lr_schedule)
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0;  // applied only where the mask says decay
  int64_t t = 1;            // 1 for the first update
};

AdamWStep adamw_step_make(const OptimConfig& config, double lr, int64_t t);

// One AdamW update in place, parallel over elements. No allocation.
// The mask's size must equal n.
void adamw_update(const AdamWStep& step, const DecayMask& mask,
                  float* params,       // (n)
                  const float* grads,  // (n)
                  float* m,            // (n) first moment, zero before the first step
                  float* v,            // (n) second moment, zero before the first step
                  int64_t n);

// Plain serial double-precision twin of adamw_update for tests.
void adamw_update_reference(const AdamWStep& step, const DecayMask& mask, float* params,
                            const float* grads, float* m, float* v, int64_t n);

}  // namespace rfa
