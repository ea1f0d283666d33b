// Decoder (decoder.h), its batched one-token step: step() and step_rows() check and account for
// the rows, step_layers() runs them through the model (fp32 products packed by step_weights.h, or
// bf16 ones packed here). Construction and prefill: decoder.cpp; the rows' state: decoder_rows.cpp.
#include "decode/decoder.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "core/error.h"
#include "core/parallel.h"
#include "core/profiled_region.h"
#include "core/team_barrier.h"
#include "decode/decode_kernels.h"
#include "kernels/bf16.h"
#include "kernels/gemm_bf16.h"
#include "kernels/step_gemm.h"
#include "layers/rmsnorm.h"

namespace rfa {

// Packs each weight matrix's bf16 copy for the step's B-row products: the plain
// copy would be reformatted on every product (gemm_bf16.h).
template <typename T>
void Decoder<T>::pack_step_weights_bf16() {
  if constexpr (std::is_same_v<T, float>) {
    const ModelSpec& s = spec_;
    const int64_t C = s.C, Hf = s.Hf, V = s.V;
    struct Job {
      PackedBf16* slot;
      const uint16_t* weight;
      bool trans;  // weight stored (N, K): the product reads its transpose
      int64_t N, K;
      bool accumulate;
      int parts = 1;
      size_t first = 0;  // its first part's index in step_parts_ and offsets
    };
    std::vector<Job> jobs;
    step_bf16_.resize(static_cast<size_t>(s.L));
    for (size_t l = 0; l < step_bf16_.size(); ++l) {
      const BlockWeightsBf16& w = model_.wh.layers[l];
      StepWeightsBf16& p = step_bf16_[l];
      jobs.push_back({&p.wq, w.wq, true, C, C, false});
      jobs.push_back({&p.wk, w.wk, true, C, C, false});
      jobs.push_back({&p.wv, w.wv, true, C, C, false});
      jobs.push_back({&p.wo, w.wo, true, C, C, true});
      jobs.push_back({&p.w13, w.w13, true, 2 * Hf, C, false});
      jobs.push_back({&p.w2, w.w2, false, C, Hf, true});  // W2 (Hf, C) input-major
    }
    jobs.push_back({&step_lm_head_bf16_, model_.wh.lm_head, true, V, C, false});
    // A part per physical core for a product that takes tens of µs on one thread, each part at least
    // 64 columns wide: 4M multiply-adds (64 rows of 384 x 128, 32 of 384 x 384), or one row streaming
    // 1.5 MB of weights (2048 x 384). Measured on two Zen 5 cores, one thread against two parts: 64 x
    // 704 x 128 29 -> 22 µs, 32 x 384 x 384 26 -> 21, 1 x 2048 x 384 24 -> 17; smaller ones lose to
    // the fork and the second call (8 x 384 x 384 8.5 -> 11.7, 1 x 768 x 384 8.0 -> 8.5). By the
    // cores, not the pool's threads: oneDNN's sums depend on a part's width in their last bits, and
    // the parts are the same whatever `--threads` says (each thread runs its share of them), so a step
    // gives the same bits on one thread as on several.
    constexpr int64_t kSplitMacs = int64_t(1) << 22, kSplitWeightBytes = int64_t(3) << 19;
    const int cores = std::max(1, physical_core_count());
    std::vector<int64_t> offsets;
    int64_t bytes = 0;
    for (Job& j : jobs) {
      const bool split = int64_t(B_) * j.N * j.K >= kSplitMacs || j.N * j.K * 2 >= kSplitWeightBytes;
      j.parts = split ? static_cast<int>(std::clamp<int64_t>(j.N / 64, 1, cores)) : 1;
      j.first = offsets.size();
      for (int p = 0; p < j.parts; ++p) {
        offsets.push_back(bytes);
        bytes += arena_round<uint8_t>(gemm_bf16_packed_bytes(j.trans, B_, j.N, j.K, j.accumulate, p, j.parts));
      }
    }
    step_packed_ = Arena<uint8_t>(bytes);
    step_parts_.resize(offsets.size());
    for (size_t i = 0; i < offsets.size(); ++i) step_parts_[i] = step_packed_.data() + offsets[i];
    for (Job& j : jobs) {
      *j.slot = PackedBf16{step_parts_.data() + j.first, j.parts};
      for (int p = 0; p < j.parts; ++p)
        gemm_bf16_pack(j.trans, B_, j.N, j.K, j.accumulate, j.weight, j.trans ? j.K : j.N, p, j.parts,
                       step_packed_.data() + offsets[j.first + size_t(p)]);
    }
    // A step of fewer rows (a server's slots not all busy) runs its products for the next power of two
    // at or above its count, over the same packing, where oneDNN gives those rows the bits they get among
    // B (gemm_bf16_packed_rows_prepare, each shape checked on its first matrix): one row does not cost B.
    step_rows_bf16_.clear();
    for (int m = 1; m < B_; m *= 2) {
      bool usable = true;
      for (size_t i = 0; usable && i < jobs.size(); ++i) {
        const Job& j = jobs[i];
        const bool seen = std::any_of(jobs.begin(), jobs.begin() + static_cast<std::ptrdiff_t>(i), [&](const Job& k) {
          return k.trans == j.trans && k.N == j.N && k.K == j.K && k.accumulate == j.accumulate && k.parts == j.parts;
        });
        if (!seen)
          usable = gemm_bf16_packed_rows_prepare(j.trans, m, j.N, j.K, j.accumulate, j.slot->part, j.parts, B_);
      }
      if (usable) step_rows_bf16_.push_back(m);
    }
    step_rows_bf16_.push_back(B_);
  }
}

template <typename T>
const T* Decoder<T>::step(const int32_t* tokens) {
  check_tokens(tokens, B_);
  for (int b = 0; b < B_; ++b) check_room(b, 1);
  step_layers(tokens, B_, nullptr, pos_.data(), last_);
  for (int b = 0; b < B_; ++b) {
    pos_[static_cast<size_t>(b)] += 1;
    has_logits_[static_cast<size_t>(b)] = 1;
  }
  any_logits_ = true;
  return last_;
}

template <typename T>
const T* Decoder<T>::step_rows(const int* rows, int n, const int32_t* tokens) {
  if (n < 1 || n > B_) fail("decoder: a step of {} rows; allowed 1..{} (the batch)", n, B_);
  check_tokens(tokens, n);
  std::fill(step_rows_.begin(), step_rows_.end(), 0);  // marks: each row at most once
  for (int i = 0; i < n; ++i) {
    const int b = rows[i];
    if (b < 0 || b >= B_) fail("decoder: row {} outside the batch of {}", b, B_);
    if (step_rows_[static_cast<size_t>(b)]++) fail("decoder: row {} listed twice in one step", b);
    check_room(b, 1);
    step_pos_[static_cast<size_t>(i)] = position(b);
  }
  step_layers(tokens, n, rows, step_pos_.data(), logits_);
  for (int i = 0; i < n; ++i) {
    const int b = rows[i];
    std::memcpy(last_ + int64_t(b) * spec_.V, logits_ + int64_t(i) * spec_.V, sizeof(T) * spec_.V);
    pos_[static_cast<size_t>(b)] += 1;
    has_logits_[static_cast<size_t>(b)] = 1;
  }
  any_logits_ = true;
  return logits_;
}

namespace {

// A step's product for --profile: `group` products out (M, N) (+)= in (M, K) · W over one input,
// each weight read once; fp32 (step_gemm.h) or bf16 on oneDNN (counted as its gemm).
// share: the part of it the calling thread's call counts for (a team's thread 0, whose calls the
// profile scales by all the rows over its own: the product's whole over that).
template <typename T>
ProfileScope product_profile(int64_t M, int64_t N, int64_t K, bool accumulate, int group, bool bf16,
                             double share = 1) {
  const double flop = 2.0 * double(group) * double(M) * double(N) * double(K);
  const double elements = double(group) * (double(N) * K + double(M) * N * (accumulate ? 2 : 1)) + double(M) * K;
  return ProfileScope(bf16 ? ProfiledKernel::gemm : ProfiledKernel::step_products, share * flop,
                      share * sizeof(T) * elements);
}

// A step's team (decoder_step's team path): thread share.t of share.nt, each with its rows for the
// row kernels and the attention, and its share of every product's tasks over all the rows; the
// threads meet before each product (its input whole) and after it (its output whole).
struct StepTeam {
  TeamBarrier& barrier;
  StepShare share;
  double profile_share;  // own rows over all: what a product's profile counts on this thread
  void meet() const {
    if (!step_profile_enabled() || share.t != 0) return barrier.wait();
    const int64_t start = profile_detail::now().wall_ns;  // thread 0 profiled: its waits are split_wait
    barrier.wait();
    profile_detail::add_wait(ProfiledKernel::split_wait, profile_detail::now().wall_ns - start);
  }
};

}  // namespace

// The mirror of block_forward (model/block.cpp) for one token per row, with the
// decode row kernels (serial at small sizes: no thread fork, no BLAS call per
// matrix-vector product) and the attention's one-token step. Same math; the
// decoder tests pin steps to the prefill. n rows (state rows `rows`, null = 0..n-1)
// at positions pos; logits (n, V). A bf16 step multiplies the first of step_rows_bf16_ at or
// above n (its products are packed for B): rows past n are padding, computed and dropped.
template <typename T>
void Decoder<T>::step_layers(const int32_t* tokens, int n, const int* rows, const int64_t* pos, T* logits) {
  RFA_ASSERT(steps_, "decoder: a step on a decoder built with steps = false");
  const ModelSpec& s = spec_;
  const bool bf16 = !step_bf16_.empty();
  const int M = bf16 ? *std::lower_bound(step_rows_bf16_.begin(), step_rows_bf16_.end(), n) : n, C = s.C, Hf = s.Hf;
  BlockActs<T>& a = acts_;
  T* x = a.resid_in;  // (M, C) the whole residual stream here
  T* nrm = a.attn_norm;
  // Rows [r0, r1) of out (M, OC) (+)= in (M, IC) · op(W): W (OC, IC) read transposed, or W2 (IC, OC)
  // as stored. bf16: `in` converted, against the packed copy of W (only ever all rows, r0 = 0).
  // W: the packed copy (step_weights_), or null for bf16's packed_bf16 (trans: W stored (OC, IC)).
  // A team's products (fp32): all the rows, this thread's share of the group's panels, between two
  // meetings (the input whole before, the output whole after).
  auto team_products = [&](const StepTeam& team, std::span<const StepProduct<T>> group, const T* in, int IC, int OC,
                           bool accumulate) {
    team.meet();
    {
      const ProfileScope profile = product_profile<T>(M, OC, IC, accumulate, static_cast<int>(group.size()), false,
                                                      team.profile_share);
      step_gemm_group_share<T>(M, OC, IC, in, group, accumulate, step_weights_from_, team.share);
    }
    team.meet();
  };
  auto product = [&](int r0, int r1, GemmThreads threads, const StepTeam* team, T* out, const T* in, const T* W,
                     const PackedBf16& packed_bf16, bool trans, int IC, int OC, bool accumulate) {
    if (team) {
      const StepProduct<T> one{W, out};
      return team_products(*team, std::span<const StepProduct<T>>(&one, 1), in, IC, OC, accumulate);
    }
    const ProfileScope profile = product_profile<T>(r1 - r0, OC, IC, accumulate, 1, packed_bf16.part != nullptr);
    if constexpr (std::is_same_v<T, float>) {
      if (packed_bf16.part) {
        uint16_t* in_bf16 = IC == C ? acts_bf16_.attn_norm : acts_bf16_.ffn_act;  // (M, IC) scratch
        bf16_from_float_serial(in_bf16, in, int64_t(M) * IC);
        gemm_bf16_packed(trans, M, OC, IC, accumulate, in_bf16, packed_bf16.part, packed_bf16.parts, out, B_);
        return;
      }
    }
    // Batch-invariant (kernels/step_gemm.h): a row's logits do not depend on the rows beside it, nor
    // on which thread runs it. It forks to the pool when a product is large enough (GemmThreads::pool).
    step_gemm<T>(r1 - r0, OC, IC, in + int64_t(r0) * IC, W, out + int64_t(r0) * OC, accumulate, threads,
                 step_weights_from_);
  };
  // From step_row_split_ rows (fp32, weights that stay in cache) each thread takes a share of the rows
  // through the whole step in one parallel region: embedding, every layer's norms, products,
  // attention step (attention_step_part: a row's state and scratch are its own) and SwiGLU, and the
  // head. A step forks once instead of once per product and kernel (about 7 L), with no barrier
  // between the layers for the slowest thread (in `rfa serve` the HTTP threads share the cores),
  // and a row's activations stay on one core from its embedding to its logits. The same bits either
  // way (the products are batch-invariant, the rest is per row).
  // And only when the step's rows hold twice the work of a fork and join (the one fork is
  // for the whole step): with spinning workers that is every step from step_row_split_ rows;
  // where forks are dearer (OMP_WAIT_POLICY=passive, core/parallel.h parallel_min_work) a step of
  // fewer rows runs on one thread, not forking per product either (docs/decoding.md: 4x128 under
  // passive, 12 rows 0.35-0.36 ms on one thread, 0.17-0.20 split).
  const int64_t step_macs = int64_t(s.L) * (int64_t(4) * C * C + int64_t(3) * C * Hf);  // q, k, v, o; w1, w3, w2
  const bool forkable = M * step_macs >= 2 * parallel_min_work() && thread_count() > 1 && !in_parallel_region();
  const bool split = step_row_split_ > 0 && M >= step_row_split_ && forkable;
  // Below a row split (and for every row count of a model whose weights pass the caches, which no
  // split keeps there) the fp32 step's threads work as a team: one fork for the step, as the split,
  // but each product's panels shared between them over all the rows, which read each weight once;
  // they meet before and after each product (about 8 meetings a layer, a spinning barrier of about
  // a microsecond) where the pool forked and joined for each (about 7 a layer: 4-6 µs each with
  // spinning workers, 25-90 under OMP_WAIT_POLICY=passive). The same bits: the products are
  // batch-invariant, the rest is per row. And only where a layer's products hold 4 reference forks'
  // work (2^20 multiply-adds) over the step's rows: the meetings cost a few cache lines between the
  // cores each (200-250 ns apart on this VM), which a 4x128 step of 1 to 4 rows (0.05-0.09 ms,
  // 0.8-3.1M multiply-adds a step) paid 25-35% for; not scaled up with dear forks (the meetings do
  // not sleep), only down (fork factor 0: the tests' small models work as a team too). And the whole
  // step at least 4 forks' work at this process's price, for the one fork: under passive a 4x128
  // step of 6 rows (4.7M) ran 0.098 ms on one thread, 0.143 as a team. Measured: docs/decoding.md,
  // "The step's team".
  const int64_t team_layer_macs = 4 * std::min(parallel_min_work(), kParallelMinWork);
  const bool team = !split && !bf16 && forkable &&
                    M * step_macs >= std::max(s.L * team_layer_macs, 4 * parallel_min_work());
  RFA_ASSERT(!split || M == n, "decoder: a row split of {} rows padded to {}", n, M);
  auto stepped = [&](int l) -> StepWeightsBf16 {
    return bf16 ? step_bf16_[static_cast<size_t>(l)] : StepWeightsBf16{};
  };
  // rmsnorm and q, k, v of layer l for rows [r0, r1).
  auto attention_inputs = [&](int l, int r0, int r1, GemmThreads threads, const StepTeam* team) {
    const BlockWeights<T>& w = model_.w.layers[static_cast<size_t>(l)];
    const StepLayerWeights<T>& f = step_weights_.layer(l);
    const StepWeightsBf16 p = stepped(l);
    rmsnorm_rows(nrm + int64_t(r0) * C, x + int64_t(r0) * C, w.attn_norm, r1 - r0, C, s.model.norm_eps);
    if (team) {  // q, k and v of all the rows in one group
      const StepProduct<T> qkv[] = {{f.wq, a.q}, {f.wk, a.k}, {f.wv, a.v}};
      return team_products(*team, qkv, nrm, C, C, false);
    }
    const ProfileScope profile = product_profile<T>(r1 - r0, C, C, false, 3, p.wq.part != nullptr);
    if (p.wq.part) {  // bf16 (all rows): the input converted once, q, k and v in one pass of the pool
      if constexpr (std::is_same_v<T, float>) {  // (one shape, so one parts count: pack_step_weights_bf16)
        bf16_from_float_serial(acts_bf16_.attn_norm, nrm, int64_t(M) * C);
        const Bf16Product qkv[] = {{p.wq.part, a.q}, {p.wk.part, a.k}, {p.wv.part, a.v}};
        gemm_bf16_packed_group(true, M, C, C, false, acts_bf16_.attn_norm, qkv, p.wq.parts, B_);
      }
    } else {  // q, k and v in one pass of the pool (one row's three fork together)
      const int64_t at = int64_t(r0) * C;
      const StepProduct<T> qkv[] = {{f.wq, a.q + at}, {f.wk, a.k + at}, {f.wv, a.v + at}};
      step_gemm_group<T>(r1 - r0, C, C, nrm + at, qkv, false, threads, step_weights_from_);
    }
  };
  // Layer l's output projection and feed-forward for rows [r0, r1).
  auto attention_output_and_ffn = [&](int l, int r0, int r1, GemmThreads threads, const StepTeam* team) {
    const BlockWeights<T>& w = model_.w.layers[static_cast<size_t>(l)];
    const StepLayerWeights<T>& f = step_weights_.layer(l);
    const StepWeightsBf16 p = stepped(l);
    product(r0, r1, threads, team, x, a.attn_out, f.wo, p.wo, true, C, C, true);  // x += att · Woᵀ
    rmsnorm_rows(nrm + int64_t(r0) * C, x + int64_t(r0) * C, w.ffn_norm, r1 - r0, C, s.model.norm_eps);
    product(r0, r1, threads, team, a.ffn_gate_up, nrm, f.w13, p.w13, true, C, 2 * Hf, false);
    swiglu_rows(a.ffn_act + int64_t(r0) * Hf, a.ffn_gate_up + int64_t(r0) * 2 * Hf, r1 - r0, Hf);
    product(r0, r1, threads, team, x, a.ffn_act, f.w2, p.w2, false, Hf, C, true);  // x += act · W2 (W2 stored (Hf, C))
  };
  // Layer l's attention step: for rows [r0, r1) on this thread (the split, the team), else for all on
  // the pool.
  const AttentionRows attn_rows{n, rows, pos};
  auto attention = [&](int l, int r0, int r1) {
    const size_t i = static_cast<size_t>(l);
    const AttentionInputs<T> in{a.q, a.k, a.v, nrm, step_weights_.layer(l).gate};
    if (split || team)
      attention_step_part(cores_[i], model_.w.layers[i].attn, states_[i], a.attn_out, in, attn_rows, r0, r1);
    else
      attention_step(cores_[i], model_.w.layers[i].attn, states_[i], a.attn_out, in, attn_rows);
  };
  // Rows [r0, r1) through the whole step (a team's thread: its rows through the row kernels, its share
  // of the products).
  auto rows_through = [&](int r0, int r1, GemmThreads threads, const StepTeam* team) {
    {
      const ProfileScope profile(ProfiledKernel::embedding, 0, sizeof(T) * 2.0 * double(r1 - r0) * C);
      for (int i = r0; i < r1; ++i) {  // padding rows (bf16) read token 0
        const int32_t token = i < n ? tokens[i] : 0;
        if (embedding_packed_)
          step_packed_rows<T>(step_weights_.lm_head(), s.V, C, &token, 1, x + int64_t(i) * C);
        else
          std::memcpy(x + int64_t(i) * C, model_.w.tok_embedding + int64_t(token) * C, sizeof(T) * C);
      }
    }
    attention_inputs(0, r0, r1, threads, team);
    for (int l = 0; l < s.L; ++l) {
      attention(l, r0, r1);
      attention_output_and_ffn(l, r0, r1, threads, team);
      if (l + 1 < s.L) {
        attention_inputs(l + 1, r0, r1, threads, team);
      } else {
        rmsnorm_rows(nrm + int64_t(r0) * C, x + int64_t(r0) * C, model_.w.final_norm, r1 - r0, C, s.model.norm_eps);
        product(r0, r1, threads, team, logits, nrm, step_weights_.lm_head(), step_lm_head_bf16_, true, C, s.V, false);
      }
    }
  };
  if (!split && !team) return rows_through(0, M, GemmThreads::pool, nullptr);
  // Thread t's rows: [ceil(M t / threads), ceil(M (t + 1) / threads)), so that thread 0, the one
  // profiled, has rows whenever there are any (a team's step of one row).
  auto first = [M](int t, int threads) {
    return static_cast<int>((int64_t(M) * t + threads - 1) / threads);
  };
  // Profiled (rfa bench decode --profile): the first thread's calls count for all the rows
  // (core/profiled_region.h).
  auto all_over_own = [&](int t, int threads) {
    const int own = first(t + 1, threads) - first(t, threads);
    return own > 0 ? double(M) / own : 1.0;
  };
  if (team) {
    const int members = thread_count();
    TeamBarrier barrier(members);
    return profiled_region_serial_calls(all_over_own, [&](int t, int threads) {
      RFA_ASSERT(threads == members, "decoder: a team of {} threads where {} meet", threads, members);
      const int r0 = first(t, threads), r1 = first(t + 1, threads);
      const StepTeam member{barrier, StepShare{t, threads}, double(r1 - r0) / M};
      rows_through(r0, r1, GemmThreads::one, &member);
    });
  }
  profiled_region_serial_calls(all_over_own, [&](int t, int threads) {
    rows_through(first(t, threads), first(t + 1, threads), GemmThreads::one, nullptr);
  });
}

#define RFA_INSTANTIATE(T)                                                                              \
  template void Decoder<T>::pack_step_weights_bf16();                                                 \
  template const T* Decoder<T>::step(const int32_t*);                                                 \
  template const T* Decoder<T>::step_rows(const int*, int, const int32_t*);                           \
  template void Decoder<T>::step_layers(const int32_t*, int, const int*, const int64_t*, T*);
RFA_INSTANTIATE(float)
RFA_INSTANTIATE(double)
#undef RFA_INSTANTIATE

}  // namespace rfa
