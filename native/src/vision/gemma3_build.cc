// Gemma 3's image side -> VisionModel's weights, every shape checked against m.cfg
// (weight_builder.h): the SigLIP tower as Idefics3's (vision_build.cc), then
// Gemma3MultiModalProjector's mm_soft_emb_norm and mm_input_projection_weight. Both readers
// (gemma3_hf.cc, gemma3_gguf.cc) name the tower's tensors as SigLIP's HF names without their
// prefix and the projector's as projector.soft_emb_norm.weight (the norm's multiplier, 1 + w,
// already: the GGUF stores it so, the folder reader adds the 1) and
// projector.input_projection.weight.
#include <cstring>

#include "vision/vision_model.h"
#include "weight_builder.h"

namespace prism {

void buildGemma3Weights(VisionModel& m, TensorSet& set) {
  const VisionConfig& c = m.cfg;
  const int64_t D = c.hidden, H = c.textHidden;
  WeightBuilder b(set, "gemma3 vision", WeightPreparation::Cpu, ActivationPrecision::Int16,
                  {m.weightBytes, m.maxLinearCols, m.ownedBytes});
  buildSiglipTower(m, b, set);
  m.softEmbNorm = b.vec("projector.soft_emb_norm.weight", D);
  // HF applies the projection as x @ W with W [D × H] (numpy shape; llama.cpp stores the same
  // and transposes it in its graph): as a linear layer's [H rows × D] it is W transposed.
  const std::string name = "projector.input_projection.weight";
  const std::vector<float> w = b.table(name, H, D);  // [D rows × H]
  std::vector<uint8_t>& bytes = m.ownedBytes.emplace_back(static_cast<size_t>(D * H) * sizeof(float));
  float* t = reinterpret_cast<float*>(bytes.data());
  for (int64_t i = 0; i < D; i++)
    for (int64_t o = 0; o < H; o++) t[o * D + i] = w[i * H + o];
  const std::string transposed = name + ".transposed";
  set.tensors[transposed] = SourceTensor{0, {D, H}, bytes.data(), bytes.size()};
  if (auto it = set.originalNames.find(name); it != set.originalNames.end()) set.originalNames[transposed] = it->second;
  m.projection = b.linear({{transposed, H}}, D);
}

}  // namespace prism
