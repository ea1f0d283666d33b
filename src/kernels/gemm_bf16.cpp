#include "kernels/gemm_bf16.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <memory>
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
  bool operator==(const Layout&) const = default;
};

// A matmul primitive with its memory objects; execute() points them at the call's
// operands (set_data_handle) and runs through the C API, which takes the arguments
// as a plain array: dnnl::primitive::execute builds a hash map per call.
struct Matmul {
  Layout layout;
  dnnl::matmul primitive;
  dnnl::memory a, b, c, scratch;
  size_t scratch_bytes = 0;
};

struct Library {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::vector<std::unique_ptr<Matmul>> matmuls;
  Arena<uint8_t> scratchpad;  // shared: products run one after another
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

Matmul& matmul_for(const Layout& l) {
  Library& lib = library();
  for (auto& m : lib.matmuls)
    if (m->layout == l) return *m;
  using dt = dnnl::memory::data_type;
  auto a_md = matrix_desc(l.M, l.K, l.lda, l.trans_a, dt::bf16);
  auto b_md = l.packed_b ? dnnl::memory::desc({l.K, l.N}, dt::bf16, dnnl::memory::format_tag::any)
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
    m->primitive = dnnl::matmul(pd);
    m->a = dnnl::memory(a_md, lib.engine, DNNL_MEMORY_NONE);
    m->b = dnnl::memory(pd.weights_desc(), lib.engine, DNNL_MEMORY_NONE);
    m->c = dnnl::memory(c_md, lib.engine, DNNL_MEMORY_NONE);
    m->scratch = dnnl::memory(pd.scratchpad_desc(), lib.engine, DNNL_MEMORY_NONE);
    m->scratch_bytes = pd.scratchpad_desc().get_size();
  } catch (const dnnl::error& e) {
    fail("oneDNN cannot build a bf16 matmul (trans_a {} trans_b {} M {} N {} K {} lda {} ldb {} ldc {}): {}",
         l.trans_a, l.trans_b, l.M, l.N, l.K, l.lda, l.ldb, l.ldc, e.what());
  }
  if (m->scratch_bytes > static_cast<size_t>(lib.scratchpad.size()))
    lib.scratchpad = Arena<uint8_t>(static_cast<int64_t>(m->scratch_bytes));
  lib.matmuls.push_back(std::move(m));
  return *lib.matmuls.back();
}

void execute(Matmul& m, const uint16_t* A, const uint16_t* B, float* C) {
  Library& lib = library();
  const OnednnCallScope in_onednn;  // its own allocations (kernels/onednn_call_scope.h)
  m.a.set_data_handle(const_cast<uint16_t*>(A));
  m.b.set_data_handle(const_cast<uint16_t*>(B));
  m.c.set_data_handle(C);
  m.scratch.set_data_handle(lib.scratchpad.data());
  const dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, m.a.get()},
                                  {DNNL_ARG_WEIGHTS, m.b.get()},
                                  {DNNL_ARG_DST, m.c.get()},
                                  {DNNL_ARG_SCRATCHPAD, m.scratch.get()}};
  dnnl_status_t status = dnnl_primitive_execute(m.primitive.get(), lib.stream.get(), 4, args);
  RFA_ASSERT(status == dnnl_success, "bf16 matmul status {} (M {} N {} K {})", static_cast<int>(status),
             m.layout.M, m.layout.N, m.layout.K);
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
  const Layout layout{trans_a, trans_b, M, N, K, lda, ldb, ldc, accumulate, threads == GemmThreads::one};
  // The thread count is fixed when a primitive is created: create and run it alike.
  auto product = [&] { execute(matmul_for(layout), A, B, C); };
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

Layout packed_layout(bool trans_b, int64_t M, int64_t N, int64_t K, bool accumulate) {
  RFA_ASSERT(M > 0 && N > 0 && K > 0, "packed bf16 product M {} N {} K {}", M, N, K);
  Layout l{false, trans_b, M, N, K, K, 0, N, accumulate, true};
  l.packed_b = true;
  return l;
}

}  // namespace

int64_t gemm_bf16_packed_bytes(bool trans_b, int64_t M, int64_t N, int64_t K, bool accumulate) {
  int64_t bytes = 0;
  single_threaded([&] {
    bytes = static_cast<int64_t>(matmul_for(packed_layout(trans_b, M, N, K, accumulate)).b.get_desc().get_size());
  });
  return bytes;
}

void gemm_bf16_pack(bool trans_b, int64_t M, int64_t N, int64_t K, bool accumulate, const uint16_t* B, int64_t ldb,
                    void* packed) {
  Library& lib = library();
  single_threaded([&] {
    Matmul& m = matmul_for(packed_layout(trans_b, M, N, K, accumulate));
    dnnl::memory plain(matrix_desc(K, N, ldb, trans_b, dnnl::memory::data_type::bf16), lib.engine,
                       const_cast<uint16_t*>(B));
    dnnl::memory blocked(m.b.get_desc(), lib.engine, packed);
    dnnl::reorder(plain, blocked).execute(lib.stream, plain, blocked);
    lib.stream.wait();
  });
}

void gemm_bf16_packed(bool trans_b, int64_t M, int64_t N, int64_t K, bool accumulate, const uint16_t* A,
                      const void* packed, float* C) {
  const Layout layout = packed_layout(trans_b, M, N, K, accumulate);
  single_threaded([&] { execute(matmul_for(layout), A, static_cast<const uint16_t*>(packed), C); });
}

int64_t gemm_bf16_primitive_count() { return static_cast<int64_t>(library().matmuls.size()); }

}  // namespace rfa
