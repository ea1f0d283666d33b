#include "kernels/gemm_bf16.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <omp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/parallel.h"
#include "kernels/bf16.h"
#include "kernels/onednn_call_scope.h"
#include "tensor/arena.h"

namespace rfa {
namespace {

struct Layout {
  bool trans_a, trans_b;
  int64_t M, N, K, lda, ldb, ldc;
  bool accumulate, one_thread;
  bool packed_b = false;  // B in the layout oneDNN picks (gemm_bf16_pack), ldb unused
  int64_t packed_m = 0;   // packed_b: the rows of the product that picked B's layout (M, or more rows)
  // A column part of a product: C is a contiguous (M, N) block behind the slot's scratchpad, which
  // the caller copies or adds into the product's strided columns (gemm_bf16_packed). oneDNN 2.6 has
  // only its jit gemm for a strided C, whose one- and two-row kernels are slow and sum in their own
  // order; for a contiguous one it picks brgemm.
  bool via_block = false;
  bool operator==(const Layout&) const = default;
};

// Threads of one parallel region may run products side by side (the batch split,
// train/batch_shards.h), each its own: a thread's slot is its number in the outermost
// region (0 outside one), and each slot has its own stream, scratchpad and memory objects,
// created by that thread the first time it runs a product (the warm-up that creates the
// primitives, TrainSession::bf16_prepare), so nothing is shared while products run but the
// primitives, which execute() only reads.
constexpr int kSlots = 256;

int thread_slot() {
  const int slot = omp_get_level() == 0 ? 0 : omp_get_ancestor_thread_num(1);
  RFA_ASSERT(slot >= 0 && slot < kSlots, "bf16 product on thread {}: at most {} threads run them", slot, kSlots);
  return slot;
}

// A matmul primitive's memory objects for one slot: execute() points them at the call's
// operands (set_data_handle) and runs through the C API, which takes the arguments as a
// plain array: dnnl::primitive::execute builds a hash map per call.
struct MatmulArgs {
  dnnl::memory a, b, c, scratch;
};

struct Matmul {
  Layout layout;
  dnnl::matmul primitive;
  dnnl::memory::desc a_md, b_md, c_md, scratch_md;
  size_t scratch_bytes = 0;  // oneDNN's scratchpad, then (via_block) the (M, N) block of C
  size_t block_offset = 0;
  std::string impl;  // oneDNN's name for the kernel it picked
  std::array<std::unique_ptr<MatmulArgs>, kSlots> args;  // each written by its own thread only
};

struct Slot {
  dnnl::stream stream;
  Arena<uint8_t> scratchpad;  // the largest scratchpad of the products this thread ran
};

// Distinct product layouts one process may create (a run makes tens).
constexpr int kMaxMatmuls = 4096;

struct Library {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  std::mutex lock;  // the creation of matmuls and slots
  // matmuls[0, matmul_count) are complete and never change: a lookup reads them without the lock
  // (every product looks its primitive up; under the batch split both threads, each time).
  std::array<std::unique_ptr<Matmul>, kMaxMatmuls> matmuls;
  std::atomic<int> matmul_count{0};
  std::array<std::unique_ptr<Slot>, kSlots> slots;
};

Library& library() {
  static Library lib;
  return lib;
}

dnnl::memory::desc matrix_desc(int64_t rows, int64_t cols, int64_t ld, bool trans, dnnl::memory::data_type type) {
  // op(X) (rows, cols): stored row-major with leading dimension ld, or its transpose.
  const dnnl::memory::dims strides = trans ? dnnl::memory::dims{1, ld} : dnnl::memory::dims{ld, 1};
  return dnnl::memory::desc({rows, cols}, type, strides);
}

Matmul* find_matmul(const Library& lib, const Layout& l, int count) {
  for (int i = 0; i < count; ++i)
    if (lib.matmuls[i]->layout == l) return lib.matmuls[i].get();
  return nullptr;
}

Matmul& matmul_for(const Layout& l) {
  Library& lib = library();
  if (Matmul* m = find_matmul(lib, l, lib.matmul_count.load(std::memory_order_acquire))) return *m;
  // Fewer rows than B was packed for: B keeps the layout the packing's product picked.
  std::optional<dnnl::memory::desc> b_packed;
  std::string packing_impl;
  if (l.packed_b && l.packed_m != l.M) {
    Layout packing = l;
    packing.M = l.packed_m;
    const Matmul& m = matmul_for(packing);
    b_packed = m.b_md;
    packing_impl = m.impl;
  }
  const std::lock_guard<std::mutex> hold(lib.lock);
  const int count = lib.matmul_count.load(std::memory_order_relaxed);
  if (Matmul* m = find_matmul(lib, l, count)) return *m;  // made by another thread meanwhile
  if (count == kMaxMatmuls)
    fail("bf16 products: more than {} distinct product layouts in one process", kMaxMatmuls);
  using dt = dnnl::memory::data_type;
  auto a_md = matrix_desc(l.M, l.K, l.lda, l.trans_a, dt::bf16);
  auto b_md = b_packed  ? *b_packed
              : l.packed_b ? dnnl::memory::desc({l.K, l.N}, dt::bf16, dnnl::memory::format_tag::any)
                           : matrix_desc(l.K, l.N, l.ldb, l.trans_b, dt::bf16);
  auto c_md = matrix_desc(l.M, l.N, l.ldc, false, dt::f32);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (l.accumulate) {
    dnnl::post_ops ops;
    ops.append_sum(1.0f);
    attr.set_post_ops(ops);
  }
  auto m = std::make_unique<Matmul>();
  m->layout = l;
  try {
    dnnl::matmul::primitive_desc pd({a_md, b_md, c_md}, attr, lib.engine);
    // Over a packing made for more rows, the kernel that made it if it takes these rows too
    // (oneDNN's first choice for one row may be another, with other sums).
    if (b_packed) {
      dnnl::matmul::primitive_desc first = pd;
      while (pd.impl_info_str() != packing_impl)
        if (!pd.next_impl()) {
          pd = first;
          break;
        }
    }
    m->primitive = dnnl::matmul(pd);
    m->a_md = a_md;
    m->b_md = pd.weights_desc();
    m->c_md = c_md;
    m->scratch_md = pd.scratchpad_desc();
    m->scratch_bytes = pd.scratchpad_desc().get_size();
    if (l.via_block) {
      m->block_offset = (m->scratch_bytes + 63) / 64 * 64;
      m->scratch_bytes = m->block_offset + static_cast<size_t>(l.M * l.N) * sizeof(float);
    }
    m->impl = pd.impl_info_str();
  } catch (const dnnl::error& e) {
    fail("oneDNN cannot build a bf16 matmul (trans_a {} trans_b {} M {} N {} K {} lda {} ldb {} ldc {}): {}",
         l.trans_a, l.trans_b, l.M, l.N, l.K, l.lda, l.ldb, l.ldc, e.what());
  }
  lib.matmuls[count] = std::move(m);
  lib.matmul_count.store(count + 1, std::memory_order_release);  // published complete
  return *lib.matmuls[count];
}

// This thread's slot and memory objects for m, created at its first product there.
MatmulArgs& args_for(Matmul& m, int slot_index, Slot*& slot) {
  Library& lib = library();
  if (!lib.slots[slot_index]) {
    const std::lock_guard<std::mutex> hold(lib.lock);
    lib.slots[slot_index] = std::make_unique<Slot>(Slot{dnnl::stream(lib.engine), Arena<uint8_t>()});
  }
  slot = lib.slots[slot_index].get();
  if (m.scratch_bytes > static_cast<size_t>(slot->scratchpad.size()))
    slot->scratchpad = Arena<uint8_t>(static_cast<int64_t>(m.scratch_bytes));
  std::unique_ptr<MatmulArgs>& args = m.args[slot_index];
  if (!args)
    args = std::make_unique<MatmulArgs>(MatmulArgs{dnnl::memory(m.a_md, lib.engine, DNNL_MEMORY_NONE),
                                                   dnnl::memory(m.b_md, lib.engine, DNNL_MEMORY_NONE),
                                                   dnnl::memory(m.c_md, lib.engine, DNNL_MEMORY_NONE),
                                                   dnnl::memory(m.scratch_md, lib.engine, DNNL_MEMORY_NONE)});
  return *args;
}

// C null (a via_block layout): into the slot's block, whose address it returns.
float* execute(Matmul& m, int slot_index, const uint16_t* A, const uint16_t* B, float* C) {
  const OnednnCallScope in_onednn;  // its own allocations (kernels/onednn_call_scope.h)
  Slot* slot = nullptr;
  MatmulArgs& x = args_for(m, slot_index, slot);
  if (!C) C = reinterpret_cast<float*>(slot->scratchpad.data() + m.block_offset);
  x.a.set_data_handle(const_cast<uint16_t*>(A));
  x.b.set_data_handle(const_cast<uint16_t*>(B));
  x.c.set_data_handle(C);
  x.scratch.set_data_handle(slot->scratchpad.data());
  const dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, x.a.get()},
                                  {DNNL_ARG_WEIGHTS, x.b.get()},
                                  {DNNL_ARG_DST, x.c.get()},
                                  {DNNL_ARG_SCRATCHPAD, x.scratch.get()}};
  dnnl_status_t status = dnnl_primitive_execute(m.primitive.get(), slot->stream.get(), 4, args);
  RFA_ASSERT(status == dnnl_success, "bf16 matmul status {} (M {} N {} K {})", static_cast<int>(status),
             m.layout.M, m.layout.N, m.layout.K);
  return C;
}

}  // namespace

void gemm_bf16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const uint16_t* A, int64_t lda,
               const uint16_t* B, int64_t ldb, bool accumulate, float* C, int64_t ldc, GemmThreads threads) {
  if (M == 0 || N == 0) return;
  if (K == 0) {  // op(A) op(B) is the zero matrix
    if (!accumulate)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = 0.0f;
    return;
  }
  // The thread count is fixed when a primitive is created: create and run it alike. Inside a
  // region whose threads each run their own products (OpenMP's count 1 there) that is one.
  const bool one_thread = threads == GemmThreads::one || thread_count() == 1;
  const Layout layout{trans_a, trans_b, M, N, K, lda, ldb, ldc, accumulate, one_thread};
  const int slot = thread_slot();
  auto product = [&] { execute(matmul_for(layout), slot, A, B, C); };
  if (threads == GemmThreads::one)
    single_threaded(product);
  else
    product();
}

void gemm_bf16_reference(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const uint16_t* A,
                         int64_t lda, const uint16_t* B, int64_t ldb, bool accumulate, float* C, int64_t ldc) {
  const int64_t a_size = trans_a ? K * lda : M * lda, b_size = trans_b ? N * ldb : K * ldb;
  std::vector<float> a(static_cast<size_t>(a_size)), b(static_cast<size_t>(b_size));
  for (int64_t i = 0; i < a_size; ++i) a[static_cast<size_t>(i)] = bf16_to_float(A[i]);
  for (int64_t i = 0; i < b_size; ++i) b[static_cast<size_t>(i)] = bf16_to_float(B[i]);
  gemm_reference<float>(trans_a, trans_b, M, N, K, 1.0f, a.data(), lda, b.data(), ldb, accumulate ? 1.0f : 0.0f,
                        C, ldc);
}

namespace {

// Part p of a product packed in `parts`: its columns of op(B) and C, and its primitive's layout
// (C's rows keep the whole product's stride N).
struct PackedPart {
  int64_t n0, n;
  Layout layout;
};

PackedPart packed_part(bool trans_b, int64_t M, int64_t N, int64_t K, bool accumulate, int p, int parts,
                       int64_t packed_m = 0) {
  RFA_ASSERT(M > 0 && N > 0 && K > 0, "packed bf16 product M {} N {} K {}", M, N, K);
  RFA_ASSERT(parts >= 1 && (parts == 1 || parts <= N / 16) && p >= 0 && p < parts,
             "packed bf16 product: part {} of {} over {} columns", p, parts, N);
  const int64_t n0 = gemm_bf16_part_begin(N, p, parts), n = gemm_bf16_part_begin(N, p + 1, parts) - n0;
  // A whole product writes C itself; a part writes its block, added into C's columns by the caller.
  Layout l{false, trans_b, M, n, K, K, 0, parts == 1 ? N : n, parts == 1 && accumulate, true};
  l.packed_b = true;
  l.packed_m = packed_m > 0 ? packed_m : M;
  l.via_block = parts > 1;
  return {n0, n, l};
}

}  // namespace

int64_t gemm_bf16_part_begin(int64_t N, int p, int parts) {
  // Whole 16-column blocks (a 64-byte register of C's row) but for the last part's end.
  return p >= parts ? N : N * p / parts / 16 * 16;
}

int64_t gemm_bf16_packed_bytes(bool trans_b, int64_t M, int64_t N, int64_t K, bool accumulate, int p, int parts) {
  const PackedPart part = packed_part(trans_b, M, N, K, accumulate, p, parts);
  int64_t bytes = 0;
  single_threaded([&] { bytes = static_cast<int64_t>(matmul_for(part.layout).b_md.get_size()); });
  return bytes;
}

void gemm_bf16_pack(bool trans_b, int64_t M, int64_t N, int64_t K, bool accumulate, const uint16_t* B, int64_t ldb,
                    int p, int parts, void* packed) {
  Library& lib = library();
  const PackedPart part = packed_part(trans_b, M, N, K, accumulate, p, parts);
  // op(B)'s columns [n0, n0 + n): B's rows n0.. when it is stored (N, K) (trans_b), else its columns.
  const uint16_t* b = B + (trans_b ? part.n0 * ldb : part.n0);
  single_threaded([&] {
    Matmul& m = matmul_for(part.layout);
    dnnl::memory plain(matrix_desc(K, part.n, ldb, trans_b, dnnl::memory::data_type::bf16), lib.engine,
                       const_cast<uint16_t*>(b));
    dnnl::memory blocked(m.b_md, lib.engine, packed);
    dnnl::stream stream(lib.engine);
    dnnl::reorder(plain, blocked).execute(stream, plain, blocked);
    stream.wait();
  });
}

namespace {

// Part p of one product: C's columns of that part (+)= A · its block of op(B).
void run_part(bool trans_b, int64_t M, int64_t N, int64_t K, bool accumulate, const uint16_t* A,
              const void* const* packed, int p, int parts, float* C, int64_t packed_m) {
  // The parts' layouts were made when packing (or by gemm_bf16_packed_rows_prepare): here they are
  // only looked up (no primitive is created).
  const PackedPart part = packed_part(trans_b, M, N, K, accumulate, p, parts, packed_m);
  const uint16_t* B = static_cast<const uint16_t*>(packed[p]);
  if (!part.layout.via_block) {
    execute(matmul_for(part.layout), thread_slot(), A, B, C + part.n0);
    return;
  }
  const float* block = execute(matmul_for(part.layout), thread_slot(), A, B, nullptr);  // (M, n)
  for (int64_t i = 0; i < M; ++i) {
    float* c = C + i * N + part.n0;
    const float* b = block + i * part.n;
    if (accumulate) {
#pragma omp simd
      for (int64_t j = 0; j < part.n; ++j) c[j] += b[j];
    } else {
      std::copy_n(b, part.n, c);
    }
  }
}

}  // namespace

void gemm_bf16_packed_group(bool trans_b, int64_t M, int64_t N, int64_t K, bool accumulate, const uint16_t* A,
                            std::span<const Bf16Product> products, int parts, int64_t packed_m) {
  auto run = [&](const Bf16Product& g, int p) {
    run_part(trans_b, M, N, K, accumulate, A, g.packed, p, parts, g.C, packed_m);
  };
  if (parts == 1 || in_parallel_region()) {
    single_threaded([&] {
      for (const Bf16Product& g : products)
        for (int p = 0; p < parts; ++p) run(g, p);
    });
  } else {
    parallel_region_serial_calls([&](int t, int threads) {
      for (const Bf16Product& g : products)
        for (int p = t; p < parts; p += threads) run(g, p);
    });
  }
}

void gemm_bf16_packed(bool trans_b, int64_t M, int64_t N, int64_t K, bool accumulate, const uint16_t* A,
                      const void* const* packed, int parts, float* C, int64_t packed_m) {
  const Bf16Product one{packed, C};
  gemm_bf16_packed_group(trans_b, M, N, K, accumulate, A, std::span<const Bf16Product>(&one, 1), parts, packed_m);
}

bool gemm_bf16_packed_rows_prepare(bool trans_b, int64_t M, int64_t N, int64_t K, bool accumulate,
                                   const void* const* packed, int parts, int64_t packed_m) {
  RFA_ASSERT(M >= 1 && M <= packed_m, "bf16 rows {} over a packing for {}", M, packed_m);
  if (M == packed_m) return true;
  for (int p = 0; p < parts; ++p) {
    bool fast = false;
    single_threaded([&] {
      try {
        const Matmul& m = matmul_for(packed_part(trans_b, M, N, K, accumulate, p, parts, packed_m).layout);
        Layout packing = m.layout;
        packing.M = packed_m;
        fast = m.impl == matmul_for(packing).impl;
      } catch (const Error&) {
        fast = false;  // no kernel for this M over that layout
      }
    });
    if (!fast) return false;
  }
  // The same rows, M of them and then as the first of packed_m: equal bits, or the rows of a step
  // would change with the rows beside them. Operands from a fixed hash; this runs once, when a
  // decoder is built, so its vectors are no allocation of the decode loop.
  std::vector<uint16_t> a(static_cast<size_t>(packed_m * K), 0);
  for (size_t i = 0; i < static_cast<size_t>(M * K); ++i) {
    const int64_t hashed = static_cast<int64_t>((i * 2654435761u) % 2001) - 1000;  // -1000 .. 1000
    a[i] = bf16_from_float_reference(static_cast<float>(hashed) / 997.0f);
  }
  std::vector<float> few(static_cast<size_t>(M * N)), all(static_cast<size_t>(packed_m * N));
  for (size_t i = 0; i < few.size(); ++i) few[i] = all[i] = static_cast<float>(i % 13) * 0.25f;
  gemm_bf16_packed(trans_b, M, N, K, accumulate, a.data(), packed, parts, few.data(), packed_m);
  gemm_bf16_packed(trans_b, packed_m, N, K, accumulate, a.data(), packed, parts, all.data(), packed_m);
  return std::equal(few.begin(), few.end(), all.begin(), [](float x, float y) {
    return std::bit_cast<uint32_t>(x) == std::bit_cast<uint32_t>(y);
  });
}

int64_t gemm_bf16_primitive_count() { return library().matmul_count.load(std::memory_order_acquire); }

}  // namespace rfa
