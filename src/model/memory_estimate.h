#pragma once
// What a model and a training session will allocate, estimated from the shape
// before anything is allocated (core/memory_check.h refuses what cannot fit).
// Sizes follow the allocations of Model, Activations and TrainSession buffer by
// buffer, with the arena's 64-byte rounding, in doubles: no product can
// overflow. tests/model/memory_estimate_test.cpp holds them to the real sizes.
#include "config/config.h"
#include "core/memory_check.h"
#include "model/model_spec.h"

namespace rfa {

// Elements of the parameter table (P: every tensor rounded to 64 bytes).
double memory_param_elements(const ModelSpec& spec);
// Elements of Activations<float>(spec, B, T, precision) for `threads` threads.
double memory_activation_elements(const ModelSpec& spec, int B, int T, int threads,
                                  Precision precision = Precision::fp32);

// A Model<float>: weights, the fixed and per-step random matrices (RFA kinds), the RoPE table, and
// for training its gradient buffer. (A model only decoded or evaluated never touches that half of
// its arena, which then takes no memory: tensor/arena.h.) precision bf16 adds the bf16 weight copies.
enum class ModelUse { train, inference };
MemoryEstimate memory_estimate_model(const ModelSpec& spec, Precision precision = Precision::fp32,
                                     ModelUse use = ModelUse::train);
// A TrainSession: the model, AdamW's m and v, the activations and scratch of
// one micro-batch (train.batch_size x model.context_length) and its tokens; with
// train.stateful the carried states (entering and final, per local micro-batch) and
// the checkpoint's copy of every rank's (`ranks` x grad_accum micro-batches);
// with train.precision bf16 also the bf16 weight copies and activation copies.
// split: train.thread_split as resolved (train/thread_split.h): under batch, each of the threads'
// rows its own activations (scratch for one thread) and (threads - 1) gradient copies.
MemoryEstimate memory_estimate_train(const ModelSpec& spec, const TrainConfig& train, int threads, int ranks = 1,
                                     ThreadSplit split = ThreadSplit::kernels);

}  // namespace rfa
