#include "train/dpo.h"

#include <cmath>

#include "core/error.h"

namespace rfa {

DpoTerms dpo_terms(double chosen, double rejected, double chosen_ref, double rejected_ref, double beta) {
  DpoTerms t;
  t.z = beta * ((chosen - chosen_ref) - (rejected - rejected_ref));
  // softplus(-z) = max(-z, 0) + log1p(exp(-|z|)): no overflow either way.
  t.loss = std::max(-t.z, 0.0) + std::log1p(std::exp(-std::abs(t.z)));
  const double sigmoid_minus_z = t.z >= 0 ? std::exp(-t.z) / (1 + std::exp(-t.z)) : 1 / (1 + std::exp(t.z));
  t.weight = beta * sigmoid_minus_z;
  return t;
}

DpoScores dpo_scores(const std::vector<double>& policy, const std::vector<double>& reference, double beta) {
  RFA_ASSERT(policy.size() == reference.size() && policy.size() % 2 == 0, "scores of {} and {} answers",
             policy.size(), reference.size());
  DpoScores s;
  for (size_t i = 0; i < policy.size(); i += 2) {
    if (std::isnan(policy[i]) || std::isnan(policy[i + 1])) continue;  // an answer too long to score
    const DpoTerms t = dpo_terms(policy[i], policy[i + 1], reference[i], reference[i + 1], beta);
    s.loss += t.loss;
    s.accuracy += policy[i] > policy[i + 1];
    s.margin += policy[i] - policy[i + 1];
    s.reward_accuracy += t.z > 0;
    ++s.pairs;
  }
  if (s.pairs > 0) {
    const double n = static_cast<double>(s.pairs);
    s.loss /= n, s.accuracy /= n, s.margin /= n, s.reward_accuracy /= n;
  }
  return s;
}

}  // namespace rfa
