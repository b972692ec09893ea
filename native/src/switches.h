// The native core's run-time switches: every environment variable the addon reads, declared
// once here (its name, values, default, when it is read and what it does) and read only by
// switches.cc. docs/switches.md is their table for users (native/switches.test.ts holds the
// two to the same names and defaults), and modelInfo() reports the values a model was loaded
// with (switchReport).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace prism {

enum class Switch : uint8_t {
  Isa,           // PRISM_ISA: the kernel family (kernels/dispatch.cc)
  Amx,           // PRISM_AMX: batches on the AMX-INT8 tiles (kernels/amx/amx_support.cc)
  Activations,   // PRISM_ACTIVATIONS: the activation rounding of a model (model.cc)
  DecodeTuning,  // PRISM_DECODE_TUNING: a context's decode tuning (decode_tuning/choose.cc)
  CacheDir,      // PRISM_CACHE_DIR: where the decode tuning is cached (decode_tuning/cache.cc)
  CudaLibrary,   // PRISM_CUDA_LIBRARY: the CUDA backend's library (cuda/host/cuda_library.cc)
  CudaGraphs,    // PRISM_CUDA_GRAPHS: CUDA graphs for decode steps (read by libprism_cuda.so)
};

// When a switch is read. OncePerProcess: the first time anything asks, then kept (the kernel
// family and the tiles are chosen once). EachUse: at every model load or context creation, so
// one process can load models under different settings (the numerics test runs one model
// with int8 and with int16 activations; the CUDA tests point the library at the emulation).
// ByCudaLibrary: libprism_cuda.so reads it itself when it creates a context (its C interface
// has no field for it); this file reads it only to report it.
enum class SwitchRead : uint8_t { OncePerProcess, EachUse, ByCudaLibrary };

struct SwitchSpec {
  Switch id;
  const char* name;
  // A choice's values separated by '|' ("avx512|avx2|reference"), "0|1" for on/off, or what
  // the text is ("a path", "a decode tuning setting").
  const char* values;
  const char* byDefault;  // what holds when the variable is unset or empty
  SwitchRead read;
  const char* what;
};

// Every switch, in Switch order.
const std::vector<SwitchSpec>& switchSpecs();
const SwitchSpec& switchSpec(Switch s);

// The variable's text, "" when it is unset or empty (a OncePerProcess switch: as first read).
std::string switchText(Switch s);

// Why the environment's text of a switch with listed values is none of them ("PRISM_ISA must
// be one of avx512, avx2, reference; got 'x'", "PRISM_AMX must be 0 or 1; got 'yes'"), or ""
// when it is one of them, unset, or the switch takes free text.
std::string switchRefusal(Switch s);

// A choice switch: the index of its text among the spec's values, or `fallback` when it is
// unset; for any other text, `fallback` and `*error` (switchRefusal).
int switchChoice(Switch s, int fallback, std::string* error);

// An on/off switch ("0" or "1"): its value, or `byDefault` when unset; any other text warns
// once on stderr, naming the variable, and keeps `byDefault`.
bool switchOn(Switch s, bool byDefault);

// Where the decode tuning is cached: PRISM_CACHE_DIR, else $XDG_CACHE_HOME/prism, else
// $HOME/.cache/prism ("" when none of them is set).
std::string cacheDirectory();

// The CUDA backend's library: PRISM_CUDA_LIBRARY, else libprism_cuda.so beside this addon.
std::string cudaLibraryPath();

// One switch as it stands: the value in effect, whether the environment set it (else the
// default holds) and, when the environment's text was refused, why.
struct SwitchValue {
  std::string name, value;
  bool fromEnvironment = false;
  std::string warning;
};

// Every switch's value in effect now, in Switch order (a model keeps the report of its load).
std::vector<SwitchValue> switchReport();

}  // namespace prism
