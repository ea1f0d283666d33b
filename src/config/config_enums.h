#pragma once
// The spelling of every enum value in config files, on the command line and in
// logs. One table per enum, so parsing and printing cannot disagree.
#include <span>
#include <string>

#include "config/config.h"

namespace rfa {

template <typename E>
struct EnumName {
  E value;
  const char* name;
};

std::span<const EnumName<AttentionKind>> enum_names(AttentionKind);
std::span<const EnumName<FeatureMapKind>> enum_names(FeatureMapKind);
std::span<const EnumName<PositionKind>> enum_names(PositionKind);
std::span<const EnumName<TokenizerKind>> enum_names(TokenizerKind);
std::span<const EnumName<Precision>> enum_names(Precision);
std::span<const EnumName<ThreadSplit>> enum_names(ThreadSplit);
std::span<const EnumName<GateKind>> enum_names(GateKind);
std::span<const EnumName<TimeDiscountKind>> enum_names(TimeDiscountKind);
std::span<const EnumName<DataFormat>> enum_names(DataFormat);
std::span<const EnumName<DocumentBoundaries>> enum_names(DocumentBoundaries);
std::span<const EnumName<Packing>> enum_names(Packing);
std::span<const EnumName<PromptTemplate>> enum_names(PromptTemplate);

// "rfa_gate" for AttentionKind::rfa_gate; usable in log lines.
template <typename E>
const char* enum_name(E value) {
  for (const auto& entry : enum_names(value))
    if (entry.value == value) return entry.name;
  return "?";
}

// The value spelled `name`; false if no value has that spelling.
template <typename E>
bool enum_parse(const std::string& name, E* value) {
  for (const auto& entry : enum_names(E{}))
    if (name == entry.name) {
      *value = entry.value;
      return true;
    }
  return false;
}

// "softmax|rfa|rfa_gate", for error messages and docs.
template <typename E>
std::string enum_choices(E) {
  std::string out;
  for (const auto& entry : enum_names(E{})) {
    if (!out.empty()) out += '|';
    out += entry.name;
  }
  return out;
}

}  // namespace rfa
