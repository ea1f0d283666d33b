// The counting global operator new of the test binary (support/alloc_counter.h). Every
// non-aligned form is replaced, so that new and delete always pair up: the nothrow forms
// too (std::stable_sort's buffer uses them): with only the plain ones replaced, their
// memory came from the library's allocator and went back through the free() below
// (AddressSanitizer: alloc-dealloc-mismatch).
#include "support/alloc_counter.h"

#include <atomic>
#include <cstdlib>
#include <new>

#include "kernels/onednn_call_scope.h"

namespace {
std::atomic<long> g_ours{0}, g_onednn{0};

void count() { (rfa::onednn_call_depth() > 0 ? g_onednn : g_ours).fetch_add(1, std::memory_order_relaxed); }
}  // namespace

void* operator new(std::size_t n) {
  count();
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  count();
  return std::malloc(n ? n : 1);
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace rfa::test {

HeapCounts heap_counts() { return {g_ours.load(std::memory_order_relaxed), g_onednn.load(std::memory_order_relaxed)}; }

}  // namespace rfa::test
