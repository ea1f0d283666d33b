#pragma once
// Rotary position embedding on q or k laid out (B, T, H, Dh), i.e. (N, C) with
// heads inside C. Pair (2i, 2i+1) of each head at position p = pos_offset + t is
// rotated by angle p * theta^(-2i/Dh):
//   out[2i]   = x[2i] cos - x[2i+1] sin
//   out[2i+1] = x[2i] sin + x[2i+1] cos
#include <cstdint>
#include <vector>

namespace rfa {

// cos/sin of p * theta^(-2i/Dh) for p in [first_position, first_position +
// max_positions), i in [0, Dh/2). Built once outside the hot loop (allocates);
// computed in double, and stored in both precisions so the float path reads
// float and the double path reads double. A table of fixed size can slide along
// a text of any length (RFA decoding has no position limit): rebase() refills it
// in place, and a row holds the same values whichever window it was built for.
struct RopeTable {
  int64_t first_position = 0;  // row r holds position first_position + r
  int64_t max_positions = 0;   // rows
  int Dh = 0;
  double theta = 10000.0;
  std::vector<float> cos_f, sin_f;    // (max_positions, Dh/2)
  std::vector<double> cos_d, sin_d;   // (max_positions, Dh/2)

  // Rows for positions [0, max_positions). Throws Error when Dh is odd or not
  // positive, or max_positions < 1.
  static RopeTable build(int64_t max_positions, int Dh, double theta = 10000.0);
  // Refills the rows for positions [first, first + max_positions); no allocation.
  void rebase(int64_t first);
  // Whether positions [pos, pos + n) are all in the table.
  bool covers(int64_t pos, int64_t n) const {
    return pos >= first_position && pos + n <= first_position + max_positions;
  }

  template <typename Real>
  const Real* cos_row(int64_t p) const;  // (Dh/2) of absolute position p (covered)
  template <typename Real>
  const Real* sin_row(int64_t p) const;  // (Dh/2)
};

// out may equal inp (in place). Requires table.covers(pos_offset, T) and
// table.Dh == Dh (asserted).
// (The scalar type is named Real here because T is the time dimension.)
template <typename Real>
void rope_forward(Real* out,         // (B, T, H, Dh)
                  const Real* inp,   // (B, T, H, Dh)
                  const RopeTable& table, int B, int T, int H, int Dh, int64_t pos_offset);

// dinp = R^T dout (the rotation by the negative angle). dinp may equal dout (in
// place): q's only consumer is the rope, so its gradient is rotated where it lies.
template <typename Real>
void rope_backward(Real* dinp,        // (B, T, H, Dh) =
                   const Real* dout,  // (B, T, H, Dh)
                   const RopeTable& table, int B, int T, int H, int Dh, int64_t pos_offset);

// rope_forward / rope_backward with positions restarting at document boundaries (data.document_boundaries
// reset): token t of row b at segment_position(starts + b*T, t, pos_offset) (core/segment_starts.h), its
// position in its own document. starts (B, T), nonzero at a document's first token.
template <typename Real>
void rope_forward_segments(Real* out, const Real* inp, const RopeTable& table, int B, int T, int H, int Dh,
                           int64_t pos_offset, const uint8_t* starts);
template <typename Real>
void rope_backward_segments(Real* dinp, const Real* dout, const RopeTable& table, int B, int T, int H, int Dh,
                            int64_t pos_offset, const uint8_t* starts);

// rope_forward for one token per row, row b at its own absolute position pos[b], in place
// and on the calling thread (the decode step: a thread fork would cost more than the rows).
template <typename T>
void rope_rows(T* x /*(B, H, Dh)*/, const RopeTable& table, int B, int H, int Dh, const int64_t* pos /*(B)*/);

}  // namespace rfa
