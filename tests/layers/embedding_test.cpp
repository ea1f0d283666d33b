#include "layers/embedding.h"

#include <doctest/doctest.h>

#include <vector>

#include "core/parallel.h"
#include "support/gradcheck.h"

using namespace rfa::test;

TEST_CASE("embedding: forward copies rows; backward matches central differences with repeated tokens") {
  const int64_t N = 9;
  const int V = 5, C = 37;  // C not a multiple of the 16-wide channel block
  const std::vector<int32_t> tokens = {3, 0, 3, 4, 1, 3, 0, 2, 4};
  auto table = random_vector<double>(V * C, 1);
  auto R = random_vector<double>(N * C, 2);
  std::vector<double> out(N * C);
  rfa::embedding_forward(out.data(), tokens.data(), table.data(), N, C);
  for (int64_t n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c) REQUIRE(out[n * C + c] == table[tokens[n] * C + c]);

  auto loss = [&] {
    rfa::embedding_forward(out.data(), tokens.data(), table.data(), N, C);
    return weighted_sum(out.data(), R.data(), out.size());
  };
  auto dtable0 = random_vector<double>(V * C, 3);
  auto dtable = dtable0;
  rfa::embedding_backward(dtable.data(), R.data(), tokens.data(), N, C);
  for (size_t i = 0; i < dtable.size(); ++i) dtable[i] -= dtable0[i];
  check_gradient("dtable", table.data(), dtable.data(), table.size(), loss, {.eps = 1e-6, .rtol = 1e-7, .atol = 1e-9});
}

TEST_CASE("embedding: float path matches double; backward is identical for 1 and 2 threads") {
  const int64_t N = 768;
  const int V = 50, C = 128;
  std::vector<int32_t> tokens(N);
  rfa::CounterRng rng(9);
  for (auto& t : tokens) t = static_cast<int32_t>(rng.below(V));
  auto dout = random_vector<float>(N * C, 4);
  std::vector<float> one(V * C, 0.0f), two(V * C, 0.0f);
  int saved = rfa::thread_count();
  rfa::thread_count_set(1);
  rfa::embedding_backward(one.data(), dout.data(), tokens.data(), N, C);
  rfa::thread_count_set(2);
  rfa::embedding_backward(two.data(), dout.data(), tokens.data(), N, C);
  rfa::thread_count_set(saved);
  bool same = true;
  for (size_t i = 0; i < one.size(); ++i) same = same && one[i] == two[i];
  CHECK(same);

  std::vector<double> dout_d(dout.begin(), dout.end()), dtable_d(V * C, 0.0);
  rfa::embedding_backward(dtable_d.data(), dout_d.data(), tokens.data(), N, C);
  check_close("float dtable", one.data(), dtable_d.data(), one.size(), 1e-5, 1e-5);
}
