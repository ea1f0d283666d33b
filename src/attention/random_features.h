#pragma once
// RFA's random matrices W (H, D, Dh), entries N(0, 1). Head h of layer `layer`
// at training step `step` reads CounterRng(seed, step, layer, h), so a draw is a
// pure function of its key and a resumed run redraws exactly the same matrices.
// Evaluation and decoding use a fixed draw (e.g. step = 0) stored with the model.
//
// orthogonal: rows come in blocks of Dh; each block is the Q of a Gaussian
// (Dh, Dh) matrix (Gram-Schmidt), its rows rescaled by independent chi(Dh)
// norms so each row is still distributed like a Gaussian row (Yu et al. 2016).
#include <cstdint>

namespace rfa {

template <typename T>
void random_features_draw(T* W /*(H, D, Dh)*/, uint64_t seed, uint64_t step, int layer, int H, int D, int Dh,
                          bool orthogonal);

}  // namespace rfa
