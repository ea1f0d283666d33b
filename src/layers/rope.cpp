#include "layers/rope.h"

#include <cmath>

#include "core/error.h"
#include "core/parallel.h"
#include "core/segment_starts.h"

namespace rfa {

RopeTable RopeTable::build(int64_t max_positions, int Dh, double theta) {
  if (Dh <= 0 || Dh % 2 != 0) fail("rope: head size {} must be even and positive; pick d_model / n_heads even", Dh);
  if (max_positions < 1) fail("rope: max_positions {} must be at least 1", max_positions);
  if (!(theta > 1.0)) fail("rope: theta {} must be > 1 (10000 is the usual value)", theta);
  RopeTable table;
  table.max_positions = max_positions;
  table.Dh = Dh;
  table.theta = theta;
  const size_t size = static_cast<size_t>(max_positions) * (Dh / 2);
  table.cos_d.resize(size);
  table.sin_d.resize(size);
  table.cos_f.resize(size);
  table.sin_f.resize(size);
  table.rebase(0);
  return table;
}

void RopeTable::rebase(int64_t first) {
  RFA_ASSERT(first >= 0, "rope table rebased to position {}", first);
  first_position = first;
  const int half = Dh / 2;
  for (int64_t r = 0; r < max_positions; ++r) {
    for (int i = 0; i < half; ++i) {
      double angle = static_cast<double>(first + r) * std::pow(theta, -2.0 * i / Dh);
      size_t at = static_cast<size_t>(r) * half + i;
      cos_d[at] = std::cos(angle);
      sin_d[at] = std::sin(angle);
      cos_f[at] = static_cast<float>(cos_d[at]);
      sin_f[at] = static_cast<float>(sin_d[at]);
    }
  }
}

template <>
const float* RopeTable::cos_row<float>(int64_t p) const { return cos_f.data() + (p - first_position) * (Dh / 2); }
template <>
const float* RopeTable::sin_row<float>(int64_t p) const { return sin_f.data() + (p - first_position) * (Dh / 2); }
template <>
const double* RopeTable::cos_row<double>(int64_t p) const { return cos_d.data() + (p - first_position) * (Dh / 2); }
template <>
const double* RopeTable::sin_row<double>(int64_t p) const { return sin_d.data() + (p - first_position) * (Dh / 2); }

namespace {

// One row (all H heads at one position). Plain pointers: see rmsnorm.cpp.
template <typename Real, bool kBackward>
void rope_row(Real* y, const Real* x, const Real* cs, const Real* sn, int H, int Dh) {
  int half = Dh / 2;
  for (int h = 0; h < H; ++h, x += Dh, y += Dh) {
    for (int i = 0; i < half; ++i) {
      Real x0 = x[2 * i], x1 = x[2 * i + 1];
      if constexpr (!kBackward) {
        // y = R x (y may equal x: both inputs are read before writing)
        y[2 * i] = x0 * cs[i] - x1 * sn[i];
        y[2 * i + 1] = x0 * sn[i] + x1 * cs[i];
      } else {
        // forward: y0 = x0 c - x1 s, y1 = x0 s + x1 c  =>  dx = R^T dy (written, may be in place)
        y[2 * i] = x0 * cs[i] + x1 * sn[i];
        y[2 * i + 1] = -x0 * sn[i] + x1 * cs[i];
      }
    }
  }
}

// Rotates every head of N = B*T rows: the forward applies R(angle), the
// backward applies R(-angle) = R^T; both write (in place allowed).
template <typename Real, bool kBackward>
void rope_apply(Real* out, const Real* inp, const RopeTable& table, int B, int T, int H, int Dh,
                int64_t pos_offset) {
  RFA_ASSERT(table.Dh == Dh, "rope table built for Dh {} but called with Dh {}", table.Dh, Dh);
  RFA_ASSERT(table.covers(pos_offset, T),
             "rope positions [{}, {}) outside the table's [{}, {}); build or rebase the table for them", pos_offset,
             pos_offset + T, table.first_position, table.first_position + table.max_positions);
  int64_t C = static_cast<int64_t>(H) * Dh;
  parallel_for(static_cast<int64_t>(B) * T, [&](int64_t n) {
    int64_t p = pos_offset + n % T;
    rope_row<Real, kBackward>(out + n * C, inp + n * C, table.cos_row<Real>(p), table.sin_row<Real>(p), H, Dh);
  });
}

// The same with each token at its position in its own document (starts (B, T)): positions
// restart at 0 at a document's first token; before a row's first one they continue pos_offset.
template <typename Real, bool kBackward>
void rope_apply_segments(Real* out, const Real* inp, const RopeTable& table, int B, int T, int H, int Dh,
                         int64_t pos_offset, const uint8_t* starts) {
  RFA_ASSERT(table.Dh == Dh, "rope table built for Dh {} but called with Dh {}", table.Dh, Dh);
  RFA_ASSERT(table.covers(0, 1) && table.covers(pos_offset, T),
             "rope positions [{}, {}) outside the table's [{}, {}); build or rebase the table for them", pos_offset,
             pos_offset + T, table.first_position, table.first_position + table.max_positions);
  int64_t C = static_cast<int64_t>(H) * Dh;
  parallel_for(static_cast<int64_t>(B) * T, [&](int64_t n) {
    const int64_t p = segment_position(starts + (n / T) * T, static_cast<int>(n % T), pos_offset);
    rope_row<Real, kBackward>(out + n * C, inp + n * C, table.cos_row<Real>(p), table.sin_row<Real>(p), H, Dh);
  });
}

}  // namespace

template <typename Real>
void rope_forward_segments(Real* out, const Real* inp, const RopeTable& table, int B, int T, int H, int Dh,
                           int64_t pos_offset, const uint8_t* starts) {
  rope_apply_segments<Real, false>(out, inp, table, B, T, H, Dh, pos_offset, starts);
}

template <typename Real>
void rope_backward_segments(Real* dinp, const Real* dout, const RopeTable& table, int B, int T, int H, int Dh,
                            int64_t pos_offset, const uint8_t* starts) {
  rope_apply_segments<Real, true>(dinp, dout, table, B, T, H, Dh, pos_offset, starts);
}

template <typename Real>
void rope_forward(Real* out, const Real* inp, const RopeTable& table, int B, int T, int H, int Dh,
                  int64_t pos_offset) {
  rope_apply<Real, false>(out, inp, table, B, T, H, Dh, pos_offset);
}

template <typename Real>
void rope_backward(Real* dinp, const Real* dout, const RopeTable& table, int B, int T, int H, int Dh,
                   int64_t pos_offset) {
  rope_apply<Real, true>(dinp, dout, table, B, T, H, Dh, pos_offset);
}

template <typename T>
void rope_rows(T* x, const RopeTable& table, int B, int H, int Dh, const int64_t* pos) {
  const int half = Dh / 2;
  for (int b = 0; b < B; ++b) {
    RFA_ASSERT(table.Dh == Dh && pos[b] >= 0 && pos[b] < table.max_positions, "rope position {} outside the table's {}",
               pos[b], table.max_positions);
    const T* cs = table.cos_row<T>(pos[b]);
    const T* sn = table.sin_row<T>(pos[b]);
    for (int64_t r = int64_t(b) * H; r < int64_t(b + 1) * H; ++r) {
      T* y = x + r * Dh;
      for (int i = 0; i < half; ++i) {
        const T x0 = y[2 * i], x1 = y[2 * i + 1];
        y[2 * i] = x0 * cs[i] - x1 * sn[i];
        y[2 * i + 1] = x0 * sn[i] + x1 * cs[i];
      }
    }
  }
}

template void rope_rows<float>(float*, const RopeTable&, int, int, int, const int64_t*);
template void rope_rows<double>(double*, const RopeTable&, int, int, int, const int64_t*);
template void rope_forward<float>(float*, const float*, const RopeTable&, int, int, int, int, int64_t);
template void rope_forward<double>(double*, const double*, const RopeTable&, int, int, int, int, int64_t);
template void rope_backward<float>(float*, const float*, const RopeTable&, int, int, int, int, int64_t);
template void rope_backward<double>(double*, const double*, const RopeTable&, int, int, int, int, int64_t);
template void rope_forward_segments<float>(float*, const float*, const RopeTable&, int, int, int, int, int64_t,
                                           const uint8_t*);
template void rope_forward_segments<double>(double*, const double*, const RopeTable&, int, int, int, int, int64_t,
                                            const uint8_t*);
template void rope_backward_segments<float>(float*, const float*, const RopeTable&, int, int, int, int, int64_t,
                                            const uint8_t*);
template void rope_backward_segments<double>(double*, const double*, const RopeTable&, int, int, int, int, int64_t,
                                             const uint8_t*);

}  // namespace rfa
