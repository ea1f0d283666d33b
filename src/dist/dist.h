#pragma once
// The process group of a data-parallel run: the N ranks of `mpirun -np N rfa train`
// (docs/distributed.md). Every rank holds the whole model; the ranks differ only in
// which rows of each global batch they compute, and meet once per optimizer step in
// one all-reduce of the flat gradient arena.
//
// Two builds of this interface: dist_mpi.cpp on MPI (CMake option RFA_MPI, on by
// default) and dist_single.cpp, one rank without MPI. A process not started by an
// MPI launcher is one rank in either build and never initialises MPI, so `rfa`
// without mpirun runs exactly as a single-process binary.
//
// The collectives (allreduce, allgather, broadcast, barrier) must be called by every
// rank in the same order; with one rank they return at once. Failures inside MPI
// abort the job (MPI's default error handler): a rank cannot continue alone.
#include <cstdint>
#include <string>

namespace rfa {

// Initialises MPI if the process was started by an MPI launcher (mpirun, mpiexec,
// srun); finalises it on destruction. One per process, in main.
class DistScope {
 public:
  DistScope(int* argc, char*** argv);
  ~DistScope();
  DistScope(const DistScope&) = delete;
  DistScope& operator=(const DistScope&) = delete;
};

int dist_rank();        // 0-based; 0 without a launcher
int dist_size();        // number of ranks; 1 without a launcher
int dist_local_size();  // ranks on this machine (they share its cores); 1 without a launcher
inline bool dist_is_root() { return dist_rank() == 0; }
std::string dist_backend();  // "Open MPI v4.1.4, ..." or "none (built without MPI)" / "none (no launcher)"

void dist_allreduce_sum(float* data, int64_t n);   // in place, element-wise sum over ranks; (n)
void dist_allreduce_sum(double* data, int64_t n);  // in place; (n)
int dist_allreduce_max(int value);
void dist_allgather(uint64_t value, uint64_t* all);  // all: (dist_size()), all[r] = rank r's value
void dist_broadcast(void* data, int64_t bytes, int root);
void dist_barrier();
// Ends every rank of the job with `code`: for an error on one rank, which the
// others would otherwise wait for forever in their next collective.
[[noreturn]] void dist_abort(int code);

}  // namespace rfa
