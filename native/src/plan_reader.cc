#include "plan_reader.h"

#include <cmath>
#include <cstring>
#include <string>

namespace prism {
namespace {

[[noreturn]] void rangeError(Napi::Env env, const std::string& field, const std::string& rule) {
  throw Napi::RangeError::New(env, "plan." + field + ": " + rule);
}

// Copies a typed array field into `dst` after checking its element type (and length when
// `expected` >= 0). Missing optional fields leave `dst` empty.
template <typename T>
void copyField(Napi::Env env, Napi::Object plan, const char* field, napi_typedarray_type type, const char* typeName,
               int64_t expected, std::vector<T>& dst, bool optional = false) {
  Napi::Value v = plan.Get(field);
  if (v.IsUndefined() && optional) {
    dst.clear();
    return;
  }
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != type)
    throw Napi::TypeError::New(env, std::string("plan.") + field + " must be a " + typeName);
  Napi::TypedArray a = v.As<Napi::TypedArray>();
  const size_t n = a.ElementLength();
  if (expected >= 0 && static_cast<int64_t>(n) != expected)
    rangeError(env, field, "length " + std::to_string(n) + " must be " + std::to_string(expected));
  const T* src = reinterpret_cast<const T*>(static_cast<const uint8_t*>(a.ArrayBuffer().Data()) + a.ByteOffset());
  dst.assign(src, src + n);
}

// CSR offsets: length S+1, start at 0, non-decreasing (strictly when `strict`), end at `total`.
void checkOffsets(Napi::Env env, const char* field, const std::vector<int32_t>& o, int64_t total, bool strict) {
  if (o[0] != 0) rangeError(env, field, "must start at 0");
  for (size_t k = 1; k < o.size(); k++) {
    if (o[k] < o[k - 1] || (strict && o[k] == o[k - 1]))
      rangeError(env, std::string(field) + "[" + std::to_string(k) + "]",
                 strict ? "offsets must increase (every sequence needs at least one token)"
                        : "offsets must not decrease");
  }
  if (o.back() != total)
    rangeError(env, field, "last offset " + std::to_string(o.back()) + " must equal " + std::to_string(total));
}

// Placed embeddings (images' rows): CSR by sequence, each placement a position of one of the
// sequence's rows in this step (strictly increasing within the sequence) and one row of
// `hidden` floats that replaces the token's table row before layer 0.
void readPlacedEmbeddings(Napi::Env env, Napi::Object plan, int64_t hidden, StepPlanData& p) {
  const auto I32 = napi_int32_array;
  const int64_t S = static_cast<int64_t>(p.seqTokenOffsets.size()) - 1;
  copyField(env, plan, "embedOffsets", I32, "Int32Array", S + 1, p.embedOffsets, true);
  copyField(env, plan, "embedPositions", I32, "Int32Array", -1, p.embedPositions, true);
  if (p.embedOffsets.empty()) {
    if (!p.embedPositions.empty() || !plan.Get("embedRows").IsUndefined())
      rangeError(env, "embedOffsets", "is required (length S+1) when embedPositions or embedRows is given");
    p.embedRows.clear();
    p.embedTokenRows.clear();
    return;
  }
  if (hidden < 1) rangeError(env, "embedOffsets", "placed embeddings are not supported by this backend");
  const int64_t n = static_cast<int64_t>(p.embedPositions.size());
  checkOffsets(env, "embedOffsets", p.embedOffsets, n, false);
  copyField(env, plan, "embedRows", napi_float32_array, "Float32Array", n * hidden, p.embedRows);
  p.embedTokenRows.resize(n);
  for (int64_t s = 0; s < S; s++) {
    const int32_t t0 = p.seqTokenOffsets[s], first = p.positions[t0];
    const int32_t last = p.positions[p.seqTokenOffsets[s + 1] - 1];
    for (int32_t k = p.embedOffsets[s]; k < p.embedOffsets[s + 1]; k++) {
      const int32_t pos = p.embedPositions[k];
      const std::string f = "embedPositions[" + std::to_string(k) + "]";
      if (pos < first || pos > last)
        rangeError(env, f, "position " + std::to_string(pos) + " is not among sequence " + std::to_string(s) +
                               "'s positions in this step [" + std::to_string(first) + ", " + std::to_string(last) + "]");
      if (k > p.embedOffsets[s] && pos <= p.embedPositions[k - 1])
        rangeError(env, f, "positions of one sequence's placements must increase");
      p.embedTokenRows[k] = t0 + (pos - first);
    }
  }
  for (size_t i = 0; i < p.embedRows.size(); i++)
    if (!std::isfinite(p.embedRows[i]))
      rangeError(env, "embedRows[" + std::to_string(i) + "]", "must be finite");
}

// Bidirectional spans: CSR by sequence, each span [start, end) of positions (pairs), increasing
// and disjoint within a sequence. A span must end within the sequence's positions in this step,
// so that the K/V of every position a query of it sees exist when attention runs (the earlier
// ones in the cache, the rest written in this step); one that starts before the step (its head
// computed in an earlier chunk or found in the prefix cache) is fine. attendEnd is then derived.
void readBidirectionalSpans(Napi::Env env, Napi::Object plan, StepPlanData& p) {
  const auto I32 = napi_int32_array;
  const int64_t S = static_cast<int64_t>(p.seqTokenOffsets.size()) - 1;
  copyField(env, plan, "bidirectionalOffsets", I32, "Int32Array", S + 1, p.bidiOffsets, true);
  copyField(env, plan, "bidirectionalSpans", I32, "Int32Array", -1, p.bidiSpans, true);
  p.attendEnd.clear();
  if (p.bidiOffsets.empty()) {
    if (!p.bidiSpans.empty()) rangeError(env, "bidirectionalOffsets", "is required (length S+1) when bidirectionalSpans is given");
    return;
  }
  if (p.bidiSpans.size() % 2 != 0) rangeError(env, "bidirectionalSpans", "must hold [start, end) pairs");
  checkOffsets(env, "bidirectionalOffsets", p.bidiOffsets, static_cast<int64_t>(p.bidiSpans.size() / 2), false);
  const int64_t T = static_cast<int64_t>(p.tokens.size());
  p.attendEnd.resize(T);
  for (int64_t t = 0; t < T; t++) p.attendEnd[t] = p.positions[t] + 1;
  for (int64_t s = 0; s < S; s++) {
    const int32_t t0 = p.seqTokenOffsets[s], first = p.positions[t0];
    const int32_t last = p.positions[p.seqTokenOffsets[s + 1] - 1];
    int32_t previousEnd = 0;
    for (int32_t k = p.bidiOffsets[s]; k < p.bidiOffsets[s + 1]; k++) {
      const int32_t start = p.bidiSpans[2 * k], end = p.bidiSpans[2 * k + 1];
      const std::string f = "bidirectionalSpans[" + std::to_string(k) + "]";
      if (start < previousEnd || end <= start)
        rangeError(env, f, "span [" + std::to_string(start) + ", " + std::to_string(end) +
                               ") must be non-empty and after the sequence's previous span");
      if (end <= first || end > last + 1)
        rangeError(env, f, "span [" + std::to_string(start) + ", " + std::to_string(end) + ") must end within sequence " +
                               std::to_string(s) + "'s positions in this step [" + std::to_string(first) + ", " +
                               std::to_string(last) + "]: an image's tokens may not be split across steps");
      previousEnd = end;
      for (int32_t pos = std::max(start, first); pos < end; pos++) p.attendEnd[t0 + (pos - first)] = end;
    }
  }
}

}  // namespace

void readStepPlan(Napi::Env env, Napi::Object plan, const Context& ctx, StepPlanData& p) {
  const ContextOptionsData& o = ctx.options();
  readStepPlan(env, plan,
               PlanLimits{o.kvBlocks, o.blockSize, o.maxBatchTokens, o.maxSeqs, ctx.model()->cfg.vocab,
                          ctx.kvLayout().pagesPerBlock, &ctx.lora(), ctx.model()->cfg.layers, ctx.model()->cfg.hidden},
               p);
}

void readStepPlan(Napi::Env env, Napi::Object plan, const PlanLimits& opt, StepPlanData& p) {
  const int64_t V = opt.vocab;
  const auto I32 = napi_int32_array, F32 = napi_float32_array;

  copyField(env, plan, "tokens", I32, "Int32Array", -1, p.tokens);
  const int64_t T = static_cast<int64_t>(p.tokens.size());
  if (T < 1) rangeError(env, "tokens", "must hold at least one token");
  if (T > opt.maxBatchTokens)
    rangeError(env, "tokens", "length " + std::to_string(T) + " exceeds the context's maxBatchTokens " +
                                  std::to_string(opt.maxBatchTokens));
  for (int64_t t = 0; t < T; t++)
    if (p.tokens[t] < 0 || p.tokens[t] >= V)
      rangeError(env, "tokens[" + std::to_string(t) + "]", "token id " + std::to_string(p.tokens[t]) +
                                                             " must be in [0, " + std::to_string(V) + ")");
  copyField(env, plan, "positions", I32, "Int32Array", T, p.positions);
  copyField(env, plan, "seqTokenOffsets", I32, "Int32Array", -1, p.seqTokenOffsets);
  const int64_t S = static_cast<int64_t>(p.seqTokenOffsets.size()) - 1;
  if (S < 1) rangeError(env, "seqTokenOffsets", "must have length S+1 with S >= 1");
  if (S > opt.maxSeqs)
    rangeError(env, "seqTokenOffsets", std::to_string(S) + " sequences exceed the context's maxSeqs " +
                                           std::to_string(opt.maxSeqs));
  checkOffsets(env, "seqTokenOffsets", p.seqTokenOffsets, T, true);
  copyField(env, plan, "blockTableOffsets", I32, "Int32Array", S + 1, p.blockTableOffsets);
  copyField(env, plan, "blockTables", I32, "Int32Array", -1, p.blockTables);
  checkOffsets(env, "blockTableOffsets", p.blockTableOffsets, static_cast<int64_t>(p.blockTables.size()), false);
  for (size_t k = 0; k < p.blockTables.size(); k++)
    if (p.blockTables[k] < 0 || p.blockTables[k] >= opt.kvBlocks)
      rangeError(env, "blockTables[" + std::to_string(k) + "]", "block id " + std::to_string(p.blockTables[k]) +
                                                                   " must be in [0, kvBlocks=" + std::to_string(opt.kvBlocks) + ")");
  // A block is `pagesPerBlock` entries (one page per layer group: kv_layout.h).
  const int64_t pagesPerBlock = opt.pagesPerBlock;
  for (int64_t s = 0; s < S; s++) {
    const int64_t entries = p.blockTableOffsets[s + 1] - p.blockTableOffsets[s];
    if (entries % pagesPerBlock != 0)
      rangeError(env, "blockTableOffsets[" + std::to_string(s + 1) + "]",
                 "sequence " + std::to_string(s) + "'s table has " + std::to_string(entries) +
                     " entries, not a multiple of the model's " + std::to_string(pagesPerBlock) + " pages per block");
    const int64_t capacity = entries / pagesPerBlock * opt.blockSize;
    for (int32_t t = p.seqTokenOffsets[s]; t < p.seqTokenOffsets[s + 1]; t++) {
      const int32_t pos = p.positions[t];
      const std::string f = "positions[" + std::to_string(t) + "]";
      if (pos < 0) rangeError(env, f, "must be >= 0");
      if (pos >= capacity)
        rangeError(env, f, "position " + std::to_string(pos) + " is not covered by sequence " + std::to_string(s) +
                               "'s block table (" + std::to_string(capacity) + " slots)");
      if (t > p.seqTokenOffsets[s] && pos != p.positions[t - 1] + 1)
        rangeError(env, f, "positions of one sequence's tokens must be consecutive");
    }
  }
  copyField(env, plan, "blockCopies", I32, "Int32Array", -1, p.blockCopies, true);
  if (p.blockCopies.size() % 2 != 0) rangeError(env, "blockCopies", "must hold [src, dst] pairs (even length)");
  for (size_t k = 0; k < p.blockCopies.size(); k++)
    if (p.blockCopies[k] < 0 || p.blockCopies[k] >= opt.kvBlocks)
      rangeError(env, "blockCopies[" + std::to_string(k) + "]", "block id must be in [0, kvBlocks)");

  copyField(env, plan, "sample", napi_uint8_array, "Uint8Array", S, p.sample);
  copyField(env, plan, "temperature", F32, "Float32Array", S, p.temperature);
  copyField(env, plan, "topK", I32, "Int32Array", S, p.topK);
  copyField(env, plan, "topP", F32, "Float32Array", S, p.topP);
  copyField(env, plan, "repetitionPenalty", F32, "Float32Array", S, p.repetitionPenalty);
  copyField(env, plan, "presencePenalty", F32, "Float32Array", S, p.presencePenalty);
  copyField(env, plan, "frequencyPenalty", F32, "Float32Array", S, p.frequencyPenalty);
  copyField(env, plan, "seeds", napi_biguint64_array, "BigUint64Array", S, p.seeds);
  copyField(env, plan, "sampleCounters", I32, "Int32Array", S, p.sampleCounters);
  copyField(env, plan, "allowedMaskRows", I32, "Int32Array", S, p.allowedMaskRows);
  copyField(env, plan, "allowedMask", I32, "Int32Array", -1, p.allowedMask);
  copyField(env, plan, "topLogprobs", I32, "Int32Array", S, p.topLogprobs);
  copyField(env, plan, "penaltyTokenOffsets", I32, "Int32Array", S + 1, p.penaltyTokenOffsets);
  copyField(env, plan, "penaltyTokens", I32, "Int32Array", -1, p.penaltyTokens);
  checkOffsets(env, "penaltyTokenOffsets", p.penaltyTokenOffsets, static_cast<int64_t>(p.penaltyTokens.size()), false);
  for (size_t k = 0; k < p.penaltyTokens.size(); k++)
    if (p.penaltyTokens[k] < 0 || p.penaltyTokens[k] >= V)
      rangeError(env, "penaltyTokens[" + std::to_string(k) + "]", "token id must be in [0, " + std::to_string(V) + ")");
  copyField(env, plan, "suppressTokenOffsets", I32, "Int32Array", S + 1, p.suppressTokenOffsets, true);
  copyField(env, plan, "suppressTokens", I32, "Int32Array", -1, p.suppressTokens, true);
  if (!p.suppressTokenOffsets.empty())
    checkOffsets(env, "suppressTokenOffsets", p.suppressTokenOffsets, static_cast<int64_t>(p.suppressTokens.size()),
                 false);
  else if (!p.suppressTokens.empty())
    rangeError(env, "suppressTokens", "needs suppressTokenOffsets (length S+1)");
  for (size_t k = 0; k < p.suppressTokens.size(); k++)
    if (p.suppressTokens[k] < 0 || p.suppressTokens[k] >= V)
      rangeError(env, "suppressTokens[" + std::to_string(k) + "]", "token id must be in [0, " + std::to_string(V) + ")");
  copyField(env, plan, "logitBiasOffsets", I32, "Int32Array", S + 1, p.logitBiasOffsets, true);
  copyField(env, plan, "logitBiasTokens", I32, "Int32Array", -1, p.logitBiasTokens, true);
  copyField(env, plan, "logitBiasValues", F32, "Float32Array", static_cast<int64_t>(p.logitBiasTokens.size()),
            p.logitBiasValues, true);
  if (p.logitBiasValues.size() != p.logitBiasTokens.size())
    rangeError(env, "logitBiasValues", "must have one value per logitBiasTokens entry");
  if (!p.logitBiasOffsets.empty())
    checkOffsets(env, "logitBiasOffsets", p.logitBiasOffsets, static_cast<int64_t>(p.logitBiasTokens.size()), false);
  else if (!p.logitBiasTokens.empty())
    rangeError(env, "logitBiasTokens", "needs logitBiasOffsets (length S+1)");
  for (size_t k = 0; k < p.logitBiasTokens.size(); k++) {
    if (p.logitBiasTokens[k] < 0 || p.logitBiasTokens[k] >= V)
      rangeError(env, "logitBiasTokens[" + std::to_string(k) + "]", "token id must be in [0, " + std::to_string(V) + ")");
    if (!std::isfinite(p.logitBiasValues[k])) rangeError(env, "logitBiasValues[" + std::to_string(k) + "]", "must be finite");
  }
  copyField(env, plan, "minP", F32, "Float32Array", S, p.minP, true);
  copyField(env, plan, "typicalP", F32, "Float32Array", S, p.typicalP, true);
  for (size_t s = 0; s < p.minP.size(); s++)
    if (!(p.minP[s] >= 0 && p.minP[s] <= 1)) rangeError(env, "minP[" + std::to_string(s) + "]", "must be in [0, 1] (0 = off)");
  for (size_t s = 0; s < p.typicalP.size(); s++)
    if (!(p.typicalP[s] > 0 && p.typicalP[s] <= 1))
      rangeError(env, "typicalP[" + std::to_string(s) + "]", "must be in (0, 1] (1 = off)");
  const int64_t words = (V + 31) / 32;
  if (p.allowedMask.size() % words != 0)
    rangeError(env, "allowedMask", "length must be a multiple of ceil(vocabSize/32) = " + std::to_string(words));
  // Speculative decoding: the last draftCounts[s] tokens of sequence s are draft tokens, each
  // verified against the logits of the position before it (so is the token after them).
  copyField(env, plan, "draftCounts", I32, "Int32Array", S, p.draftCounts, true);
  p.draftOffsets.assign(S + 1, 0);
  for (size_t s = 0; s < p.draftCounts.size(); s++) {
    const std::string i = "[" + std::to_string(s) + "]";
    const int32_t k = p.draftCounts[s];
    const int32_t n = p.seqTokenOffsets[s + 1] - p.seqTokenOffsets[s];
    if (k < 0) rangeError(env, "draftCounts" + i, "must be >= 0");
    if (k > 0) {
      if (k >= n)
        rangeError(env, "draftCounts" + i, std::to_string(k) + " draft tokens must leave at least one of the sequence's " +
                                               std::to_string(n) + " tokens before them");
      if (p.sample[s] != 1) rangeError(env, "draftCounts" + i, "a sequence with draft tokens must sample (sample[s] = 1)");
    }
    p.draftOffsets[s + 1] = p.draftOffsets[s] + k;
  }
  p.draftTotal = p.draftOffsets[S];
  // Late masks (late_masks.h): the rows are named now, their bits arrive with supplyMasks.
  p.lateMaskRows = 0;
  Napi::Value late = plan.Get("lateMaskRows");
  if (!late.IsUndefined()) {
    const double n = late.IsNumber() ? late.As<Napi::Number>().DoubleValue() : -1;
    // A constrained sequence with k draft tokens has k+1 rows (one per verified position).
    const int64_t most = S + p.draftTotal;
    if (!(n >= 0 && n <= static_cast<double>(most) && n == std::floor(n)))
      rangeError(env, "lateMaskRows", "must be an integer in [0, S + draft tokens = " + std::to_string(most) + "]");
    p.lateMaskRows = static_cast<int64_t>(n);
    if (p.lateMaskRows > 0 && !p.allowedMask.empty())
      rangeError(env, "allowedMask", "must be empty when lateMaskRows > 0 (the masks come with supplyMasks)");
  }
  const int64_t maskRows =
      p.lateMaskRows > 0 ? p.lateMaskRows : static_cast<int64_t>(p.allowedMask.size()) / words;
  for (int64_t s = 0; s < S; s++) {
    const std::string i = "[" + std::to_string(s) + "]";
    if (p.sample[s] > 1) rangeError(env, "sample" + i, "must be 0 or 1");
    if (!std::isfinite(p.temperature[s])) rangeError(env, "temperature" + i, "must be finite");
    if (p.topK[s] < 0) rangeError(env, "topK" + i, "must be >= 0 (0 = no cut)");
    if (!(p.topP[s] > 0) || !std::isfinite(p.topP[s])) rangeError(env, "topP" + i, "must be > 0 (>= 1 = no cut)");
    if (!(p.repetitionPenalty[s] > 0) || !std::isfinite(p.repetitionPenalty[s]))
      rangeError(env, "repetitionPenalty" + i, "must be finite and > 0 (1 = off)");
    if (!std::isfinite(p.presencePenalty[s])) rangeError(env, "presencePenalty" + i, "must be finite");
    if (!std::isfinite(p.frequencyPenalty[s])) rangeError(env, "frequencyPenalty" + i, "must be finite");
    if (p.sampleCounters[s] < 0) rangeError(env, "sampleCounters" + i, "must be >= 0");
    // With k draft tokens, rows r..r+k are the masks of its k+1 verified positions.
    const int64_t lastRow = p.allowedMaskRows[s] + (p.draftCounts.empty() ? 0 : p.draftCounts[s]);
    if (p.allowedMaskRows[s] < -1 || (p.allowedMaskRows[s] >= 0 && lastRow >= maskRows))
      rangeError(env, "allowedMaskRows" + i,
                 "must be -1 or a row r of allowedMask with r + draftCounts[s] < " + std::to_string(maskRows));
    if (p.topLogprobs[s] < -1 || p.topLogprobs[s] > std::min<int64_t>(V, 1024))
      rangeError(env, "topLogprobs" + i, "must be in [-1, " + std::to_string(std::min<int64_t>(V, 1024)) + "]");
  }

  // Self-speculation's draft pass: only the first exitLayer layers, then the output head.
  p.exitLayer = opt.layers;
  Napi::Value exit = plan.Get("exitLayer");
  if (!exit.IsUndefined()) {
    if (opt.layers < 1) rangeError(env, "exitLayer", "is not supported by this backend");
    const double n = exit.IsNumber() ? exit.As<Napi::Number>().DoubleValue() : -1;
    if (!(n >= 1 && n <= static_cast<double>(p.exitLayer) && n == std::floor(n)))
      rangeError(env, "exitLayer", "must be an integer in [1, layers=" + std::to_string(p.exitLayer) + "]");
    p.exitLayer = static_cast<int64_t>(n);
  }

  p.returnLogits = ReturnLogits::None;
  p.returnHidden = false;  // only the pooling step sets it (encoder/hidden_step_addon.cc)
  Napi::Value rl = plan.Get("returnLogits");
  if (!rl.IsUndefined()) {
    std::string s = rl.IsString() ? rl.As<Napi::String>().Utf8Value() : "";
    if (s == "none") p.returnLogits = ReturnLogits::None;
    else if (s == "last") p.returnLogits = ReturnLogits::Last;
    else if (s == "all") p.returnLogits = ReturnLogits::All;
    else throw Napi::TypeError::New(env, "plan.returnLogits must be 'none', 'last' or 'all'");
    if (p.returnLogits == ReturnLogits::Last && p.draftTotal > 0)
      throw Napi::TypeError::New(env, "plan.returnLogits 'last' cannot be combined with draftCounts (use 'all')");
  }
  // Prompt logprobs (prompt_scores.h): a target per token row, the alternatives per sequence.
  copyField(env, plan, "promptLogprobTargets", I32, "Int32Array", T, p.promptTargets, true);
  copyField(env, plan, "promptTopLogprobs", I32, "Int32Array", S, p.promptTop, true);
  if (p.promptTargets.empty() != p.promptTop.empty())
    rangeError(env, "promptTopLogprobs", "and promptLogprobTargets must be given together");
  for (size_t t = 0; t < p.promptTargets.size(); t++)
    if (p.promptTargets[t] < -1 || p.promptTargets[t] >= V)
      rangeError(env, "promptLogprobTargets[" + std::to_string(t) + "]",
                 "must be -1 (not scored) or a token id below the vocabulary size " + std::to_string(V));
  for (size_t s = 0; s < p.promptTop.size(); s++)
    if (p.promptTop[s] < 0 || p.promptTop[s] > std::min<int64_t>(V, 1024))
      rangeError(env, "promptTopLogprobs[" + std::to_string(s) + "]",
                 "must be in [0, " + std::to_string(std::min<int64_t>(V, 1024)) + "]");
  // LoRA slot per sequence (lora.h): optional; each must be -1 (base) or a bound slot.
  copyField(env, plan, "adapterSlots", I32, "Int32Array", S, p.adapterSlots, true);
  for (size_t s = 0; s < p.adapterSlots.size(); s++)
    if (p.adapterSlots[s] != -1 && (opt.lora == nullptr || !opt.lora->bound(p.adapterSlots[s])))
      rangeError(env, "adapterSlots[" + std::to_string(s) + "]",
                 "must be -1 (base model) or a slot holding an adapter (context has " +
                     std::to_string(opt.lora ? opt.lora->slots() : 0) + " slots)");
  readPlacedEmbeddings(env, plan, opt.hidden, p);
  readBidirectionalSpans(env, plan, p);
  p.T = static_cast<int32_t>(T);
  p.S = static_cast<int32_t>(S);
}

Napi::Object stepResultToJs(Napi::Env env, const StepResultData& r, int64_t S, bool lateMasks, int64_t vocab, bool drafts) {
  Napi::Object o = Napi::Object::New(env);
  auto i32 = [&](const int32_t* src, size_t n) {
    auto a = Napi::Int32Array::New(env, n);
    if (n) std::memcpy(a.Data(), src, n * 4);
    return a;
  };
  auto f32 = [&](const float* src, size_t n) {
    auto a = Napi::Float32Array::New(env, n);
    if (n) std::memcpy(a.Data(), src, n * 4);
    return a;
  };
  const size_t n = static_cast<size_t>(S);
  o.Set("tokens", i32(r.tokens.data(), n));
  o.Set("logprobs", f32(r.logprobs.data(), n));
  o.Set("topLogprobsStride", r.topStride);
  o.Set("topLogprobIds", i32(r.topIds.data(), r.topIds.size()));
  o.Set("topLogprobValues", f32(r.topValues.data(), r.topValues.size()));
  if (lateMasks) o.Set("lateMaskWaitMs", r.lateMaskWaitMs);
  if (drafts) {
    o.Set("numAccepted", i32(r.numAccepted.data(), n));
    o.Set("acceptedLogprobs", f32(r.acceptedLogprobs.data(), r.acceptedLogprobs.size()));
    o.Set("acceptedTopLogprobIds", i32(r.acceptedTopIds.data(), r.acceptedTopIds.size()));
    o.Set("acceptedTopLogprobValues", f32(r.acceptedTopValues.data(), r.acceptedTopValues.size()));
  }
  if (r.prompt) {
    const size_t T = r.promptLogprobs.size();
    o.Set("promptLogprobs", f32(r.promptLogprobs.data(), T));
    o.Set("promptLogprobRanks", i32(r.promptRanks.data(), T));
    o.Set("promptTopLogprobsStride", r.promptTopStride);
    o.Set("promptTopLogprobIds", i32(r.promptTopIds.data(), r.promptTopIds.size()));
    o.Set("promptTopLogprobValues", f32(r.promptTopValues.data(), r.promptTopValues.size()));
  }
  if (r.logits) o.Set("logits", f32(r.logits, static_cast<size_t>(r.logitRows * vocab)));
  if (r.anyError) {
    Napi::Array errs = Napi::Array::New(env, n);
    for (size_t s = 0; s < n; s++)
      errs.Set(static_cast<uint32_t>(s), r.errors[s].empty() ? env.Null() : Napi::String::New(env, r.errors[s]));
    o.Set("errors", errs);
  }
  return o;
}

}  // namespace prism
