#pragma once
// Pins core/parallel.h's fork factor and the pool's threads for a scope, restoring both after.
#include "core/parallel.h"

namespace rfa::test {

class ForkFactorScope {
 public:
  // threads: the pool for the scope; factor 0: every job that can fork does, 64: only the largest.
  ForkFactorScope(int threads, double factor) : threads_(thread_count()), factor_(parallel_fork_factor()) {
    thread_count_set(threads);
    parallel_fork_factor_set(factor);
  }
  ~ForkFactorScope() {
    thread_count_set(threads_);
    parallel_fork_factor_set(factor_);
  }
  ForkFactorScope(const ForkFactorScope&) = delete;
  ForkFactorScope& operator=(const ForkFactorScope&) = delete;

 private:
  int threads_;
  double factor_;
};

}  // namespace rfa::test
