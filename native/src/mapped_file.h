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

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace prism
