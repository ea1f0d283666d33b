// Sampling: greedy is argmax, the same seed gives the same tokens, top-k and
// top-p never pick outside their sets, the empirical distribution follows
// softmax(logits / T), non-finite logits are an error; the top-k cut draws what the
// first version drew, the whole-vocabulary and nucleus draws are the inverse CDF of
// softmax(logits / T) at the draw's u, whatever the row's address.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "decode/sampler.h"

using namespace rfa;

namespace {
// softmax: 0.5, 0.25, 0.125, 0.0625, 0.0625 at temperature 1.
const std::vector<float> kLogits = {std::log(0.25f), std::log(0.5f), std::log(0.0625f), std::log(0.125f),
                                    std::log(0.0625f)};

// Sampling from softmax(logits) itself: temperature 1, no top-k or top-p cut.
SamplerConfig plain_sampling() {
  SamplerConfig c;
  c.temperature = 1;
  c.top_k = 0;
  c.top_p = 1;
  return c;
}
}  // namespace

TEST_CASE("sampler: greedy picks the argmax; temperature 0 is greedy") {
  SamplerConfig c;
  c.greedy = true;
  Sampler s(5, c);
  for (int p = 0; p < 10; ++p) CHECK(s.sample(kLogits.data(), 0, p) == 1);
  c.greedy = false;
  c.temperature = 0;
  Sampler t(5, c);
  CHECK(t.sample(kLogits.data(), 3, 7) == 1);
}

TEST_CASE("sampler: same seed, same draws; another seed differs") {
  SamplerConfig c = plain_sampling();
  c.seed = 42;
  Sampler a(5, c), b(5, c);
  c.seed = 43;
  Sampler other(5, c);
  int differ = 0;
  for (int p = 0; p < 200; ++p) {
    int32_t x = a.sample(kLogits.data(), 0, p);
    CHECK(x == b.sample(kLogits.data(), 0, p));
    differ += x != other.sample(kLogits.data(), 0, p);
  }
  CHECK(differ > 20);
}

TEST_CASE("sampler: frequencies follow softmax(logits / T)") {
  SamplerConfig c = plain_sampling();
  c.seed = 1;
  Sampler s(5, c);
  const int n = 40000;
  std::vector<int> count(5, 0);
  for (int p = 0; p < n; ++p) ++count[static_cast<size_t>(s.sample(kLogits.data(), 0, p))];
  const double expected[] = {0.25, 0.5, 0.0625, 0.125, 0.0625};
  for (int i = 0; i < 5; ++i) CHECK(std::abs(count[static_cast<size_t>(i)] / double(n) - expected[i]) < 0.01);
  // T = 0.5 squares the probabilities: token 1 gets 0.25 / (0.0625+0.25+0.0039*2+0.0156) = 0.744
  c.temperature = 0.5;
  Sampler cold(5, c);
  int ones = 0;
  for (int p = 0; p < n; ++p) ones += cold.sample(kLogits.data(), 0, p) == 1;
  CHECK(std::abs(ones / double(n) - 0.25 / (0.0625 + 0.25 + 2 * 0.00390625 + 0.015625)) < 0.01);
}

TEST_CASE("sampler: top-k and top-p restrict the candidates") {
  SamplerConfig c = plain_sampling();
  c.top_k = 2;  // tokens 1 and 0
  Sampler k2(5, c);
  int zeros = 0;
  for (int p = 0; p < 3000; ++p) {
    int32_t x = k2.sample(kLogits.data(), 0, p);
    CHECK((x == 0 || x == 1));
    zeros += x == 0;
  }
  CHECK(std::abs(zeros / 3000.0 - 1.0 / 3) < 0.04);  // renormalised 0.25 / 0.75
  c.top_k = 0;
  c.top_p = 0.8;  // 0.5 + 0.25 = 0.75 < 0.8, so token 3 (0.125) joins
  Sampler p8(5, c);
  bool saw3 = false;
  for (int p = 0; p < 3000; ++p) {
    int32_t x = p8.sample(kLogits.data(), 0, p);
    CHECK((x == 0 || x == 1 || x == 3));
    saw3 = saw3 || x == 3;
  }
  CHECK(saw3);
}

TEST_CASE("sampler: non-finite logits and bad options are errors") {
  SamplerConfig c;
  Sampler s(5, c);
  std::vector<float> bad = kLogits;
  bad[2] = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_AS(s.sample(bad.data(), 0, 0), Error);
  bad[2] = std::numeric_limits<float>::infinity();
  CHECK_THROWS_AS(s.sample(bad.data(), 0, 0), Error);
  c.greedy = true;
  Sampler g(5, c);
  CHECK_THROWS_AS(g.sample(bad.data(), 0, 0), Error);  // greedy checks too
  SamplerConfig wrong;
  wrong.top_p = 0;
  CHECK_THROWS_AS(Sampler(5, wrong), Error);
  wrong = SamplerConfig{};
  wrong.temperature = -1;
  CHECK_THROWS_AS(Sampler(5, wrong), Error);
  // inf is >= 0: the message says finite, else "--temperature inf must be >= 0" reads false.
  wrong.temperature = std::numeric_limits<float>::infinity();
  CHECK_THROWS_WITH_AS(Sampler(5, wrong), doctest::Contains("--temperature inf must be a finite number >= 0"), Error);
}

namespace {
// The sampler as first written (a comparator on (logits[a], a) through the ids, std::sort and
// nth_element; argmax against logits[best]): the draws the faster candidate order must repeat.
int32_t sample_as_first_written(const std::vector<float>& logits, const SamplerConfig& config, uint64_t row,
                                int64_t position) {
  const int V = static_cast<int>(logits.size());
  int32_t best = 0;
  for (int i = 0; i < V; ++i)
    if (logits[i] > logits[best]) best = i;
  if (config.greedy || config.temperature == 0) return best;
  std::vector<int32_t> order(static_cast<size_t>(V));
  std::vector<double> probs(static_cast<size_t>(V));
  std::iota(order.begin(), order.end(), 0);
  auto more_likely = [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  int n = V;
  if (config.top_k > 0 && config.top_k < V) {
    n = config.top_k;
    std::nth_element(order.begin(), order.begin() + (n - 1), order.end(), more_likely);
  }
  std::sort(order.begin(), order.begin() + n, more_likely);
  const double inv_t = 1.0 / config.temperature, top = logits[order[0]];
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    probs[size_t(i)] = std::exp((double(logits[order[size_t(i)]]) - top) * inv_t);
    sum += probs[size_t(i)];
  }
  if (config.top_p < 1) {
    double mass = 0;
    int keep = 0;
    while (keep < n) {
      mass += probs[size_t(keep++)];
      if (mass >= config.top_p * sum) break;
    }
    n = keep;
    sum = mass;
  }
  CounterRng rng(config.seed, 0x5a3b1e, row, static_cast<uint64_t>(position));
  double u = rng.uniform() * sum;
  for (int i = 0; i < n; ++i) {
    u -= probs[size_t(i)];
    if (u < 0) return order[size_t(i)];
  }
  return order[size_t(n - 1)];
}
}  // namespace

TEST_CASE("sampler: a top-k cut draws what the comparator sort drew, ties and zeros too") {
  // Logits with many exact ties (a few distinct values), +0 and -0 side by side, negatives and
  // large spreads; every cut (top-k below, at and above V; top-p) at several temperatures.
  CounterRng rng(77);
  int draws = 0, spread = 0;
  for (int V : {1, 2, 7, 64, 2048, 5000})
    for (int kind = 0; kind < 3; ++kind) {
      std::vector<float> logits(static_cast<size_t>(V));
      for (size_t i = 0; i < logits.size(); ++i) {
        const double z = rng.normal();
        logits[i] = kind == 0   ? float(3 * z)
                    : kind == 1 ? float(std::round(2 * z) / 2)  // ties
                                : (rng.below(3) == 0 ? (rng.below(2) ? 0.0f : -0.0f) : float(-std::fabs(z)));
      }
      for (int top_k : {1, 5, 40, V - 1})  // below V: the other cuts sample the whole vocabulary (below)
        for (double top_p : {1.0, 0.9, 0.3})
          for (double temperature : {0.0, 0.7, 1.0, 2.5}) {
            if (top_k < 1 || top_k >= V) continue;  // only cuts below V
            SamplerConfig c;
            c.temperature = temperature;
            c.greedy = temperature == 0;
            c.top_k = top_k;
            c.top_p = top_p;
            c.seed = 5;
            Sampler sampler(V, c);
            int mismatches = 0, last = -1;
            for (int64_t position = 0; position < 40; ++position) {
              const int32_t got = sampler.sample(logits.data(), 3, position);
              mismatches += got != sample_as_first_written(logits, c, 3, position);
              spread += last >= 0 && got != last;
              last = got;
              ++draws;
            }
            INFO("V ", V, " kind ", kind, " top_k ", top_k, " top_p ", top_p, " temperature ", temperature);
            CHECK(mismatches == 0);
          }
    }
  MESSAGE(draws, " draws, ", spread, " changes of token between positions");
  CHECK(spread > draws / 10);  // the draws vary: the comparison is not of constants
}

namespace {
// softmax(logits / T) in double, in id order (no top-p) or most likely first and cut to the
// shortest prefix of mass >= p (top-p): the tokens a draw walks, their weights, and `ambiguous`,
// the width of the band around the cut's mass within which float weights may cut elsewhere.
struct Walk {
  std::vector<int32_t> ids;
  std::vector<double> weights;
  bool ambiguous = false;
};

Walk reference_walk(const std::vector<float>& logits, const SamplerConfig& c) {
  const int V = static_cast<int>(logits.size());
  std::vector<int32_t> ids(static_cast<size_t>(V));
  std::iota(ids.begin(), ids.end(), 0);
  const double top = *std::max_element(logits.begin(), logits.end());
  auto weight = [&](int32_t i) { return std::exp((double(logits[size_t(i)]) - top) / c.temperature); };
  Walk walk;
  if (c.top_p >= 1) {
    walk.ids = ids;
    for (int32_t i : ids) walk.weights.push_back(weight(i));
    return walk;
  }
  std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return logits[size_t(a)] > logits[size_t(b)]; });
  double total = 0;
  for (int32_t i : ids) total += weight(i);
  double mass = 0;
  for (int32_t i : ids) {
    const double before = mass;
    walk.ids.push_back(i);
    walk.weights.push_back(weight(i));
    mass += weight(i);
    if (mass >= c.top_p * total) {
      walk.ambiguous = std::abs(mass - c.top_p * total) < 2e-6 * total ||
                       std::abs(before - c.top_p * total) < 2e-6 * total;
      break;
    }
  }
  return walk;
}

// The token the draw u in [0, 1) picks from `walk` (exact, in double), and whether u lies within
// `band` (relative to the walk's mass) of a boundary between two tokens, where float weights may
// pick the neighbour.
int32_t reference_pick(const Walk& walk, double u, double band, bool* near_boundary) {
  double mass = 0;
  for (double w : walk.weights) mass += w;
  double x = u * mass, cumulative = 0;
  *near_boundary = false;
  for (size_t i = 0; i < walk.ids.size(); ++i) {
    cumulative += walk.weights[i];
    if (std::abs(cumulative - x) < band * mass) *near_boundary = true;
    if (x < cumulative && walk.weights[i] > 0) return walk.ids[i];
  }
  return walk.ids.back();
}
}  // namespace

TEST_CASE("sampler: without top-k a draw is softmax(logits / T)'s inverse CDF at its u, whatever the row's address") {
  // Every token of a walk the reference's (a block walk that skipped a block, or an off-by-one at a
  // block's edge, picks a token far from u's); only a u within 1e-5 of a boundary may differ.
  CounterRng rng(78);
  int draws = 0, near = 0, ambiguous = 0, spread = 0;
  for (int V : {1, 2, 7, 127, 128, 129, 300, 2048, 5000})
    for (int kind = 0; kind < 3; ++kind) {
      // Room for 15 floats of offset before the row: the row at every address modulo 64 bytes.
      std::vector<float> buffer(static_cast<size_t>(V) + 15);
      std::vector<float> logits(static_cast<size_t>(V));
      for (size_t i = 0; i < logits.size(); ++i) {
        const double z = rng.normal();
        logits[i] = kind == 0   ? float(3 * z)
                    : kind == 1 ? float(std::round(2 * z) / 2)  // ties
                                : (rng.below(3) == 0 ? (rng.below(2) ? 0.0f : -0.0f) : float(-40 * std::fabs(z)));
      }
      for (int top_k : {0, V, V + 3})
        for (double top_p : {1.0, 0.9, 0.3, 0.9995})  // 0.9995: a cut among the smallest weights
          for (double temperature : {0.7, 1.0, 2.5}) {
            SamplerConfig c;
            c.temperature = temperature;
            c.top_k = top_k;
            c.top_p = top_p;
            c.seed = 9;
            Sampler sampler(V, c);
            const Walk walk = reference_walk(logits, c);
            int mismatches = 0, last = -1;
            for (int64_t position = 0; position < 40; ++position) {
              float* row = buffer.data() + position % 16;
              std::copy(logits.begin(), logits.end(), row);
              const int32_t got = sampler.sample(row, 3, position);
              CounterRng draw(c.seed, 0x5a3b1e, 3, static_cast<uint64_t>(position));
              bool near_boundary = false;
              const int32_t expected = reference_pick(walk, draw.uniform(), 1e-5, &near_boundary);
              near += near_boundary;
              ambiguous += walk.ambiguous;
              mismatches += got != expected && !near_boundary && !walk.ambiguous;
              spread += last >= 0 && got != last;
              last = got;
              ++draws;
            }
            INFO("V ", V, " kind ", kind, " top_k ", top_k, " top_p ", top_p, " temperature ", temperature);
            CHECK(mismatches == 0);
          }
    }
  MESSAGE(draws, " draws (", near, " near a boundary, ", ambiguous, " of an ambiguous cut), ", spread,
          " changes of token between positions");
  CHECK(near + ambiguous < draws / 20);  // ambiguous: exact ties of mass at a cut (equal logits)
  CHECK(spread > draws / 10);
}

TEST_CASE("sampler: tokens of zero weight are never drawn, however small the temperature") {
  // e^-87 and below weigh 0: logits 1000 apart at T 1, then a temperature of 1e-300 (its inverse
  // capped, not inf: 0 x inf at the best logit would be NaN).
  const std::vector<float> logits = {-1000.0f, 0.0f, -1000.0f, 0.5f, -3e38f, -1000.0f, 0.25f};
  for (double temperature : {1.0, 1e-300})
    for (double top_p : {1.0, 0.999}) {
      SamplerConfig c;
      c.temperature = temperature;
      c.top_k = 0;
      c.top_p = top_p;
      Sampler s(static_cast<int>(logits.size()), c);
      for (int64_t p = 0; p < 2000; ++p) {
        const int32_t x = s.sample(logits.data(), 0, p);
        INFO("temperature ", temperature, " top_p ", top_p, " token ", x);
        CHECK((x == 1 || x == 3 || x == 6));
        if (temperature < 1e-100) CHECK(x == 3);
      }
    }
}
