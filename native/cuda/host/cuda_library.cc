#include "cuda_library.h"

#include <dlfcn.h>

#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

namespace prism::cuda {

void CudaLibrary::check(int status, const char* what) const {
  if (status != 0) throw std::runtime_error(std::string(what) + ": " + pc_last_error());
}

const CudaLibrary& loadCudaLibrary(const std::string& path) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<CudaLibrary>> loaded;
  std::lock_guard<std::mutex> lock(mu);
  auto it = loaded.find(path);
  if (it != loaded.end()) return *it->second;
  // RTLD_LOCAL: the library's symbols stay its own; it is never unloaded (its CUDA state
  // lives as long as the process).
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* why = dlerror();
    throw std::runtime_error("cannot load the CUDA backend " + path + ": " + (why ? why : "unknown reason"));
  }
  auto lib = std::make_unique<CudaLibrary>();
  lib->path = path;
#define PC_FN(name)                                                                                  \
  lib->name = reinterpret_cast<decltype(&::name)>(dlsym(h, #name));                                  \
  if (!lib->name) throw std::runtime_error("the CUDA backend " + path + " lacks " #name " (a build of another version?)");
#include "cuda_functions.inc"
#undef PC_FN
  if (lib->pc_abi_version() != PC_ABI_VERSION)
    throw std::runtime_error("the CUDA backend " + path + " has interface version " + std::to_string(lib->pc_abi_version()) +
                             ", this build expects " + std::to_string(PC_ABI_VERSION) + ": rebuild it (npm install)");
  return *loaded.emplace(path, std::move(lib)).first->second;
}

}  // namespace prism::cuda
