// The SigLIP encoder's and the connector's tensors -> VisionModel's weights, every shape
// checked against m.cfg (weight_builder.h); the tower's part is Gemma 3's too
// (gemma3_build.cc). Both readers (vision_hf.cc, vision_gguf.cc) name
// the tensors as Idefics3's HF names without their model prefix: embeddings.*,
// encoder.layers.N.*, post_layernorm.*, connector.modality_projection.proj.weight. The layers'
// part is CLIP's too (clip_build.cc).
#include "vision/vision_model.h"
#include "weight_builder.h"

namespace prism {

void buildVisionLayers(VisionModel& m, WeightBuilder& b, int64_t count) {
  const int64_t D = m.cfg.hidden, I = m.cfg.intermediate;
  m.layers.resize(count);
  for (int64_t l = 0; l < count; l++) {
    const std::string q = "encoder.layers." + std::to_string(l) + ".";
    VisionLayer& L = m.layers[l];
    L.norm1W = b.vec(q + "layer_norm1.weight", D);
    L.norm1B = b.vec(q + "layer_norm1.bias", D);
    L.qkv = b.linear({{q + "self_attn.q_proj.weight", D}, {q + "self_attn.k_proj.weight", D}, {q + "self_attn.v_proj.weight", D}}, D);
    for (const char* part : {"self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias"}) {
      const std::vector<float> v = b.vec(q + part, D);
      L.qkvBias.insert(L.qkvBias.end(), v.begin(), v.end());
    }
    L.o = b.linear({{q + "self_attn.out_proj.weight", D}}, D);
    L.oBias = b.vec(q + "self_attn.out_proj.bias", D);
    L.norm2W = b.vec(q + "layer_norm2.weight", D);
    L.norm2B = b.vec(q + "layer_norm2.bias", D);
    L.up = b.linear({{q + "mlp.fc1.weight", I}}, D);
    L.upBias = b.vec(q + "mlp.fc1.bias", I);
    L.down = b.linear({{q + "mlp.fc2.weight", D}}, I);
    L.downBias = b.vec(q + "mlp.fc2.bias", D);
  }
}

void buildSiglipTower(VisionModel& m, WeightBuilder& b, TensorSet& set) {
  const VisionConfig& c = m.cfg;
  const int64_t D = c.hidden, p = c.patch;
  // The patch embedding is a Conv2d [D, 3, p, p] with stride p: a matmul over unfolded patches.
  const std::string patchName = "embeddings.patch_embedding.weight";
  b.get(patchName, {p, p, 3, D});
  set.tensors[patchName].dims = {3 * p * p, D};
  m.patchEmbed = b.linear({{patchName, D}}, 3 * p * p);
  m.patchBias = b.vec("embeddings.patch_embedding.bias", D);
  m.positions = b.table("embeddings.position_embedding.weight", D, c.patchesPerTile());
  buildVisionLayers(m, b, c.layers);
  m.postNormW = b.vec("post_layernorm.weight", D);
  m.postNormB = b.vec("post_layernorm.bias", D);
}

void buildVisionWeights(VisionModel& m, TensorSet& set) {
  const VisionConfig& c = m.cfg;
  // Float kernels keep f32 activations whatever this says; quantized files would use int16.
  WeightBuilder b(set, "idefics3 vision", WeightPreparation::Cpu, ActivationPrecision::Int16,
                  {m.weightBytes, m.maxLinearCols, m.ownedBytes});
  buildSiglipTower(m, b, set);
  m.projection = b.linear({{"connector.modality_projection.proj.weight", c.textHidden}}, c.hidden * c.scaleFactor * c.scaleFactor);
}

}  // namespace prism
