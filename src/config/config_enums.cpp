#include "config/config_enums.h"

namespace rfa {
namespace {

#define RFA_ATTENTION_KIND_NAME(name) {AttentionKind::name, #name},
constexpr EnumName<AttentionKind> kAttentionKinds[] = {RFA_ATTENTION_KINDS(RFA_ATTENTION_KIND_NAME)};
#undef RFA_ATTENTION_KIND_NAME
constexpr EnumName<FeatureMapKind> kFeatureMaps[] = {
    {FeatureMapKind::gaussian, "gaussian"}, {FeatureMapKind::arccos, "arccos"}};
constexpr EnumName<PositionKind> kPositions[] = {
    {PositionKind::automatic, "auto"}, {PositionKind::rope, "rope"}, {PositionKind::none, "none"}};
constexpr EnumName<TokenizerKind> kTokenizerKinds[] = {
    {TokenizerKind::bpe, "bpe"}, {TokenizerKind::unigram, "unigram"}, {TokenizerKind::character, "char"}};
constexpr EnumName<Precision> kPrecisions[] = {{Precision::fp32, "fp32"}, {Precision::bf16, "bf16"}};
constexpr EnumName<ThreadSplit> kThreadSplits[] = {
    {ThreadSplit::automatic, "auto"}, {ThreadSplit::batch, "batch"}, {ThreadSplit::kernels, "kernels"}};
constexpr EnumName<GateKind> kGateKinds[] = {{GateKind::scalar, "scalar"}, {GateKind::feature, "feature"}};
constexpr EnumName<TimeDiscountKind> kTimeDiscounts[] = {{TimeDiscountKind::none, "none"},
                                                         {TimeDiscountKind::log, "log"}};
constexpr EnumName<DataFormat> kDataFormats[] = {{DataFormat::text, "text"},
                                                 {DataFormat::jsonl, "jsonl"},
                                                 {DataFormat::alpaca, "alpaca"},
                                                 {DataFormat::prompt_completion, "prompt_completion"},
                                                 {DataFormat::preference, "preference"},
                                                 {DataFormat::mqar, "mqar"}};
constexpr EnumName<DocumentBoundaries> kBoundaries[] = {{DocumentBoundaries::none, "none"},
                                                        {DocumentBoundaries::reset, "reset"}};
constexpr EnumName<Packing> kPackings[] = {{Packing::pad, "pad"}, {Packing::pack, "pack"}};
constexpr EnumName<PromptTemplate> kTemplates[] = {{PromptTemplate::alpaca, "alpaca"},
                                                   {PromptTemplate::alpaca_short, "alpaca_short"}};

}  // namespace

std::span<const EnumName<AttentionKind>> enum_names(AttentionKind) { return kAttentionKinds; }
std::span<const EnumName<FeatureMapKind>> enum_names(FeatureMapKind) { return kFeatureMaps; }
std::span<const EnumName<PositionKind>> enum_names(PositionKind) { return kPositions; }
std::span<const EnumName<TokenizerKind>> enum_names(TokenizerKind) { return kTokenizerKinds; }
std::span<const EnumName<Precision>> enum_names(Precision) { return kPrecisions; }
std::span<const EnumName<ThreadSplit>> enum_names(ThreadSplit) { return kThreadSplits; }
std::span<const EnumName<GateKind>> enum_names(GateKind) { return kGateKinds; }
std::span<const EnumName<TimeDiscountKind>> enum_names(TimeDiscountKind) { return kTimeDiscounts; }
std::span<const EnumName<DataFormat>> enum_names(DataFormat) { return kDataFormats; }
std::span<const EnumName<DocumentBoundaries>> enum_names(DocumentBoundaries) { return kBoundaries; }
std::span<const EnumName<Packing>> enum_names(Packing) { return kPackings; }
std::span<const EnumName<PromptTemplate>> enum_names(PromptTemplate) { return kTemplates; }

}  // namespace rfa
