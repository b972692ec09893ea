// Errors raised while reading model files. They carry the file, the tensor (when the
// problem is about one) and the reason separately so the addon can hand them to JS as
// fields of a typed error (native/errors.ts: ModelFormatError).
#pragma once
#include <stdexcept>
#include <string>

namespace prism {

class FormatError : public std::runtime_error {
 public:
  FormatError(std::string file, std::string tensor, std::string reason)
      : std::runtime_error(compose(file, tensor, reason)),
        file_(std::move(file)),
        tensor_(std::move(tensor)),
        reason_(std::move(reason)) {}
  const std::string& file() const { return file_; }
  const std::string& tensor() const { return tensor_; }
  const std::string& reason() const { return reason_; }

 private:
  static std::string compose(const std::string& file, const std::string& tensor, const std::string& reason) {
    std::string m = file + ": ";
    if (!tensor.empty()) m += "tensor '" + tensor + "': ";
    return m + reason;
  }
  std::string file_, tensor_, reason_;
};

}  // namespace prism
