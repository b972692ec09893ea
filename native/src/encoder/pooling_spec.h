// How a model turns its last hidden states into one vector per input, as its files say:
// sentence-transformers' modules.json, 1_Pooling/config.json and sentence_bert_config.json
// (read as sentence-transformers reads them), or a GGUF file's `<arch>.pooling_type` (as
// llama.cpp writes it). Encoders and decoder embedders (Qwen3-Embedding) both have one.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace prism {

// sentence-transformers' Pooling modes, in the order it concatenates them when a config turns
// several on.
enum class PoolingMode : uint8_t { Cls, Max, Mean, MeanSqrtLen, WeightedMean, LastToken };
const char* poolingModeName(PoolingMode m);

struct PoolingSpec {
  std::vector<PoolingMode> modes;  // empty: the files name no pooling
  // llama.cpp's RANK pooling (GGUF) / a classifier head: one score per input, no vector.
  bool rank = false;
  bool normalize = false;    // a Normalize module follows the pooling
  int64_t maxSeqLength = 0;  // sentence_bert_config.json max_seq_length; 0 = not stated
  bool doLowerCase = false;  // sentence_bert_config.json do_lower_case: lower-case inputs first
  // Where it came from: "sentence-transformers", "gguf" or "" (nothing stated).
  std::string source;
};

// A directory's sentence-transformers configuration (no modules.json: an empty spec). Throws
// FormatError naming the file and key for what it cannot honour (a Dense module, a Pooling
// without the prompt, an unknown module).
PoolingSpec readSentenceTransformersPooling(const std::string& dir);

// llama.cpp's pooling type number (0 none, 1 mean, 2 cls, 3 last, 4 rank) as a spec;
// FormatError for other values.
PoolingSpec ggufPooling(int64_t type, const std::string& file);

// Pooling spec of any model path: a directory's sentence-transformers files or a GGUF's
// `<arch>.pooling_type`. Throws FormatError.
PoolingSpec readPoolingSpec(const std::string& path);

}  // namespace prism
