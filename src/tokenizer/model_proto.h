#pragma once
// What a SentencePiece model file records about its own training, read straight from its
// protobuf bytes: Debian's libsentencepiece-dev ships no sentencepiece_model.pb.h, so the
// ModelProto that SentencePieceProcessor holds cannot be inspected through its API.
#include <string>
#include <string_view>

namespace rfa {

// The training input of a model: TrainerSpec.input (ModelProto field 2, TrainerSpec field 1),
// its entries joined by ',' (SentencePiece splits the "input" option at commas, so a path holding
// one comes back whole). "" when the model records none (one trained from a sentence iterator
// without it, as rfa's were before) or the bytes do not parse.
std::string model_proto_training_input(std::string_view model_bytes);

// `model_bytes` with `input` added to TrainerSpec.input: one trainer_spec field holding only it is
// appended, which protobuf parsers (SentencePiece's among them) merge into the model's own.
std::string model_proto_with_training_input(std::string model_bytes, std::string_view input);

}  // namespace rfa
