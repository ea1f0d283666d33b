#pragma once
// Internal: the pieces of the RFA kinds' table (rfa_kind.cpp: training; rfa_kind_decode.cpp:
// decoding) and their translation of the generic interface to the RFA cores.
#include <string>

#include "attention/attention_kind.h"
#include "attention/rfa_attention.h"

namespace rfa {

// The RFA kinds' parameters in AttentionWeights, in the order their params() lists them.
enum RfaParamIndex { kRfaSigma = 0, kRfaGateW = 1, kRfaGateB = 2 };

template <typename T>
RfaParams<T> rfa_kind_params(const AttentionWeights<T>& w, const T* random) {
  return RfaParams<T>{w[kRfaSigma], w[kRfaGateW], w[kRfaGateB], random};
}

template <typename T>
RfaInputs<T> rfa_kind_inputs(const AttentionInputs<T>& in, const AttentionCall<T>& call) {
  return RfaInputs<T>{in.q, in.k, in.v, in.n, call.pos0, call.row_pos0, call.segment_start};
}

// Decoding (rfa_kind_decode.cpp).
AttentionStateLayout rfa_kind_state_layout(const AttentionSpec& s, const AttentionStateOptions& o);
AttentionDecodeMemory rfa_kind_decode_memory(const AttentionSpec& s, const AttentionStateOptions& o, int S,
                                             int threads);
int64_t rfa_kind_prefill_scratch_size(const AttentionSpec& s, const AttentionStateOptions& o, int B, int S,
                                      int threads);
int64_t rfa_kind_position_limit(const AttentionSpec& s, const AttentionStateOptions& o);
std::string rfa_kind_move_refusal(const AttentionSpec& s, const AttentionStateOptions& o, int64_t from, int64_t to);
std::string rfa_kind_state_form(const AttentionSpec& s);
std::string rfa_kind_state_keys(const AttentionSpec& s);
template <typename T>
void rfa_kind_state_init(const AttentionSpec& s, const AttentionStateView<T>& v, T* constants, const T* random);
template <typename T>
void rfa_kind_prefill(const AttentionCore& core, const AttentionWeights<T>& w, const AttentionStateView<T>& v, T* out,
                      const AttentionInputs<T>& in, const AttentionCall<T>& call);
template <typename T>
void rfa_kind_step(const AttentionCore& core, const AttentionWeights<T>& w, const AttentionStateView<T>& v, T* out,
                   const AttentionInputs<T>& in, const AttentionRows& rows);
template <typename T>
void rfa_kind_row_reset(const AttentionStateView<T>& v, int b);

}  // namespace rfa
