#include "train/train_dist.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "io/hash.h"
#include "core/error.h"
#include "core/log.h"
#include "dist/dist.h"
#include "kernels/cpu_target.h"

namespace rfa {

int train_dist_stop_agree(int local_signal) { return dist_allreduce_max(local_signal); }

void train_dist_kernels_check() {
  const int ranks = dist_size();
  if (ranks == 1) return;
  std::string mine = cpu_kernels_identity();
#ifdef RFA_TEST_HOOKS
  // Test hook (tests/e2e/mpi_kernels.sh): RFA_TEST_OTHER_KERNELS_RANK=R makes rank R report other kernels.
  if (const char* r = std::getenv("RFA_TEST_OTHER_KERNELS_RANK"); r && std::atoi(r) == dist_rank())
    mine += " (RFA_TEST_OTHER_KERNELS_RANK)";
#endif
  std::vector<uint64_t> sums(static_cast<size_t>(ranks));
  dist_allgather(xxhash64(mine.data(), mine.size()), sums.data());
  std::vector<int> other;  // ranks whose kernels differ from rank 0's
  for (int r = 1; r < ranks; ++r)
    if (sums[size_t(r)] != sums[0]) other.push_back(r);
  if (other.empty()) return;
  // Rank 0's identity, for every rank's message.
  char root[512] = {};
  if (dist_is_root()) mine.copy(root, sizeof root - 1);
  dist_broadcast(root, sizeof root, 0);
  std::string list;
  for (int r : other) list += fmt::format("{}{}", list.empty() ? "" : ", ", r);
  fail("data-parallel ranks must run identical kernels, but rank(s) {} differ from rank 0 ('{}'){}. Build one rfa for "
       "the lowest CPU level of the machines (e.g. RFA_ARCH=x86-64-v3 for AVX2 and AVX-512 machines together; "
       "docs/cpu-targets.md) and run that binary on every rank",
       list, root, dist_is_root() ? std::string() : fmt::format("; this rank {} runs '{}'", dist_rank(), mine));
}

void train_dist_weights_check(const float* params, int64_t n, int64_t step) {
  const int ranks = dist_size();
  if (ranks == 1) return;
  std::vector<uint64_t> sums(static_cast<size_t>(ranks));
  dist_allgather(xxhash64(params, static_cast<size_t>(n) * sizeof(float)), sums.data());
  bool same = true;
  for (uint64_t s : sums) same = same && s == sums[0];
  if (same) return;
  std::string table;
  for (int r = 0; r < ranks; ++r) table += fmt::format("{}rank {}: {}", r ? ", " : "", r, hash_hex(sums[r]));
  fail("{}: the {} ranks' weights differ (checksums {}); data-parallel ranks must hold identical weights. The run "
       "stops; its last checkpoint was written before the divergence was seen. Check that every rank runs the same "
       "rfa binary with the same --threads and on the same kind of CPU, then resume from that checkpoint",
       step == 0 ? std::string("at the start") : fmt::format("after step {}", step), ranks, table);
}

void train_dist_resume_check(const TrainState& saved, int saved_grad_accum, int grad_accum,
                             const std::string& checkpoint_dir) {
  const int saved_ranks = saved.ranks > 0 ? saved.ranks : 1;
  const int saved_accum = saved.grad_accum > 0 ? saved.grad_accum : saved_grad_accum;
  const int ranks = dist_size();
  const int64_t was = int64_t(saved_ranks) * saved_accum, now = int64_t(ranks) * grad_accum;
  if (was != now) {
    const bool fits = was % ranks == 0;
    fail("checkpoint {} was trained on {} rank(s) x train.grad_accum {} = {} micro-batches per step, and this run "
         "has {} rank(s) x {} = {}: a resume keeps the global batch. {}",
         checkpoint_dir, saved_ranks, saved_accum, was, ranks, grad_accum, now,
         fits ? fmt::format("Pass --set train.grad_accum={} (or run with mpirun -np {})", was / ranks, saved_ranks)
              : fmt::format("Run with mpirun -np {} (or a number of ranks that divides {})", saved_ranks, was));
  }
  if (saved_ranks != ranks)
    log_warn("train", "checkpoint {} was trained on {} rank(s) x grad_accum {} and continues on {} x {}: the same "
             "global batch and data, but not bit-identical to an uninterrupted run (gradients are summed in "
             "another order)",
             checkpoint_dir, saved_ranks, saved_accum, ranks, grad_accum);
}

void train_dist_test_perturb([[maybe_unused]] float* params, [[maybe_unused]] int64_t step) {
#ifdef RFA_TEST_HOOKS
  static const char* hook = std::getenv("RFA_TEST_PERTURB_RANK");
  if (hook == nullptr) return;
  int rank = -1;
  long long at = -1;
  if (std::sscanf(hook, "%d:%lld", &rank, &at) != 2) fail("RFA_TEST_PERTURB_RANK '{}': expected RANK:STEP", hook);
  if (rank == dist_rank() && at == step) params[0] += 1e-3f;
#endif
}

}  // namespace rfa
