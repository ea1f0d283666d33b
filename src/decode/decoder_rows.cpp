// Decoder (decoder.h), its rows: reset, logits, positions, and a row's state saved and
// restored, whole (row_save) or the part in use (row_state_save, what rfa serve caches), and
// what the states hold. The decoder's construction and prefill: decoder.cpp; its step: decoder_step.cpp.
#include "decode/decoder.h"

#include <cstring>
#include <string>

#include "core/error.h"

namespace rfa {

template <typename T>
void Decoder<T>::reset() {
  for (int b = 0; b < B_; ++b) reset_row(b);
  any_logits_ = false;
}

template <typename T>
void Decoder<T>::reset_row(int b) {
  if (b < 0 || b >= B_) fail("decoder: row {} outside the batch of {}", b, B_);
  for (AttentionState<T>& st : states_) st.row_reset(b);
  pos_[static_cast<size_t>(b)] = 0;
  has_logits_[static_cast<size_t>(b)] = 0;
}

template <typename T>
const T* Decoder<T>::row_logits(int b) const {
  RFA_ASSERT(b >= 0 && b < B_, "row {} of {}", b, B_);
  return has_logits_[static_cast<size_t>(b)] ? last_ + int64_t(b) * spec_.V : nullptr;
}

template <typename T>
void Decoder<T>::row_logits_restore(int b, const T* logits) {
  RFA_ASSERT(b >= 0 && b < B_, "row {} of {}", b, B_);
  std::memcpy(last_ + int64_t(b) * spec_.V, logits, sizeof(T) * static_cast<size_t>(spec_.V));
  has_logits_[static_cast<size_t>(b)] = 1;
  any_logits_ = true;
}

template <typename T>
void Decoder<T>::set_position(int b, int64_t p) {
  if (b < 0 || b >= B_) fail("decoder: row {} outside the batch of {}", b, B_);
  if (p < 0) fail("decoder: position {} must be >= 0", p);
  for (const AttentionState<T>& st : states_) {
    const std::string refusal = attention_state_move_refusal(st.spec(), st.options(), position(b), p);
    if (!refusal.empty()) fail("{}", refusal);
  }
  pos_[static_cast<size_t>(b)] = p;
}

template <typename T>
int64_t Decoder<T>::row_bytes() const {
  int64_t n = 2 * int64_t(sizeof(int64_t)) + int64_t(spec_.V) * int64_t(sizeof(T));
  for (const AttentionState<T>& st : states_) n += st.row_size() * int64_t(sizeof(T));
  return n;
}

// [position (int64) | has logits (int64) | logits (V) | every layer's state row]
template <typename T>
void Decoder<T>::row_save(int b, uint8_t* out) const {
  RFA_ASSERT(b >= 0 && b < B_, "row {} of {}", b, B_);
  const int64_t head[2] = {position(b), int64_t(has_logits_[static_cast<size_t>(b)])};
  std::memcpy(out, head, sizeof(head));
  out += sizeof(head);
  std::memcpy(out, last_ + int64_t(b) * spec_.V, sizeof(T) * static_cast<size_t>(spec_.V));
  out += sizeof(T) * static_cast<size_t>(spec_.V);
  for (const AttentionState<T>& st : states_) {
    st.row_save(b, reinterpret_cast<T*>(out));
    out += sizeof(T) * static_cast<size_t>(st.row_size());
  }
}

template <typename T>
void Decoder<T>::row_restore(int b, const uint8_t* in) {
  RFA_ASSERT(b >= 0 && b < B_, "row {} of {}", b, B_);
  int64_t head[2];
  std::memcpy(head, in, sizeof(head));
  in += sizeof(head);
  std::memcpy(last_ + int64_t(b) * spec_.V, in, sizeof(T) * static_cast<size_t>(spec_.V));
  in += sizeof(T) * static_cast<size_t>(spec_.V);
  for (AttentionState<T>& st : states_) {
    st.row_restore(b, reinterpret_cast<const T*>(in));
    in += sizeof(T) * static_cast<size_t>(st.row_size());
  }
  pos_[static_cast<size_t>(b)] = head[0];
  has_logits_[static_cast<size_t>(b)] = head[1] != 0;
  any_logits_ = any_logits_ || head[1] != 0;
}

template <typename T>
int64_t Decoder<T>::row_state_size(int64_t p) const {
  int64_t n = 0;
  for (const AttentionState<T>& st : states_) n += st.row_size_in_use(p);
  return n;
}

template <typename T>
void Decoder<T>::row_state_save(int b, T* out) const {
  RFA_ASSERT(b >= 0 && b < B_, "row {} of {}", b, B_);
  for (const AttentionState<T>& st : states_) {
    st.row_save_in_use(b, position(b), out);
    out += st.row_size_in_use(position(b));
  }
}

template <typename T>
void Decoder<T>::row_state_restore(int b, int64_t p, const T* state, const T* logits) {
  if (b < 0 || b >= B_) fail("decoder: row {} outside the batch of {}", b, B_);
  if (p < 0) fail("decoder: position {} must be >= 0", p);
  const int64_t limit = position_limit_;
  if (limit > 0 && p > limit) fail("decoder: a state at position {} does not fit the {} positions of this decoder", p, limit);
  reset_row(b);
  for (AttentionState<T>& st : states_) {
    st.row_restore_in_use(b, p, state);
    state += st.row_size_in_use(p);
  }
  pos_[static_cast<size_t>(b)] = p;
  row_logits_restore(b, logits);
}

template <typename T>
int64_t Decoder<T>::state_bytes() const {
  int64_t n = 0;
  for (const AttentionState<T>& st : states_) n += attention_state_bytes(st, pos_.data());
  return n;
}

template <typename T>
int64_t Decoder<T>::state_capacity_bytes() const {
  int64_t n = 0;
  for (const AttentionState<T>& st : states_) n += attention_state_capacity(st);
  return n;
}

template <typename T>
int64_t Decoder<T>::state_reserved_bytes() const {
  int64_t n = state_capacity_bytes();
  for (const AttentionState<T>& st : states_) n += st.scratch_size() * int64_t(sizeof(T));
  return n;
}

// The members defined here, for the types decoder.cpp instantiates the class with.
#define RFA_INSTANTIATE(T)                                                          \
  template void Decoder<T>::reset();                                               \
  template void Decoder<T>::reset_row(int);                                        \
  template const T* Decoder<T>::row_logits(int) const;                             \
  template void Decoder<T>::row_logits_restore(int, const T*);                     \
  template void Decoder<T>::set_position(int, int64_t);                            \
  template int64_t Decoder<T>::row_bytes() const;                                  \
  template void Decoder<T>::row_save(int, uint8_t*) const;                         \
  template void Decoder<T>::row_restore(int, const uint8_t*);                      \
  template int64_t Decoder<T>::row_state_size(int64_t) const;                      \
  template void Decoder<T>::row_state_save(int, T*) const;                         \
  template void Decoder<T>::row_state_restore(int, int64_t, const T*, const T*);   \
  template int64_t Decoder<T>::state_bytes() const;                                \
  template int64_t Decoder<T>::state_capacity_bytes() const;                       \
  template int64_t Decoder<T>::state_reserved_bytes() const;
RFA_INSTANTIATE(float)
RFA_INSTANTIATE(double)
#undef RFA_INSTANTIATE

}  // namespace rfa
