# Sourced by the tests/e2e/mpi_*.sh scripts (after lib/common.bash): mpirun as the suite
# runs it on one machine (docs/distributed.md, "Running as root, in a container").
#   --oversubscribe       more ranks than Open MPI counts free slots (2 cores, other tests running)
#   --allow-run-as-root   the suite runs as root in the container
#   --bind-to none        do not pin each rank to one core: the OpenMP threads share them
# Open MPI's mpirun passes its own environment (OMP_WAIT_POLICY, RFA_TEST_*) to local ranks.
mpi_cmd=(mpirun --oversubscribe --allow-run-as-root --bind-to none)
# In the sanitizer build (ASAN_OPTIONS set by tests/CMakeLists.txt) Open MPI's own allocations
# show as leaks at exit. They are suppressed by library in tests/sanitizer/lsan.supp, which needs
# their stacks: keep MPI's plugins loaded (dlclose would leave "<unknown module>" frames) and unwind
# malloc stacks fully (the fast unwinder stops at the first library built without frame pointers).
if [ -n "${ASAN_OPTIONS:-}" ]; then
  export ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=0:malloc_context_size=30"
  export OMPI_MCA_mca_base_component_disable_dlclose=1
fi
mpi_run() {  # mpi_run <ranks> <args of rfa...>
  local n=$1
  shift
  "${mpi_cmd[@]}" -np "$n" "$rfa" "$@"
}
# A background mpirun is started as `"${mpi_cmd[@]}" -np N "$rfa" ... &` with pid=$!, so $pid is
# mpirun itself and its children are the ranks: on exit both are killed, not only mpirun.
trap '[ -n "$pid" ] && { pkill -9 -P "$pid"; kill -9 "$pid"; } 2>/dev/null; rm -rf "$tmp"' EXIT
# Train lines of metrics.jsonl without the fields that measure time.
train_lines() { grep '"type":"train"' "$1" | untimed; }
