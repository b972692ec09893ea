// switchReport (switches.h): each switch's value in effect, as its reader resolves it. Apart
// from switches.cc because it asks those readers (the kernel family, the decode-tuning
// grammar), which the kernel-bench build of switches.cc does not link.
#include "decode_tuning/choose.h"
#include "kernels/kernels.h"
#include "switches.h"

namespace prism {

std::vector<SwitchValue> switchReport() {
  std::vector<SwitchValue> out;
  for (const SwitchSpec& spec : switchSpecs()) {
    SwitchValue v;
    v.name = spec.name;
    const std::string text = switchText(spec.id);
    v.fromEnvironment = !text.empty();
    v.warning = switchRefusal(spec.id);
    std::string unused;
    // Each value is moved in: GCC 12 warns falsely (-Wrestrict, its bug 105329) on assigning a
    // C string to a std::string here.
    const auto set = [&v](std::string value) { v.value = std::move(value); };
    switch (spec.id) {
      case Switch::Isa:
        set(selectedIsa());  // the family in use: the CPU's best unless a lower one was forced
        break;
      case Switch::Amx:
        set(switchOn(spec.id, true) ? "1" : "0");
        break;
      case Switch::Activations: {
        static const char* const kValues[] = {"int8", "int16", "auto"};
        set(kValues[switchChoice(spec.id, 2, &unused)]);
        break;
      }
      case Switch::DecodeTuning: {
        std::string why;
        if (text.empty()) {
          set(spec.byDefault);
        } else if (validDecodeTuningRequest(text, &why)) {
          set(text);
        } else {
          set(spec.byDefault);
          v.warning = std::string(spec.name) + " " + why;
        }
        break;
      }
      case Switch::CacheDir:
        set(cacheDirectory());
        break;
      case Switch::CudaLibrary:
        set(cudaLibraryPath());
        break;
      case Switch::CudaGraphs:
        set(text == "0" ? "0" : "1");  // libprism_cuda.so turns them off for "0" only
        break;
    }
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace prism
