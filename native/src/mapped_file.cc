#include "mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "format_error.h"

namespace prism {

MappedFile::MappedFile(const std::string& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw FormatError(path, "", std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    throw FormatError(path, "", std::string("cannot stat: ") + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw FormatError(path, "", "not a regular file");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ == 0) {
    ::close(fd);
    throw FormatError(path, "", "file is empty");
  }
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  int e = errno;
  ::close(fd);  // the mapping keeps the file alive
  if (p == MAP_FAILED) throw FormatError(path, "", std::string("cannot mmap: ") + std::strerror(e));
  data_ = static_cast<const uint8_t*>(p);
}

void MappedFile::releaseResidentPages() const {
  // Advice only: a failure leaves the pages resident, which is what happened before.
  if (data_ && size_ > 0) ::madvise(const_cast<uint8_t*>(data_), size_, MADV_DONTNEED);
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace prism
