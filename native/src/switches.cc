// The switch table (switches.h) and the only reads of the environment in the native core.
// No dependency beyond the standard library and libdl: the kernel-bench build links it alone
// (bench/kernels/Makefile).
#include "switches.h"

#include <dlfcn.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace prism {

namespace {

const std::vector<SwitchSpec> kSpecs = {
    {Switch::Isa, "PRISM_ISA", "avx512|avx2|reference", "the best family the CPU has", SwitchRead::OncePerProcess,
     "Forces a lower kernel family (only a lower one: asking for more than the CPU has keeps the best). The "
     "reference family is the tests' oracle, not a fast path. A value outside the list is ignored with a warning."},
    {Switch::Amx, "PRISM_AMX", "0|1", "1 (on where the CPU and OS offer AMX-INT8)", SwitchRead::OncePerProcess,
     "0 keeps steps of 16+ tokens of the int8 group layouts off the AMX-INT8 tiles (the AVX-512 VNNI kernels run "
     "them), and the exact-integer int16 layouts' steps of 13+ tokens off their AMX kernels. Only the avx512 family "
     "ever uses the tiles."},
    {Switch::Activations, "PRISM_ACTIVATIONS", "int8|int16|auto", "auto (int16 below hidden 1024, int8 above)",
     SwitchRead::EachUse,
     "The activation rounding of every quantized matmul of a model, at its load. A value outside the list fails the "
     "load, naming the variable."},
    {Switch::DecodeTuning, "PRISM_DECODE_TUNING",
     "a decode tuning setting (auto, measure, host, off or e.g. prefetch=t1:2,rows=8,idle=off)", "host",
     SwitchRead::EachUse,
     "How a context's one-token decode prefetches and tiles when its options name none, at its creation. An invalid "
     "setting is ignored with a warning (host)."},
    {Switch::CacheDir, "PRISM_CACHE_DIR", "a directory", "$XDG_CACHE_HOME/prism, else $HOME/.cache/prism",
     SwitchRead::EachUse, "Where measured decode tunings are kept (decode-tuning.json), at each lookup."},
    {Switch::CudaLibrary, "PRISM_CUDA_LIBRARY", "a path", "libprism_cuda.so beside the addon", SwitchRead::EachUse,
     "The CUDA backend's library, at each CUDA call that loads it (the tests point it at the CPU emulation build)."},
    {Switch::CudaGraphs, "PRISM_CUDA_GRAPHS", "0|1", "1", SwitchRead::ByCudaLibrary,
     "0 runs CUDA decode steps without replaying captured CUDA graphs. Read by libprism_cuda.so when it creates a "
     "context."},
};

std::string environment(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

constexpr size_t kCount = static_cast<size_t>(Switch::CudaGraphs) + 1;

// The OncePerProcess switches' texts, all read together the first time any is asked for.
const std::array<std::string, kCount>& processTexts() {
  static const std::array<std::string, kCount> texts = [] {
    std::array<std::string, kCount> t;
    for (const SwitchSpec& s : kSpecs)
      if (s.read == SwitchRead::OncePerProcess) t[static_cast<size_t>(s.id)] = environment(s.name);
    return t;
  }();
  return texts;
}

// A choice spec's values, split at '|'.
std::vector<std::string> choices(const SwitchSpec& s) {
  std::vector<std::string> out;
  std::string v = s.values;
  for (size_t at = 0; at <= v.size();) {
    const size_t bar = v.find('|', at);
    out.push_back(v.substr(at, bar == std::string::npos ? std::string::npos : bar - at));
    if (bar == std::string::npos) break;
    at = bar + 1;
  }
  return out;
}

}  // namespace

const std::vector<SwitchSpec>& switchSpecs() { return kSpecs; }

const SwitchSpec& switchSpec(Switch s) {
  const SwitchSpec& spec = kSpecs.at(static_cast<size_t>(s));
  if (spec.id != s) throw std::logic_error("switches.cc: kSpecs is not in Switch order");
  return spec;
}

std::string switchText(Switch s) {
  const SwitchSpec& spec = switchSpec(s);
  return spec.read == SwitchRead::OncePerProcess ? processTexts()[static_cast<size_t>(s)] : environment(spec.name);
}

std::string switchRefusal(Switch s) {
  const SwitchSpec& spec = switchSpec(s);
  const std::string text = switchText(s);
  if (text.empty() || std::string(spec.values).find('|') == std::string::npos) return "";
  const std::vector<std::string> values = choices(spec);
  for (const std::string& v : values)
    if (v == text) return "";
  std::string list = values.size() == 2 ? values[0] + " or " + values[1] : "one of ";
  if (values.size() != 2)
    for (size_t i = 0; i < values.size(); i++) list += (i ? ", " : "") + values[i];
  return std::string(spec.name) + " must be " + list + "; got '" + text + "'";
}

int switchChoice(Switch s, int fallback, std::string* error) {
  const std::string text = switchText(s);
  if (text.empty()) return fallback;
  const std::vector<std::string> values = choices(switchSpec(s));
  for (size_t i = 0; i < values.size(); i++)
    if (values[i] == text) return static_cast<int>(i);
  *error = switchRefusal(s);
  return fallback;
}

bool switchOn(Switch s, bool byDefault) {
  const std::string text = switchText(s);
  if (text.empty()) return byDefault;
  if (text == "0") return false;
  if (text == "1") return true;
  static std::array<std::atomic<bool>, kCount> warned{};
  if (!warned[static_cast<size_t>(s)].exchange(true))
    std::fprintf(stderr, "prism: %s, using the default (%s)\n", switchRefusal(s).c_str(),
                 byDefault ? "on where supported" : "off");
  return byDefault;
}

std::string cacheDirectory() {
  const std::string dir = switchText(Switch::CacheDir);
  if (!dir.empty()) return dir;
  const std::string xdg = environment("XDG_CACHE_HOME");
  if (!xdg.empty()) return xdg + "/prism";
  const std::string home = environment("HOME");
  return home.empty() ? "" : home + "/.cache/prism";
}

std::string cudaLibraryPath() {
  const std::string path = switchText(Switch::CudaLibrary);
  if (!path.empty()) return path;
  // This addon's own directory (build/Release/): dladdr of a function in it.
  Dl_info info{};
  std::string dir = ".";
  if (dladdr(reinterpret_cast<void*>(&cudaLibraryPath), &info) && info.dli_fname) {
    dir = info.dli_fname;
    dir = dir.substr(0, dir.find_last_of('/'));
  }
  return dir + "/libprism_cuda.so";
}

}  // namespace prism
