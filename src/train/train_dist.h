#pragma once
// What the training loop does differently on N data-parallel ranks (dist/dist.h,
// docs/distributed.md). TrainSession::step all-reduces the gradients; the loop adds:
// rank 0 alone writes the run directory (lock, logs, metrics, checkpoints) and
// evaluates; these checks keep the ranks in step. With one rank each is a no-op
// or a plain local test.
#include <cstdint>
#include <string>

#include "checkpoint/train_state.h"

namespace rfa {

// The stop decision every rank takes after a step: the largest of the ranks' local
// stop codes (a signal number, 0 = none). A signal reaches the ranks at different
// moments (or only one of them); agreeing here makes them all stop after the same step.
int train_dist_stop_agree(int local_signal);

// Checks that every rank runs the same kernels (kernels/cpu_target.h's identity: the build's
// target and vector width, and oneDNN's ISA): ranks of builds for different CPUs, or of one
// -march=native build on different machines, would compute other roundings and drift apart.
// Throws Error on every rank before anything is written, naming each rank's kernels and the
// fix (one RFA_ARCH level for all machines, docs/cpu-targets.md).
void train_dist_kernels_check();

// Checks that every rank holds the same weights (XXH64 of the flat parameters, all-gathered:
// one 8-byte value per rank). Throws Error on every rank, naming the step and each rank's
// checksum, if any differs: the ranks have diverged and their gradients no longer describe
// one model. `step` is the 1-based step just completed (0 = before the first).
void train_dist_weights_check(const float* params, int64_t n, int64_t step);

// A resume continues the checkpoint's global batch of ranks x grad_accum micro-batches
// (the data each step draws depends only on that product: batch_global_micro). Throws
// Error naming both products and the fix if they differ. `saved_grad_accum` is the
// checkpoint's train.grad_accum (config.yaml) for files that did not record it.
void train_dist_resume_check(const TrainState& saved, int saved_grad_accum, int grad_accum,
                             const std::string& checkpoint_dir);

// Test hook, honoured only in RFA_TEST_HOOKS builds (the default when the tests are
// built): with RFA_TEST_PERTURB_RANK=R:S in the environment, rank R adds 1e-3 to its
// first parameter after step S, so the ranks' weights differ (tests/e2e/mpi_divergence.sh).
void train_dist_test_perturb(float* params, int64_t step);

}  // namespace rfa
