#pragma once
// bf16 matrix products: oneDNN's matmul with bf16 operands, f32 accumulation and
// an f32 destination (420-450 GFLOP/s on two AVX512-BF16 cores, about twice the
// sgemm rate). Same row-major conventions as gemm.h:
//   C (M, N) = op(A) (M, K) · op(B) (K, N)          (accumulate: C += ...)
// op(A) = A (M, K) with lda >= K, or A stored (K, M) with lda >= M when trans_a;
// likewise B. Operands are bf16 (kernels/bf16.h), C is float.
//
// oneDNN 2.6 ignores fpmath_mode::bf16 on an f32 matmul, so the operands are
// converted explicitly by the caller. One primitive per distinct (layout, shape,
// accumulate, threads), created at its first use and kept for the process (a
// training session meets a fixed handful and creates them before its first step,
// TrainSession::bf16_prepare; steps only look them up); each runs on a user scratchpad, so nothing of ours is
// allocated per product (oneDNN's execute still builds its argument map
// internally, a fixed few allocations per call, as dnnl_sgemm does).
// Called from one thread, or from the threads of one parallel region at once, each
// running its own products (the batch split): primitives are shared, each thread has its
// own scratchpad, stream and memory objects (kernels/gemm_bf16.cpp, thread_slot).
#include <cstdint>
#include <span>

#include "kernels/gemm.h"

namespace rfa {

void gemm_bf16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const uint16_t* A, int64_t lda,
               const uint16_t* B, int64_t ldb, bool accumulate, float* C, int64_t ldc,
               GemmThreads threads = GemmThreads::pool);

// The twin the tests compare against: the operands widened to float exactly and
// multiplied with a double accumulator (gemm_reference).
void gemm_bf16_reference(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const uint16_t* A,
                         int64_t lda, const uint16_t* B, int64_t ldb, bool accumulate, float* C, int64_t ldc);

// Products of few rows against a fixed weight matrix (the decode step): B packed
// once into oneDNN's blocked bf16 layout. With B plain, every call reformats all
// of B (the kernel reads it in K-pairs), which costs as much as the product when M
// is 1; packed, a one-row product streams half the bytes of the float one.
// B is packed in `parts` blocks of columns, part p holding op(B)'s columns
// [gemm_bf16_part_begin(N, p, parts), gemm_bf16_part_begin(N, p + 1, parts)), so that the
// parts of a product run side by side, each one oneDNN call on one of the pool's threads
// (a one-row product streams its weights, which one core alone does at about half the
// rate of two; 64 rows are bound by the multiply-adds); a part writes a contiguous block of its
// thread's, copied or added into C's columns (into strided columns oneDNN 2.6 runs only its jit gemm,
// whose few-row kernels are 3x slower than brgemm). `parts` is fixed when packing:
// the same parts whatever the thread count, so a product's values do not depend on it.
//   for each p: bytes_p = gemm_bf16_packed_bytes(..., p, parts); gemm_bf16_pack(..., p, parts, packed[p]);
//   then per product gemm_bf16_packed(..., packed, parts, C) with the same (trans_b, M, N, K, accumulate).
// Each packed[p] must be 64-byte aligned and bytes_p long. 1 <= parts <= max(1, N / 16).
int64_t gemm_bf16_part_begin(int64_t N, int p, int parts);
int64_t gemm_bf16_packed_bytes(bool trans_b, int64_t M, int64_t N, int64_t K, bool accumulate, int p, int parts);
void gemm_bf16_pack(bool trans_b, int64_t M, int64_t N, int64_t K, bool accumulate, const uint16_t* B, int64_t ldb,
                    int p, int parts, void* packed);
// C (M, N) (+)= A (M, K) · op(B), B as packed by gemm_bf16_pack; A and C contiguous rows. Outside a
// parallel region the parts run on the pool (thread t: parts t, t + threads, ...); inside one, all on
// the calling thread.
// packed_m: the M B was packed for (0: this M). Fewer rows than that run over the same packing once
// gemm_bf16_packed_rows_prepare said yes for them.
void gemm_bf16_packed(bool trans_b, int64_t M, int64_t N, int64_t K, bool accumulate, const uint16_t* A,
                      const void* const* packed, int parts, float* C, int64_t packed_m = 0);
// One product of a group: B packed by gemm_bf16_pack (its `parts` blocks), and its C (M, N).
struct Bf16Product {
  const void* const* packed = nullptr;
  float* C = nullptr;
};
// Every product of the group, C_i (M, N) (+)= A (M, K) · op(B_i), in one pass of the pool: each
// thread runs its parts of every product in turn (thread t: parts t, t + threads, ...). The same
// calls as gemm_bf16_packed on each, so the same bits; one fork and join instead of one a product
// (a decode step's q, k and v read the same input).
void gemm_bf16_packed_group(bool trans_b, int64_t M, int64_t N, int64_t K, bool accumulate, const uint16_t* A,
                            std::span<const Bf16Product> products, int parts, int64_t packed_m = 0);
// Readies products of M <= packed_m rows over B packed for packed_m (the decode step of a server
// whose slots are not all busy: 1 row need not cost 64). Creates their primitives, and answers
// whether they may be used: oneDNN has a fast kernel for that M over the packed layout, and its rows
// are the bits of the same rows in a product of packed_m rows (run here on fixed operands), so that
// a row's result does not depend on how many rows run beside it. Call before the loop that runs them.
bool gemm_bf16_packed_rows_prepare(bool trans_b, int64_t M, int64_t N, int64_t K, bool accumulate,
                                   const void* const* packed, int parts, int64_t packed_m);
// Primitives created so far (a test checks that repeated steps create none).
int64_t gemm_bf16_primitive_count();

}  // namespace rfa
