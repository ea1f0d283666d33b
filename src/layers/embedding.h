#pragma once
// Token embedding: out[n] = table[tokens[n]]. N = B*T rows.
#include <cstdint>

namespace rfa {

// Tokens must be in [0, V); the caller validates them (V is not passed here).
template <typename T>
void embedding_forward(T* out,                // (N, C)
                       const int32_t* tokens,  // (N)
                       const T* table,         // (V, C)
                       int64_t N, int C);

// dtable[tokens[n]] += dout[n]. Rows sharing a token are summed; the result
// does not depend on the thread count.
template <typename T>
void embedding_backward(T* dtable,              // (V, C)  +=
                        const T* dout,           // (N, C)
                        const int32_t* tokens,   // (N)
                        int64_t N, int C);

}  // namespace rfa
