// The MPI build of dist.h (CMake option RFA_MPI). Uses the C API only (the C++
// bindings are deprecated) on MPI_COMM_WORLD.
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdlib>

#include "core/error.h"
#include "dist/dist.h"

namespace rfa {
namespace {

int g_rank = 0, g_size = 1, g_local_size = 1;
bool g_initialised = false;  // by us, so we finalise

// Environment variables that MPI launchers set in the processes they start:
// Open MPI's mpirun, MPICH/Hydra's mpiexec, PMIx/PMI-based srun.
bool launched_by_mpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK"})
    if (std::getenv(name)) return true;
  return false;
}

// MPI counts are int: large buffers go in chunks of at most 2^30 elements.
constexpr int64_t kChunk = int64_t(1) << 30;

template <typename T>
void allreduce_sum(T* data, int64_t n, MPI_Datatype type) {
  if (g_size == 1) return;
  for (int64_t off = 0; off < n; off += kChunk) {
    const int count = static_cast<int>(std::min(kChunk, n - off));
    MPI_Allreduce(MPI_IN_PLACE, data + off, count, type, MPI_SUM, MPI_COMM_WORLD);
  }
}

}  // namespace

DistScope::DistScope(int* argc, char*** argv) {
  if (!launched_by_mpi()) return;
  int already = 0;
  MPI_Initialized(&already);
  if (!already) {
    MPI_Init(argc, argv);
    g_initialised = true;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL, &local);
  MPI_Comm_size(local, &g_local_size);
  MPI_Comm_free(&local);
}

DistScope::~DistScope() {
  if (g_initialised) MPI_Finalize();
  g_initialised = false;
  g_rank = 0;
  g_size = g_local_size = 1;
}

int dist_rank() { return g_rank; }
int dist_size() { return g_size; }
int dist_local_size() { return g_local_size; }

std::string dist_backend() {
  if (g_size == 1 && !g_initialised) return "none (no MPI launcher)";
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(version, &length);
  std::string text(version, static_cast<size_t>(length));
  if (size_t cut = text.find_first_of(",\n"); cut != std::string::npos) text.resize(cut);
  return text;
}

void dist_allreduce_sum(float* data, int64_t n) { allreduce_sum(data, n, MPI_FLOAT); }
void dist_allreduce_sum(double* data, int64_t n) { allreduce_sum(data, n, MPI_DOUBLE); }

int dist_allreduce_max(int value) {
  if (g_size == 1) return value;
  int out = value;
  MPI_Allreduce(&value, &out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return out;
}

void dist_allgather(uint64_t value, uint64_t* all) {
  if (g_size == 1) {
    all[0] = value;
    return;
  }
  MPI_Allgather(&value, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, MPI_COMM_WORLD);
}

void dist_broadcast(void* data, int64_t bytes, int root) {
  if (g_size == 1) return;
  auto* p = static_cast<char*>(data);
  for (int64_t off = 0; off < bytes; off += kChunk) {
    const int count = static_cast<int>(std::min(kChunk, bytes - off));
    MPI_Bcast(p + off, count, MPI_BYTE, root, MPI_COMM_WORLD);
  }
}

void dist_barrier() {
  if (g_size > 1) MPI_Barrier(MPI_COMM_WORLD);
}

void dist_abort(int code) {
  if (g_size > 1) MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

}  // namespace rfa
