// The C interface (prism_cuda.h): argument checks, C++ exceptions turned into the
// per-thread error message, and the kernel checks' small drivers.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../prism_cuda.h"
#include "bench.h"
#include "context.h"
#include "gemm.h"
#include "gemv_fast.h"
#include "model.h"

struct pc_model {
  std::unique_ptr<pc::DeviceModel> m;
};
struct pc_context {
  std::unique_ptr<pc::DeviceContext> c;
};

namespace {

thread_local std::string lastError;

template <typename F>
int guarded(F&& f) {
  try {
    f();
    return 0;
  } catch (const std::bad_alloc&) {
    lastError = "out of host memory";
  } catch (const std::exception& e) {
    lastError = e.what();
  } catch (...) {
    lastError = "unknown error";
  }
  return 1;
}

void need(bool ok, const char* what) {
  if (!ok) throw pc::Error(what);
}

template <typename T>
pc::DeviceBuffer toDevice(const T* src, size_t count, const pc::Stream& s) {
  pc::DeviceBuffer b(std::max<size_t>(count * sizeof(T), 16));
  pc::copyToDevice(b.get(), src, count * sizeof(T), s);
  return b;
}

void uploadChecked(pc::WeightStorage& w, int type, const void* weights, int64_t rows, int64_t cols, const pc::Stream& s) {
  pc::allocateWeight(type, rows, cols, w);
  pc::DeviceBuffer staging;
  pc::uploadWeightRows(w, 0, weights, rows, staging, s);
  s.synchronize();
}

}  // namespace

extern "C" {

int pc_abi_version(void) { return PC_ABI_VERSION; }
const char* pc_last_error(void) { return lastError.c_str(); }

int pc_device_count(int32_t* count) {
  return guarded([&] { *count = pc::deviceCount(); });
}

int pc_device_info_get(int32_t device, pc_device_info* out) {
  return guarded([&] {
    need(device >= 0 && device < pc::deviceCount(), "no such device");
    const pc::DeviceProperties p = pc::deviceProperties(device);
    std::memset(out, 0, sizeof(*out));
    std::strncpy(out->name, p.name.c_str(), sizeof(out->name) - 1);
    out->total_bytes = p.totalBytes;
    out->free_bytes = p.freeBytes;
    out->multiprocessors = p.multiprocessors;
    out->cc_major = p.major;
    out->cc_minor = p.minor;
    out->l2_bytes = p.l2Bytes;
    out->peak_bandwidth_gbs = p.peakBandwidthGBs;
    out->emulated = p.emulated ? 1 : 0;
  });
}

int pc_measure_bandwidth(int32_t device, uint64_t bytes, int32_t passes, double* gbs) {
  return guarded([&] {
    need(passes >= 1 && passes <= 1000, "passes must be in [1, 1000]");
    *gbs = pc::measureReadBandwidth(device, bytes, passes);
  });
}

int pc_model_create(int32_t device, const pc_model_config* cfg, pc_model** out) {
  return guarded([&] {
    need(device >= 0 && device < pc::deviceCount(), "no such device");
    pc::useDevice(device);
    auto box = std::make_unique<pc_model>();
    box->m = std::make_unique<pc::DeviceModel>(device, *cfg);
    *out = box.release();
  });
}

int pc_model_set_matrix(pc_model* m, int32_t role, int64_t layer, int32_t type, const void* bytes, int64_t rows,
                        int64_t cols, int64_t row_offset, int64_t total_rows) {
  return guarded([&] { m->m->setMatrix(role, layer, type, bytes, rows, cols, row_offset, total_rows); });
}

int pc_model_set_vector(pc_model* m, int32_t role, int64_t layer, const float* values, int64_t n) {
  return guarded([&] { m->m->setVector(role, layer, values, n); });
}

int pc_model_finish(pc_model* m) {
  return guarded([&] { m->m->finish(); });
}

int pc_model_bytes(const pc_model* m, uint64_t* device_bytes, uint64_t* read_bytes) {
  return guarded([&] {
    *device_bytes = m->m->deviceBytes();
    *read_bytes = m->m->readBytes();
  });
}

void pc_model_destroy(pc_model* m) {
  if (!m) return;
  try {
    pc::useDevice(m->m->device());
  } catch (...) {
  }
  delete m;
}

int pc_context_create(pc_model* m, const pc_context_options* opts, pc_context** out) {
  return guarded([&] {
    pc::useDevice(m->m->device());
    auto box = std::make_unique<pc_context>();
    box->c = std::make_unique<pc::DeviceContext>(*m->m, *opts);
    *out = box.release();
  });
}

int pc_context_kv_bytes(const pc_context* c, uint64_t* bytes) {
  return guarded([&] { *bytes = c->c->kvBytes(); });
}

void pc_context_destroy(pc_context* c) { delete c; }

int pc_step_forward(pc_context* c, const pc_step_plan* plan) {
  return guarded([&] { c->c->forward(*plan); });
}

int pc_step_sample(pc_context* c, const pc_step_plan* plan, const int32_t* masks, int64_t mask_rows,
                   pc_step_result* result) {
  return guarded([&] { c->c->sample(*plan, masks, mask_rows, *result); });
}

double pc_step_device_ms(const pc_context* c) { return c->c->lastStepMs(); }

int pc_step_launches(const pc_context* c, int64_t* launches) {
  return guarded([&] { *launches = c->c->lastLaunches(); });
}

// ---- kernel checks -------------------------------------------------------------------------

int pc_check_matmul(int32_t device, int32_t type, const void* weights, int64_t rows, int64_t cols, const float* x,
                    int64_t n, float* y, int32_t path) {
  return guarded([&] {
    need(n >= 1 && rows >= 1, "rows and n must be >= 1");
    pc::useDevice(device);
    pc::Stream s;
    pc::WeightStorage w;
    uploadChecked(w, type, weights, rows, cols, s);
    pc::DeviceBuffer dx = toDevice(x, static_cast<size_t>(n * cols), s);
    pc::DeviceBuffer dy(static_cast<size_t>(n * rows) * 4);
    need(path >= 0 && path <= 4, "path must be 0 to 4");
    const bool useGemv = path == 1 || (path == 0 && n <= pc::kGemvMaxTokens);
    if (path >= 3) {
      need(n <= pc::kGemvMaxTokens, "the fast GEMV takes at most 8 rows of x");
      pc::DeviceBuffer partial(static_cast<size_t>(pc::gemvFastPartialFloats(rows)) * 4), counters;
      counters.allocateZeroed(static_cast<size_t>(pc::gemvFastCounters(rows)) * 4, s);
      const pc::GemvScratch scratch{partial.get<float>(), pc::gemvFastPartialFloats(rows), counters.get<int32_t>(),
                                    pc::gemvFastCounters(rows)};
      const pc::GemvIn in{dx.get<float>(), cols, nullptr, nullptr, 0};
      const pc::GemvOut out{pc::GemvMode::Store, dy.get<float>(), rows, 0, {}};
      // Twice: the second launch finds the counters the first left (they must be zero again).
      for (int run = 0; run < 2; run++)
        pc::gemvFast(w.view, in, n, out, scratch, pc::deviceProperties(device).multiprocessors, s, path == 4 ? 3 : 0);
    } else if (useGemv) {
      need(n <= pc::kGemvMaxTokens, "the GEMV path takes at most 8 rows of x");
      pc::gemv(w.view, dx.get<float>(), cols, n, dy.get<float>(), rows, false, s);
    } else {
      pc::DeviceBuffer xb(static_cast<size_t>(n * cols) * 2), wb(static_cast<size_t>(rows * cols) * 2);
      pc::convertToBf16(dx.get<float>(), cols, n, cols, xb.get<uint16_t>(), s);
      // In three bands of rows, as a prefill step decodes a large matrix (weightRows: each
      // type's arrays entered mid-matrix).
      const int64_t band = std::max<int64_t>(1, (rows + 2) / 3);
      for (int64_t r0 = 0; r0 < rows; r0 += band)
        pc::dequantizeToBf16(pc::weightRows(w.view, r0, std::min(band, rows - r0)), wb.get<uint16_t>() + r0 * cols, s);
      pc::Gemm gemm(s);
      gemm.bf16(wb.get<uint16_t>(), rows, cols, xb.get<uint16_t>(), n, dy.get<float>(), rows, false, s);
    }
    pc::copyToHost(y, dy.get(), dy.bytes(), s);
    s.synchronize();
  });
}

int pc_check_dequantize(int32_t device, int32_t type, const void* weights, int64_t rows, int64_t cols, float* out) {
  return guarded([&] {
    pc::useDevice(device);
    pc::Stream s;
    pc::WeightStorage w;
    uploadChecked(w, type, weights, rows, cols, s);
    pc::DeviceBuffer d(static_cast<size_t>(rows * cols) * 4);
    // The first row alone, then the rest: weightRows enters each array mid-matrix.
    pc::dequantizeToF32(pc::weightRows(w.view, 0, 1), d.get<float>(), s);
    if (rows > 1) pc::dequantizeToF32(pc::weightRows(w.view, 1, rows - 1), d.get<float>() + cols, s);
    pc::copyToHost(out, d.get(), d.bytes(), s);
    s.synchronize();
  });
}

int pc_check_rms_norm(int32_t device, const float* x, int64_t rows, int64_t d, const float* w, float eps, float* out) {
  return guarded([&] {
    pc::useDevice(device);
    pc::Stream s;
    pc::DeviceBuffer dx = toDevice(x, static_cast<size_t>(rows * d), s), dw = toDevice(w, static_cast<size_t>(d), s);
    pc::DeviceBuffer dout(static_cast<size_t>(rows * d) * 4);
    pc::rmsNorm(dx.get<float>(), nullptr, rows, d, dw.get<float>(), eps, dout.get<float>(), s);
    pc::copyToHost(out, dout.get(), dout.bytes(), s);
    s.synchronize();
  });
}

int pc_check_swiglu(int32_t device, const float* gate_up, int64_t rows, int64_t inter, float* out) {
  return guarded([&] {
    pc::useDevice(device);
    pc::Stream s;
    pc::DeviceBuffer dg = toDevice(gate_up, static_cast<size_t>(rows * 2 * inter), s);
    pc::DeviceBuffer dout(static_cast<size_t>(rows * inter) * 4);
    pc::swiglu(dg.get<float>(), rows, inter, dout.get<float>(), s);
    pc::copyToHost(out, dout.get(), dout.bytes(), s);
    s.synchronize();
  });
}

int pc_check_rope_kv(int32_t device, const pc_rope_check* r, float* q_out, uint16_t* k_out, uint16_t* v_out) {
  return guarded([&] {
    need(r->T >= 1 && r->heads >= 1 && r->kv_heads >= 1 && r->head_dim % 8 == 0, "bad rope check shape");
    pc::useDevice(device);
    pc::Stream s;
    const int64_t T = r->T, hd = r->head_dim, qkvDim = (r->heads + 2 * r->kv_heads) * hd;
    // Token t is sequence t; its cache block is t (block size 16), the table points every
    // earlier block of the sequence at it too.
    const int blockSize = 16;
    std::vector<int32_t> seq(static_cast<size_t>(T)), offsets(static_cast<size_t>(T + 1)), table;
    for (int64_t t = 0; t < T; t++) {
      seq[static_cast<size_t>(t)] = static_cast<int32_t>(t);
      offsets[static_cast<size_t>(t)] = static_cast<int32_t>(table.size());
      for (int64_t b = 0; b <= r->positions[t] / blockSize; b++) table.push_back(static_cast<int32_t>(t));
    }
    offsets[static_cast<size_t>(T)] = static_cast<int32_t>(table.size());
    pc::DeviceBuffer dqkv = toDevice(r->qkv, static_cast<size_t>(T * qkvDim), s);
    pc::DeviceBuffer dpos = toDevice(r->positions, static_cast<size_t>(T), s), dseq = toDevice(seq.data(), seq.size(), s);
    pc::DeviceBuffer doff = toDevice(offsets.data(), offsets.size(), s), dtab = toDevice(table.data(), table.size(), s);
    pc::DeviceBuffer dinv = toDevice(r->inv_freq, static_cast<size_t>(hd / 2), s);
    pc::DeviceBuffer dbias, dqn, dkn;
    if (r->bias) dbias = toDevice(r->bias, static_cast<size_t>(qkvDim), s);
    if (r->q_norm) dqn = toDevice(r->q_norm, static_cast<size_t>(hd), s);
    if (r->k_norm) dkn = toDevice(r->k_norm, static_cast<size_t>(hd), s);
    const size_t cacheElems = static_cast<size_t>(T * r->kv_heads * blockSize * hd);
    pc::DeviceBuffer kc(cacheElems * 2), vc(cacheElems * 2);
    pc::RopeKvParams p;
    p.qkv = dqkv.get<float>();
    p.T = T;
    p.heads = r->heads;
    p.kvHeads = r->kv_heads;
    p.hd = static_cast<int>(hd);
    p.bias = r->bias ? dbias.get<float>() : nullptr;
    p.qNorm = r->q_norm ? dqn.get<float>() : nullptr;
    p.kNorm = r->k_norm ? dkn.get<float>() : nullptr;
    p.eps = r->eps;
    p.invFreq = dinv.get<float>();
    p.neox = r->neox != 0;
    p.qScale = r->q_scale;
    p.positions = dpos.get<int32_t>();
    p.tokenSeq = dseq.get<int32_t>();
    p.blockTables = dtab.get<int32_t>();
    p.blockTableOffsets = doff.get<int32_t>();
    p.blockSize = blockSize;
    p.kCache = kc.get<uint16_t>();
    p.vCache = vc.get<uint16_t>();
    pc::ropeAndStoreKv(p, s);
    std::vector<float> rows(static_cast<size_t>(T * qkvDim));
    std::vector<uint16_t> kh(cacheElems), vh(cacheElems);
    pc::copyToHost(rows.data(), dqkv.get(), rows.size() * 4, s);
    pc::copyToHost(kh.data(), kc.get(), cacheElems * 2, s);
    pc::copyToHost(vh.data(), vc.get(), cacheElems * 2, s);
    s.synchronize();
    const int64_t qDim = r->heads * hd, kvDim = r->kv_heads * hd;
    for (int64_t t = 0; t < T; t++) {
      std::memcpy(q_out + t * qDim, rows.data() + t * qkvDim, static_cast<size_t>(qDim) * 4);
      const int64_t slot = r->positions[t] % blockSize;
      for (int g = 0; g < r->kv_heads; g++) {
        const size_t at = static_cast<size_t>(((t * r->kv_heads + g) * blockSize + slot) * hd);
        std::memcpy(k_out + t * kvDim + g * hd, kh.data() + at, static_cast<size_t>(hd) * 2);
        std::memcpy(v_out + t * kvDim + g * hd, vh.data() + at, static_cast<size_t>(hd) * 2);
      }
    }
  });
}

int pc_check_attention(int32_t device, const pc_attention_check* a, float* out) {
  return guarded([&] {
    need(a->T >= 1 && a->S >= 1 && a->heads % a->kv_heads == 0 && a->window >= 0, "bad attention check shape");
    pc::useDevice(device);
    pc::Stream s;
    const int64_t T = a->T, hd = a->head_dim;
    const size_t cacheElems = static_cast<size_t>(a->kv_blocks) * a->kv_heads * a->block_size * hd;
    pc::DeviceBuffer kc = toDevice(a->k_cache, cacheElems, s), vc = toDevice(a->v_cache, cacheElems, s);
    pc::DeviceBuffer dq = toDevice(a->q, static_cast<size_t>(T * a->heads * hd), s);
    std::vector<int32_t> seq(static_cast<size_t>(T)), first, count;
    const int tileTokens = pc::attentionTileTokens(a->heads / a->kv_heads);
    int64_t maxPos = 0;
    for (int32_t q = 0; q < a->S; q++) {
      const int32_t b = a->seq_token_offsets[q], e = a->seq_token_offsets[q + 1];
      for (int32_t t = b; t < e; t++) seq[static_cast<size_t>(t)] = q;
      for (int32_t t = b; t < e; t += tileTokens) {
        first.push_back(t);
        count.push_back(std::min(tileTokens, e - t));
      }
      maxPos = std::max<int64_t>(maxPos, a->positions[e - 1] + 1);
    }
    pc::DeviceBuffer dseq = toDevice(seq.data(), seq.size(), s), dfirst = toDevice(first.data(), first.size(), s),
                     dcount = toDevice(count.data(), count.size(), s);
    pc::DeviceBuffer dpos = toDevice(a->positions, static_cast<size_t>(T), s);
    pc::DeviceBuffer doff = toDevice(a->block_table_offsets, static_cast<size_t>(a->S + 1), s);
    pc::DeviceBuffer dtab = toDevice(a->block_tables, static_cast<size_t>(a->n_block_tables), s);
    int splits = a->splits;
    if (splits <= 0) {
      const int64_t items = static_cast<int64_t>(first.size()) * a->kv_heads;
      const int sms = pc::deviceProperties(device).multiprocessors;
      splits = T > 256 ? 1 : static_cast<int>(std::clamp<int64_t>(std::min<int64_t>((2 * sms + items - 1) / items, (maxPos + 31) / 32), 1, 16));
    }
    pc::DeviceBuffer partial(static_cast<size_t>(splits) * T * a->heads * (hd + 2) * 4);
    pc::DeviceBuffer dout(static_cast<size_t>(T * a->heads * hd) * 4);
    pc::AttentionParams p;
    p.q = dq.get<float>();
    p.ldq = a->heads * hd;
    p.kCache = kc.get<uint16_t>();
    p.vCache = vc.get<uint16_t>();
    p.heads = a->heads;
    p.kvHeads = a->kv_heads;
    p.hd = static_cast<int>(hd);
    p.blockSize = a->block_size;
    p.T = T;
    p.tileFirst = dfirst.get<int32_t>();
    p.tileCount = dcount.get<int32_t>();
    p.tiles = static_cast<int64_t>(first.size());
    p.tileTokens = tileTokens;
    p.positions = dpos.get<int32_t>();
    p.tokenSeq = dseq.get<int32_t>();
    p.blockTables = dtab.get<int32_t>();
    p.blockTableOffsets = doff.get<int32_t>();
    p.window = a->window;
    p.splits = splits;
    p.partial = partial.get<float>();
    p.out = dout.get<float>();
    pc::attention(p, s);
    pc::copyToHost(out, dout.get(), dout.bytes(), s);
    s.synchronize();
  });
}

int pc_check_sample(int32_t device, const float* logits, int64_t vocab, const pc_step_plan* plan, const int32_t* masks,
                    int64_t mask_rows, pc_step_result* result) {
  return guarded([&] {
    const int S = plan->S;
    need(S >= 1 && vocab >= 1, "bad sampling check shape");
    pc::useDevice(device);
    pc::Stream s;
    int32_t stride = 0;
    for (int q = 0; q < S; q++) stride = std::max(stride, plan->top_logprobs[q]);
    std::vector<int32_t> seqRow(static_cast<size_t>(S));
    for (int q = 0; q < S; q++) seqRow[static_cast<size_t>(q)] = plan->sample[q] || plan->top_logprobs[q] >= 0 ? q : -1;
    pc::DeviceBuffer dl = toDevice(logits, static_cast<size_t>(S * vocab), s);
    pc::DeviceBuffer dRow = toDevice(seqRow.data(), seqRow.size(), s), dSample = toDevice(plan->sample, S, s),
                     dTemp = toDevice(plan->temperature, S, s), dTopK = toDevice(plan->top_k, S, s),
                     dTopP = toDevice(plan->top_p, S, s), dRep = toDevice(plan->repetition_penalty, S, s),
                     dPres = toDevice(plan->presence_penalty, S, s), dFreq = toDevice(plan->frequency_penalty, S, s),
                     dPenOff = toDevice(plan->penalty_token_offsets, S + 1, s),
                     dPen = toDevice(plan->penalty_tokens, static_cast<size_t>(plan->n_penalty_tokens), s),
                     dUni = toDevice(plan->uniform, S, s), dMaskRow = toDevice(plan->allowed_mask_rows, S, s),
                     dTopLp = toDevice(plan->top_logprobs, S, s);
    pc::DeviceBuffer dMasks;
    if (mask_rows > 0) dMasks = toDevice(masks, static_cast<size_t>(mask_rows * ((vocab + 31) / 32)), s);
    const int blocks = std::min(S, pc::kPenaltyBlocks);
    pc::DeviceBuffer counts(static_cast<size_t>(blocks * vocab) * 4);
    pc::fillBytes(counts.get(), 0, counts.bytes(), s);
    pc::DeviceBuffer tok(static_cast<size_t>(S) * 4), lp(static_cast<size_t>(S) * 4), err(static_cast<size_t>(S) * 4),
        ids(static_cast<size_t>(S) * std::max(stride, 1) * 4), vals(static_cast<size_t>(S) * std::max(stride, 1) * 4);
    pc::SamplingParams sp;
    sp.logits = dl.get<float>();
    sp.V = vocab;
    sp.S = S;
    sp.seqRow = dRow.get<int32_t>();
    sp.sample = dSample.get<uint8_t>();
    sp.temperature = dTemp.get<float>();
    sp.topK = dTopK.get<int32_t>();
    sp.topP = dTopP.get<float>();
    sp.repetitionPenalty = dRep.get<float>();
    sp.presencePenalty = dPres.get<float>();
    sp.frequencyPenalty = dFreq.get<float>();
    sp.penaltyOffsets = dPenOff.get<int32_t>();
    sp.penaltyTokens = dPen.get<int32_t>();
    sp.penaltyCounts = counts.get<int32_t>();
    sp.masks = mask_rows > 0 ? dMasks.get<uint32_t>() : nullptr;
    sp.maskRow = dMaskRow.get<int32_t>();
    sp.uniform = dUni.get<double>();
    sp.topLogprobs = dTopLp.get<int32_t>();
    sp.topStride = stride;
    sp.outToken = tok.get<int32_t>();
    sp.outLogprob = lp.get<float>();
    sp.outError = err.get<int32_t>();
    sp.outTopIds = ids.get<int32_t>();
    sp.outTopValues = vals.get<float>();
    pc::sample(sp, s);
    pc::copyToHost(result->tokens, tok.get(), static_cast<size_t>(S) * 4, s);
    pc::copyToHost(result->logprobs, lp.get(), static_cast<size_t>(S) * 4, s);
    pc::copyToHost(result->errors, err.get(), static_cast<size_t>(S) * 4, s);
    if (stride > 0) {
      pc::copyToHost(result->top_ids, ids.get(), static_cast<size_t>(S * stride) * 4, s);
      pc::copyToHost(result->top_values, vals.get(), static_cast<size_t>(S * stride) * 4, s);
    }
    if (result->logits) pc::copyToHost(result->logits, dl.get(), static_cast<size_t>(S * vocab) * 4, s);
    result->top_stride = stride;
    s.synchronize();
  });
}

}  // extern "C"
