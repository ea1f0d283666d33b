#include "optim/lr_schedule.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace rfa {

double lr_at(const OptimConfig& c, int64_t step, int64_t total_steps) {
  if (total_steps <= 0) fail("lr schedule: train.steps is {}; it must be at least 1", total_steps);
  if (c.warmup_steps < 0) fail("optim.warmup_steps is {}; it must be >= 0", c.warmup_steps);
  if (!(c.lr > 0)) fail("optim.lr is {}; it must be > 0", c.lr);
  if (!(c.lr_min >= 0 && c.lr_min <= c.lr)) {
    fail("optim.lr_min is {}; it must lie in [0, optim.lr = {}]", c.lr_min, c.lr);
  }
  RFA_ASSERT(step >= 0, "lr schedule step {} is negative", step);
  if (step < c.warmup_steps) {
    return c.lr * static_cast<double>(step + 1) / static_cast<double>(c.warmup_steps);
  }
  int64_t decay_steps = total_steps - 1 - c.warmup_steps;
  double progress =
      decay_steps > 0 ? static_cast<double>(step - c.warmup_steps) / static_cast<double>(decay_steps) : 1.0;
  progress = std::clamp(progress, 0.0, 1.0);
  return c.lr_min + (c.lr - c.lr_min) * 0.5 * (1.0 + std::cos(M_PI * progress));
}

}  // namespace rfa
