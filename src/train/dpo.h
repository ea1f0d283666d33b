#pragma once
// Direct preference optimisation (DPO, Rafailov et al. 2023) on preference pairs
// (data.format preference, docs/fine-tuning.md): for a prompt x with a chosen answer y_c and a
// rejected one y_r, the policy's log-probabilities l_c = log pi(y_c | x), l_r = log pi(y_r | x)
// (sums over the answers' response targets, EOS included) against the frozen reference's
// l_c0, l_r0 (the --init-from model, computed once before the first step):
//   z    = beta * ((l_c - l_c0) - (l_r - l_r0))
//   loss = -log sigmoid(z) = softplus(-z)                 (the mean over the step's pairs)
//   dloss/dl_c = -beta * sigmoid(-z),  dloss/dl_r = +beta * sigmoid(-z)
// Since l = -sum of the answer's target NLLs, a chosen target's NLL gets the weight
// +beta * sigmoid(-z) and a rejected one's -beta * sigmoid(-z) (over the step's pairs):
// model_backward_weighted does the rest. No reward model, no sampling.
#include <cstdint>
#include <vector>

namespace rfa {

struct DpoTerms {
  double loss = 0;    // softplus(-z)
  double z = 0;       // the implicit reward margin
  double weight = 0;  // beta * sigmoid(-z): dloss / d(each chosen target's NLL); the rejected's is -weight
};

DpoTerms dpo_terms(double chosen, double rejected, double chosen_ref, double rejected_ref, double beta);

// Held-out pairs: each answer's log-probability (the policy's and the reference's, one per
// document: chosen, rejected, chosen, ...; NaN for an answer too long to score).
struct DpoScores {
  double loss = 0;             // mean DPO loss
  double accuracy = 0;         // share of pairs the policy prefers the chosen answer in: l_c > l_r
  double margin = 0;           // mean l_c - l_r, nats
  double reward_accuracy = 0;  // share with z > 0: the policy moved toward the chosen one since the reference
  int64_t pairs = 0;           // scored
};
DpoScores dpo_scores(const std::vector<double>& policy, const std::vector<double>& reference, double beta);

}  // namespace rfa
