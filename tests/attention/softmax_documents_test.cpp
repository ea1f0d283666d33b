// Blockwise softmax with document boundaries (softmax_flash's starts): a packed row equals its
// documents run separately (outputs and dq, dk, dv), with documents that span several key blocks,
// begin on a block's first row, are one token long, or began before the row.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "attention/softmax_flash.h"
#include "core/parallel.h"
#include "support/gradcheck.h"

using namespace rfa;

namespace {

struct Flash {
  AttentionDims d;
  std::vector<double> q, k, v, out, lse, ws, dq, dk, dv;
  explicit Flash(AttentionDims dims) : d(dims) {
    const size_t act = size_t(d.B) * d.T * d.C();
    q.resize(act), k.resize(act), v.resize(act), out.resize(act), dq.resize(act), dk.resize(act), dv.resize(act);
    lse.resize(softmax_flash_saved_size(d));
    ws.resize(softmax_flash_workspace_size(d, thread_count()));
  }
  void run(const std::vector<double>& dout, const uint8_t* starts) {
    softmax_flash_forward(out.data(), lse.data(), Workspace<double>{ws.data(), ws.size()}, q.data(), k.data(),
                          v.data(), d, starts);
    softmax_flash_backward(dq.data(), dk.data(), dv.data(), Workspace<double>{ws.data(), ws.size()}, dout.data(),
                           out.data(), lse.data(), q.data(), k.data(), v.data(), d, starts);
  }
};

}  // namespace

TEST_CASE("softmax documents: a packed row equals its documents run separately") {
  const int T = 150;
  const std::vector<std::vector<int>> rows = {{30, 34, 36, 28, 1, 21}, {-70, 80}};  // 64 and 128 start documents
  const AttentionDims d{2, T, 2, 8};
  const int C = d.C();
  std::vector<uint8_t> starts(size_t(d.B) * T, 0);
  for (size_t b = 0; b < rows.size(); ++b) {
    int t = 0;
    for (int len : rows[b]) {
      if (len > 0) starts[b * T + t] = 1;
      t += std::abs(len);
    }
    REQUIRE(t == T);
  }
  Flash packed(d);
  packed.q = test::random_vector<double>(packed.q.size(), 1, 1.5);
  packed.k = test::random_vector<double>(packed.k.size(), 2, 1.5);
  packed.v = test::random_vector<double>(packed.v.size(), 3);
  const std::vector<double> dout = test::random_vector<double>(packed.q.size(), 4);
  packed.run(dout, starts.data());
  for (int b = 0; b < d.B; ++b) {
    int t0 = 0;
    for (int len : rows[size_t(b)]) {
      len = std::abs(len);
      CAPTURE(b);
      CAPTURE(t0);
      Flash alone(AttentionDims{1, len, d.H, d.Dh});
      const size_t from = (size_t(b) * T + t0) * C, n = size_t(len) * C;
      std::copy_n(packed.q.begin() + from, n, alone.q.begin());
      std::copy_n(packed.k.begin() + from, n, alone.k.begin());
      std::copy_n(packed.v.begin() + from, n, alone.v.begin());
      alone.run(std::vector<double>(dout.begin() + from, dout.begin() + from + n), nullptr);
      test::check_close("out", alone.out.data(), packed.out.data() + from, n, 1e-11, 1e-13);
      test::check_close("dq", alone.dq.data(), packed.dq.data() + from, n, 1e-10, 1e-12);
      test::check_close("dk", alone.dk.data(), packed.dk.data() + from, n, 1e-10, 1e-12);
      test::check_close("dv", alone.dv.data(), packed.dv.data() + from, n, 1e-10, 1e-12);
      t0 += len;
    }
  }
}
