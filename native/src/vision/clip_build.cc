// The CLIP encoder's and LLaVA's MLP projector's tensors -> VisionModel's weights, every shape
// checked against m.cfg (weight_builder.h). Both LLaVA readers (clip_hf.cc, clip_gguf.cc) name
// the tensors as transformers' CLIPVisionTransformer names them without their model prefix
// (embeddings.*, pre_layrnorm.*, encoder.layers.N.*), the projector's as projector.linear_{1,2}.*,
// LLaVA-1.6's image_newline as image_newline.
// Only the layers up to vision_feature_layer are built: the features never see the others
// (nor post_layernorm, which CLIP applies to the pooled class token only).
#include "vision/vision_model.h"
#include "weight_builder.h"

namespace prism {

void buildClipWeights(VisionModel& m, TensorSet& set) {
  const VisionConfig& c = m.cfg;
  const int64_t D = c.hidden, p = c.patch, H = c.textHidden;
  WeightBuilder b(set, "llava vision", WeightPreparation::Cpu, ActivationPrecision::Int16,
                  {m.weightBytes, m.maxLinearCols, m.ownedBytes});
  // CLIP's patch embedding is a Conv2d [D, 3, p, p] with stride p and no bias: a matmul over
  // unfolded patches.
  const std::string patchName = "embeddings.patch_embedding.weight";
  b.get(patchName, {p, p, 3, D});
  set.tensors[patchName].dims = {3 * p * p, D};
  m.patchEmbed = b.linear({{patchName, D}}, 3 * p * p);
  if (b.has("embeddings.patch_embedding.bias")) m.patchBias = b.vec("embeddings.patch_embedding.bias", D);
  else m.patchBias.assign(static_cast<size_t>(D), 0.0f);
  m.classEmbed = b.vec("embeddings.class_embedding", D);
  m.positions = b.table("embeddings.position_embedding.weight", D, c.sequencePerTile());
  m.preNormW = b.vec("pre_layrnorm.weight", D);
  m.preNormB = b.vec("pre_layrnorm.bias", D);
  buildVisionLayers(m, b, c.featureLayers);
  m.projection = b.linear({{"projector.linear_1.weight", H}}, D);
  m.projection2 = b.linear({{"projector.linear_2.weight", H}}, H);
  if (c.projectorBias) {
    m.projectionBias = b.vec("projector.linear_1.bias", H);
    m.projection2Bias = b.vec("projector.linear_2.bias", H);
  } else {
    m.projectionBias.assign(static_cast<size_t>(H), 0.0f);
    m.projection2Bias.assign(static_cast<size_t>(H), 0.0f);
  }
  // LLaVA-1.6's row after each row of the packed tile grid (llava_next_pack.cc).
  if (c.family == VisionFamily::LlavaNext) m.imageNewline = b.vec("image_newline", H);
}

}  // namespace prism
