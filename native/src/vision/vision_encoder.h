// The vision encoder's forward pass over whole tiles, bound to one model with its own thread
// pool: SigLIP as Idefics3 runs it, then the connector (vision_encoder.cc), or CLIP as LLaVA
// runs it, then the MLP projector (clip_encoder.cc), or SigLIP as Gemma 3 runs it, then its
// pooling projector (gemma3_encoder.cc). Tiles are always the encoder's full
// image_size square (both processors resize and split or crop to exactly that), so every
// patch is real: the patch attention mask is all ones and the position ids (Idefics3's
// bucketed ones too) are the row indices 0..P-1.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "thread_pool.h"
#include "vision/vision_model.h"

namespace prism {

class VisionEncoder {
 public:
  VisionEncoder(std::shared_ptr<VisionModel> model, int threads);

  // tiles: [n × 3 × T × T] normalised pixels (T = image_size), n >= 1; out: [n × tokensPerTile ×
  // textHidden], the rows the text model takes at the image tokens' positions. One pass at a
  // time (callers on several threads queue on a mutex).
  void encode(const float* tiles, int64_t n, float* out);

  const std::shared_ptr<VisionModel>& model() const { return model_; }
  int threads() const { return pool_.size(); }

 private:
  void linear(const LinearGroup& g, const float* x, int64_t n, float* y, int64_t ldy);
  // tiles -> [n·P × 3·p·p]: each patch unfolded channel, row, column (Conv2d's weight layout).
  void unfoldPatches(const float* tiles, int64_t n, float* patches);
  // x: [n·S × D] rows, S per tile; runs m.layers in place (h: scratch, [n·S × D]).
  void runLayers(float* x, float* h, int64_t n, int64_t S);
  // SigLIP up to its post LayerNorm: h = [n·P × D] (x: scratch of the same size).
  void siglipTower(const float* tiles, int64_t n, std::vector<float>& x, std::vector<float>& h);
  void encodeIdefics3(const float* tiles, int64_t n, float* out);
  void encodeGemma3(const float* tiles, int64_t n, float* out);
  void encodeClip(const float* tiles, int64_t n, float* out);

  std::shared_ptr<VisionModel> model_;
  std::mutex mu_;
  ThreadPool pool_;
  KernelScratch scratch_;
  std::vector<std::vector<float>> scores_;  // per thread: packedAttention's keys and scores for a tile
};

}  // namespace prism
