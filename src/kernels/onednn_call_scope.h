#pragma once
// Marks the calling thread as inside a oneDNN call, for the no-allocation tests
// (tests/support/alloc_counter.h). oneDNN allocates on its own inside some calls (2.6's
// dnnl_sgemm: 192 B on 2 threads each time it splits a product over threads, from the
// first size in a train step that is big enough), which no code of ours can avoid without
// another product (other sums, other numbers). The tests charge what a thread allocates
// while it is inside oneDNN to oneDNN, and require ZERO of everything else in a training
// or decode step. Held by the files that call oneDNN (kernels/gemm.cpp, gemm_bf16.cpp)
// around each call. Only RFA_TEST_HOOKS builds count; elsewhere the scope is empty.
namespace rfa {

#ifdef RFA_TEST_HOOKS
// > 0 while the calling thread is inside a oneDNN call.
int onednn_call_depth();

class OnednnCallScope {
 public:
  OnednnCallScope();
  ~OnednnCallScope();
  OnednnCallScope(const OnednnCallScope&) = delete;
  OnednnCallScope& operator=(const OnednnCallScope&) = delete;
};
#else
inline int onednn_call_depth() { return 0; }

class OnednnCallScope {};
#endif

}  // namespace rfa
