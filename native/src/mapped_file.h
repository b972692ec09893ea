// A read-only memory map of a whole file. Model weights are used in place from the map
// (zero copy), so the map lives as long as the model that points into it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace prism {

class MappedFile {
 public:
  explicit MappedFile(const std::string& path);  // throws FormatError
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Unmaps the pages read so far from this process (they stay in the page cache). Called once
  // the model is built: the repacked weights are copies, so the file pages the repack read
  // would otherwise stay resident beside them (about the weights' size again). Safe for
  // anything still used in place (embeddings, unrepacked types): a later read faults the
  // page back in from the file, as the first read did.
  void releaseResidentPages() const;

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace prism
