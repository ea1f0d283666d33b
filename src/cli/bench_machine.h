#pragma once
// What a benchmark prints about the machine under it, beside its numbers: how far apart the pool's
// first two threads' cores are (kernels/peak_probes.h), which moves every multi-threaded result.
namespace rfa {

// Logs "threads 0 and 1 are N ns apart ..." with two or more threads; nothing with one.
void bench_log_core_distance();

}  // namespace rfa
