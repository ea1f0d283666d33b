#pragma once
// The test binary's global operator new counts its calls (support/alloc_counter.cpp
// replaces every non-aligned form, malloc-based, behaviour unchanged), on every thread,
// in two counts: those a thread makes while it is inside a oneDNN call (the scope the
// gemm files hold, kernels/onednn_call_scope.h: oneDNN's own, which our code cannot
// avoid) and all the others. A no-allocation test reads them around the step it checks,
// after a warm-up step:
//   const HeapCounts before = test::heap_counts();  step();
//   CHECK((test::heap_counts() - before).ours == 0);
// malloc called directly (C libraries, oneDNN's own buffers) is not counted.
#include <doctest/doctest.h>

#include <vector>

namespace rfa::test {

struct HeapCounts {
  long ours = 0;    // operator new / new[] calls outside oneDNN
  long onednn = 0;  // ... by a thread inside a oneDNN call

  HeapCounts operator-(const HeapCounts& o) const { return {ours - o.ours, onednn - o.onednn}; }
};

HeapCounts heap_counts();  // so far, every thread

// What f() allocates.
template <typename F>
HeapCounts heap_counts_of(F&& f) {
  const HeapCounts before = heap_counts();
  f();
  return heap_counts() - before;
}

// Runs `step` n times (after the caller's warm-up) and checks each made ZERO allocations of
// ours; returns oneDNN's count for each run, for the caller to check or report.
template <typename F>
std::vector<long> check_no_allocation(int n, F&& step) {
  std::vector<long> onednn;
  for (int i = 0; i < n; ++i) {
    const HeapCounts c = heap_counts_of(step);
    INFO("run ", i + 1, " of ", n, " after the warm-up");
    CHECK(c.ours == 0);
    onednn.push_back(c.onednn);
  }
  return onednn;
}

}  // namespace rfa::test
