#pragma once
// The decode step's matrix products, batch-invariant: each output element is the same sequence
// of operations whatever the number of rows M, the row's index among them and the thread count,
// so a sequence decoded beside 63 others gets the bits it gets alone (rfa serve, rfa generate
// --num-samples). oneDNN's sgemm does not promise that: it runs a matrix-vector kernel for one
// row, another for 2..15 rows and a third from 16 (measured on AMD Zen 5, oneDNN 2.6), each
// summing in its own order, and a near-tie between two tokens then went either way.
//
// out (M, N) (+)= x (M, K) · W, W given stored (N, K) (trans_w, the projections' layout) or
// (K, N), and packed once (step_pack) into panels of kStepPanel columns, each panel (K, width)
// row-major: a panel's row k is the next contiguous run of weights the kernel reads. Every
// output element is one multiply-add chain in k order, out[m, n] = ((x[m, 0] W[0, n] + x[m, 1]
// W[1, n]) + ...) + x[m, K-1] W[K-1, n], then written or added to out: register tiles of rows by
// columns broadcast x and multiply whole registers of W, no horizontal sums, whatever the tile.
// Threads split panels and blocks of rows, never a sum. T = double: the same layout and chain in
// scalar code (the tests' reference path).
#include <cstdint>
#include <span>

#include "kernels/gemm.h"

namespace rfa {

// Columns of a panel: 8 vector registers (AVX-512 128, AVX2 64). The last panel holds the
// remaining columns rounded up to whole registers, zero-padded.
template <typename T>
int64_t step_panel_columns();

// Elements of W's packed copy.
template <typename T>
int64_t step_packed_size(int64_t N, int64_t K);

// packed (step_packed_size) = W (N, K) (trans_w) or (K, N), row-major, leading dimension K or N.
template <typename T>
void step_pack(bool trans_w, int64_t N, int64_t K, const T* W, T* packed);

// Rows of W (N, K), as stored for trans_w, read back from its packed copy: out (n, K), row i = W's row
// rows[i]. For an LM head tied to the embedding whose stored copy is gone (a decoder that released
// the model's matrices): the embedding's rows, the same values. Each a strided gather of K values
// (one per panel row), on the pool over rows.
template <typename T>
void step_packed_rows(const T* packed, int64_t N, int64_t K, const int32_t* rows, int64_t n, T* out);

// Where a product's packed weights come from on each call: `cache` (they stay in the caches
// between steps: a small model's), or `memory` (more than the caches hold: every call streams them
// from memory). From memory, on targets of 16 vector registers (AVX2; x86-64-v3) a task's tiles of
// 2 to 12 rows also prefetch the next task's panel into L2 while they run, so that the panel's
// first pass does not wait on memory (docs/cpu-targets.md, "The next panel, prefetched"). The
// bits do not depend on it.
enum class WeightsFrom { cache, memory };

// out (M, N) (+)= x (M, K) · W, W packed by step_pack; x and out row-major, leading dimensions K
// and N.
template <typename T>
void step_gemm(int64_t M, int64_t N, int64_t K, const T* x, const T* packed, T* out, bool accumulate,
               GemmThreads threads, WeightsFrom from = WeightsFrom::cache);

// One product of a group: W packed by step_pack, and its out (M, N).
template <typename T>
struct StepProduct {
  const T* packed = nullptr;
  T* out = nullptr;
};

// Every product of the group, out_i (M, N) (+)= x (M, K) · W_i, in one pass of the pool: each
// element the same chain as step_gemm's. For the projections that read one input (q, k and v):
// one fork and join instead of three, and a row's three 384-wide products (each below the
// fork's threshold alone) split over the cores together.
template <typename T>
void step_gemm_group(int64_t M, int64_t N, int64_t K, const T* x, std::span<const StepProduct<T>> products,
                     bool accumulate, GemmThreads threads, WeightsFrom from = WeightsFrom::cache);

// Thread t of nt's part of a group's tasks, inside a parallel region whose nt threads each call it
// with the same arguments (a decode step's team, decode/decoder_step.cpp): together the product
// step_gemm_group computes on the pool, the same bits. No fork; the caller synchronizes.
struct StepShare {
  int t = 0, nt = 1;
};
template <typename T>
void step_gemm_group_share(int64_t M, int64_t N, int64_t K, const T* x, std::span<const StepProduct<T>> products,
                           bool accumulate, WeightsFrom from, StepShare share);

}  // namespace rfa
