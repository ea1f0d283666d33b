// One rank, no MPI: the build with -DRFA_MPI=OFF (see dist.h).
#include <cstdlib>

#include "dist/dist.h"

namespace rfa {

DistScope::DistScope(int*, char***) {}
DistScope::~DistScope() = default;

int dist_rank() { return 0; }
int dist_size() { return 1; }
int dist_local_size() { return 1; }
std::string dist_backend() { return "none (built without MPI)"; }

void dist_allreduce_sum(float*, int64_t) {}
void dist_allreduce_sum(double*, int64_t) {}
int dist_allreduce_max(int value) { return value; }
void dist_allgather(uint64_t value, uint64_t* all) { all[0] = value; }
void dist_broadcast(void*, int64_t, int) {}
void dist_barrier() {}
void dist_abort(int code) { std::exit(code); }

}  // namespace rfa
