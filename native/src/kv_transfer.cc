// KV transfer between engines (engine/kv-transfer/): copies of one block's KV, a range of
// layers at a time, out of and into a context's paged cache, and the layout a transfer must
// agree on. Every index is checked here before a byte is touched.
//
// Wire layout of one layer of one block: K of every KV head ([kvHead][slot][headDim] F16),
// then V the same way — the cache's own layout, so a copy is two memcpy per layer. A block's
// slots past a sequence's last token hold whatever they held; the receiver never reads them
// (attention stops at the sequence length).
#include <napi.h>

#include <cmath>
#include <cstring>
#include <string>

#include "handles.h"

namespace prism {

int64_t Context::kvBlockLayerBytes() const {
  return 2 * cfg_.kvHeads * opts_.blockSize * cfg_.headDim * static_cast<int64_t>(sizeof(uint16_t));
}

void Context::readKvBlock(int64_t block, int64_t l0, int64_t n, uint8_t* out) const {
  const size_t half = static_cast<size_t>(kvBlockLayerBytes() / 2);
  for (int64_t l = l0; l < l0 + n; l++) {
    std::memcpy(out, kAt(l, block), half);
    std::memcpy(out + half, vAt(l, block), half);
    out += 2 * half;
  }
}

void Context::writeKvBlock(int64_t block, int64_t l0, int64_t n, const uint8_t* in) {
  const size_t half = static_cast<size_t>(kvBlockLayerBytes() / 2);
  for (int64_t l = l0; l < l0 + n; l++) {
    std::memcpy(kAt(l, block, 0), in, half);
    std::memcpy(vAt(l, block, 0), in + half, half);
    in += 2 * half;
  }
}

namespace {

// Argument i as a whole number in [lo, hi] (a missing one is not a number).
int64_t intAt(const Napi::CallbackInfo& info, size_t i, const char* name, int64_t lo, int64_t hi) {
  return glue::intArg(info.Env(), info[i], name, lo, hi);
}

// kvLayout(ctx) → { layers, kvHeads, headDim, blockSize, kvBlocks, dtype, blockLayerBytes }
Napi::Value KvTransferLayout(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const Context& ctx = *contextArg(env, info[0], "ctx");
  const ModelConfig& c = ctx.model()->cfg;
  Napi::Object o = Napi::Object::New(env);
  o.Set("layers", static_cast<double>(c.layers));
  o.Set("kvHeads", static_cast<double>(c.kvHeads));
  o.Set("headDim", static_cast<double>(c.headDim));
  o.Set("blockSize", static_cast<double>(ctx.options().blockSize));
  o.Set("kvBlocks", static_cast<double>(ctx.options().kvBlocks));
  o.Set("dtype", "f16");
  o.Set("blockLayerBytes", static_cast<double>(ctx.kvBlockLayerBytes()));
  return o;
}

// readKvBlock(ctx, block, layerStart, layerCount) → Uint8Array of layerCount × blockLayerBytes.
Napi::Value ReadKvBlock(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const Context& ctx = *contextArg(env, info[0], "ctx");
  const int64_t layers = ctx.model()->cfg.layers;
  const int64_t block = intAt(info, 1, "block", 0, ctx.options().kvBlocks - 1);
  const int64_t l0 = intAt(info, 2, "layerStart", 0, layers - 1);
  const int64_t n = intAt(info, 3, "layerCount", 1, layers - l0);
  auto out = Napi::Uint8Array::New(env, static_cast<size_t>(n * ctx.kvBlockLayerBytes()));
  ctx.readKvBlock(block, l0, n, out.Data());
  return out;
}

// writeKvBlock(ctx, block, layerStart, data): data holds whole layers (a multiple of
// blockLayerBytes) that end at or before the model's last layer.
Napi::Value WriteKvBlock(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Context& ctx = *contextArg(env, info[0], "ctx");
  const int64_t layers = ctx.model()->cfg.layers;
  const int64_t block = intAt(info, 1, "block", 0, ctx.options().kvBlocks - 1);
  const int64_t l0 = intAt(info, 2, "layerStart", 0, layers - 1);
  if (info.Length() < 4 || !info[3].IsTypedArray() || info[3].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
    throw Napi::TypeError::New(env, "data must be a Uint8Array");
  auto data = info[3].As<Napi::Uint8Array>();
  const int64_t per = ctx.kvBlockLayerBytes();
  const int64_t bytes = static_cast<int64_t>(data.ByteLength());
  if (bytes == 0 || bytes % per != 0)
    throw Napi::RangeError::New(env, "data: " + std::to_string(bytes) + " bytes is not a positive whole number of layers of " +
                                         std::to_string(per) + " bytes");
  const int64_t n = bytes / per;
  if (n > layers - l0)
    throw Napi::RangeError::New(env, "data: " + std::to_string(n) + " layers from layer " + std::to_string(l0) +
                                         " run past the model's " + std::to_string(layers) + " layers");
  ctx.writeKvBlock(block, l0, n, data.Data());
  return env.Undefined();
}

}  // namespace

void registerKvTransferExports(Napi::Env env, Napi::Object exports) {
  exports.Set("kvLayout", Napi::Function::New(env, KvTransferLayout));
  exports.Set("readKvBlock", Napi::Function::New(env, ReadKvBlock));
  exports.Set("writeKvBlock", Napi::Function::New(env, WriteKvBlock));
}

}  // namespace prism
