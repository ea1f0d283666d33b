#pragma once
// Learning-rate schedule: linear warmup then cosine decay (nanoGPT style).
// Steps are 0-based optimizer steps s = 0 .. total_steps - 1; W = warmup_steps.
//   s <  W:  lr * (s + 1) / W                       (reaches lr at s = W - 1)
//   s >= W:  lr_min + (lr - lr_min) * (1 + cos(pi * p)) / 2,
//            p = (s - W) / (total_steps - 1 - W), clamped to [0, 1]
//            (p = 1 when total_steps - 1 - W <= 0: the last step ends at lr_min)
// So the peak lr is at s = W and lr_min at the last step s = total_steps - 1;
// steps past the end (a run extended on resume) stay at lr_min.
#include <cstdint>

#include "config/config.h"

namespace rfa {

// Throws rfa::Error if total_steps <= 0, warmup_steps < 0, lr <= 0 or lr_min
// outside [0, lr]; step must be >= 0.
double lr_at(const OptimConfig& config, int64_t step, int64_t total_steps);

}  // namespace rfa
