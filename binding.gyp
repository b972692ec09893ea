{
  # The addon is built in two parts so that each instruction-set level is compiled with
  # its own flags: the baseline (AVX2 + FMA + F16C) and the AVX-512 kernels, which are
  # only ever called after a run-time CPU check (native/src/kernels/dispatch.cc).
  "target_defaults": {
    "cflags_cc!": ["-fno-exceptions", "-std=gnu++17"],
    "cflags!": ["-fno-exceptions"],
    "cflags_cc": ["-std=c++20", "-O3", "-fexceptions", "-fno-math-errno", "-Wall", "-Wextra", "-Wno-unused-parameter"],
    "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")", "native/src"],
    # C++ exceptions on, and every std::exception escaping an export becomes a JS Error
    # (a safety net: a stray exception must never terminate the process). An error that
    # cannot be thrown because the environment is going away (a worker thread terminated in
    # the middle of a native call, as the grammar worker is at engine close; a step finishing
    # at exit) is dropped: without SWALLOW node-addon-api throws again from its own handler
    # and the process aborts ("terminate called after throwing an instance of Napi::Error").
    # PRISM_Q4XV_AMX: the Layout::Q4XV AMX-INT8 kernel (native/src/kernels/amx/q4xv_amx.cc) is
    # part of the build, so the layout's AVX-512 driver may hand it batches (q4xv.h).
    "defines": ["NAPI_VERSION=8", "NODE_ADDON_API_DISABLE_DEPRECATED", "NAPI_CPP_EXCEPTIONS", "NODE_ADDON_API_CPP_EXCEPTIONS_ALL",
                "NODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS", "PRISM_Q4XV_AMX"]
  },
  "targets": [
    {
      "target_name": "prism_kernels_avx512",
      "type": "static_library",
      "sources": ["<!@(node -p \"require('fs').readdirSync('native/src/kernels').filter(f => /_avx512\\.cc$/.test(f)).map(f => 'native/src/kernels/' + f).join(' ')\")"],
      "cflags_cc": ["-mavx2", "-mfma", "-mf16c", "-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mavx512vnni", "-mavx512bf16", "-fPIC"]
    },
    # The AMX-INT8 prefill kernels (native/src/kernels/amx/*_amx.cc: the int8 group layouts'
    # driver and the exact-integer int16 layouts' kernels): AVX-512 plus the tile instructions,
    # called only after the CPUID check and the OS's permission (amx_support.cc).
    {
      "target_name": "prism_kernels_amx",
      "type": "static_library",
      "sources": ["<!@(node -p \"require('fs').readdirSync('native/src/kernels/amx').filter(f => /_amx\\.cc$/.test(f)).map(f => 'native/src/kernels/amx/' + f).join(' ')\")"],
      "cflags_cc": ["-mavx2", "-mfma", "-mf16c", "-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mavx512vnni", "-mavx512bf16", "-mamx-tile", "-mamx-int8", "-fPIC"]
    },
    {
      "target_name": "prism_native",
      "dependencies": ["prism_kernels_avx512", "prism_kernels_amx"],
      # native/cuda/host/: the CUDA backend's loader and glue (dlopen of libprism_cuda.so at
      # run time: no CUDA headers or libraries are needed to build it).
      "sources": [
        "<!@(node -p \"require('fs').readdirSync('native/src', {recursive: true}).filter(f => /\\.cc$/.test(f) && !/_(avx512|amx)\\.cc$/.test(f)).map(f => 'native/src/' + f).join(' ')\")",
        "<!@(node -p \"require('fs').readdirSync('native/cuda/host').filter(f => /\\.cc$/.test(f)).map(f => 'native/cuda/host/' + f).join(' ')\")"
      ],
      "cflags_cc": ["-mavx2", "-mfma", "-mf16c", "-mbmi2", "-pthread"],
      "ldflags": ["-pthread"],
      "libraries": ["-ldl"]
    },
    # xgrammar's C++ core, from its pinned source release that scripts/build-native.mjs unpacks
    # into native/third_party/ (git-ignored): every cpp/**/*.cc as its CMakeLists.txt builds
    # them (tvm_ffi/, the Python bindings, is not unpacked). Its own language level (C++17)
    # and -O2 (grammar code is branchy, not vectorized: -O3 only costs compile time); its
    # warnings are not ours to fix. RTTI on: it is C++ written for it.
    {
      "target_name": "xgrammar",
      "type": "static_library",
      "variables": { "xg": "native/third_party/xgrammar-0.2.8" },
      "sources": ["<!@(node -p \"require('fs').readdirSync('native/third_party/xgrammar-0.2.8/cpp', {recursive: true}).filter(f => /\\.cc$/.test(f) && !f.startsWith('tvm_ffi')).sort().map(f => 'native/third_party/xgrammar-0.2.8/cpp/' + f).join(' ')\")"],
      "include_dirs": ["<(xg)/include", "<(xg)/3rdparty/picojson", "<(xg)/3rdparty/dlpack/include"],
      "cflags_cc!": ["-std=c++20", "-O3", "-Wall", "-Wextra", "-fno-rtti"],
      "cflags_cc": ["-std=c++17", "-O2", "-fPIC", "-w", "-pthread"],
      "defines": ["XGRAMMAR_ENABLE_CPPTRACE=0"],
      "direct_dependent_settings": {
        "include_dirs": ["<(xg)/include", "<(xg)/3rdparty/dlpack/include"],
        "defines": ["XGRAMMAR_ENABLE_CPPTRACE=0"]
      }
    },
    # The grammar addon: loaded only by the grammar worker thread (native/native.ts,
    # loadGrammarAddon), so the compute addon and its flags stay as they are.
    {
      "target_name": "prism_xgrammar",
      "dependencies": ["xgrammar"],
      "sources": ["native/grammar/xgrammar_addon.cc"],
      "cflags_cc!": ["-O3", "-fno-rtti"],
      "cflags_cc": ["-O2", "-pthread"],
      "ldflags": ["-pthread"]
    }
  ]
}
