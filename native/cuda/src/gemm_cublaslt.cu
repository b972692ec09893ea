// Gemm on cuBLASLt. Row-major y = x·Wᵀ is, in cuBLAS's column-major terms, yᵀ (m × n) =
// op_T(W as k × m) · (xᵀ as k × n): the "TN" bf16 GEMM cuBLASLt is fastest at. The algorithm
// of each shape is asked for once and cached; the workspace is allocated once, so a GEMM can
// be captured in a CUDA graph.
#include <cublasLt.h>

#include <map>
#include <string>
#include <tuple>

#include "gemm.h"

namespace pc {
namespace {

void check(cublasStatus_t st, const char* what) {
  if (st != CUBLAS_STATUS_SUCCESS) throw Error(std::string(what) + " failed: cuBLAS status " + std::to_string(static_cast<int>(st)));
}

constexpr size_t kWorkspaceBytes = size_t{32} << 20;

}  // namespace

struct Gemm::Impl {
  cublasLtHandle_t handle = nullptr;
  DeviceBuffer workspace;
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
  };
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>, Plan> plans;

  Plan& plan(int64_t m, int64_t k, int64_t n, int64_t ldy) {
    auto key = std::make_tuple(m, k, n, ldy);
    auto it = plans.find(key);
    if (it != plans.end()) return it->second;
    Plan p;
    check(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
    const cublasOperation_t opT = CUBLAS_OP_T, opN = CUBLAS_OP_N;
    check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &opT, sizeof(opT)), "TRANSA");
    check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &opN, sizeof(opN)), "TRANSB");
    check(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_16BF, static_cast<uint64_t>(k), static_cast<uint64_t>(m), k), "layout A");
    check(cublasLtMatrixLayoutCreate(&p.b, CUDA_R_16BF, static_cast<uint64_t>(k), static_cast<uint64_t>(n), k), "layout B");
    check(cublasLtMatrixLayoutCreate(&p.c, CUDA_R_32F, static_cast<uint64_t>(m), static_cast<uint64_t>(n), ldy), "layout C");
    cublasLtMatmulPreference_t pref = nullptr;
    check(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
    const size_t ws = kWorkspaceBytes;
    check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)), "workspace");
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(handle, p.desc, p.a, p.b, p.c, p.c, pref, 1, &result, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    check(st, "cublasLtMatmulAlgoGetHeuristic");
    if (found == 0) throw Error("cuBLASLt has no algorithm for a bf16 GEMM of " + std::to_string(m) + "x" + std::to_string(k));
    p.algo = result.algo;
    return plans.emplace(key, p).first->second;
  }
};

Gemm::Gemm(const Stream&) : impl_(std::make_unique<Impl>()) {
  check(cublasLtCreate(&impl_->handle), "cublasLtCreate");
  impl_->workspace.allocate(kWorkspaceBytes);
}

Gemm::~Gemm() {
  for (auto& [key, p] : impl_->plans) {
    cublasLtMatrixLayoutDestroy(p.a);
    cublasLtMatrixLayoutDestroy(p.b);
    cublasLtMatrixLayoutDestroy(p.c);
    cublasLtMatmulDescDestroy(p.desc);
  }
  if (impl_->handle) cublasLtDestroy(impl_->handle);
}

void Gemm::bf16(const uint16_t* w, int64_t m, int64_t k, const uint16_t* x, int64_t n, float* y, int64_t ldy,
                bool accumulate, const Stream& s) {
  Impl::Plan& p = impl_->plan(m, k, n, ldy);
  const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  check(cublasLtMatmul(impl_->handle, p.desc, &alpha, w, p.a, x, p.b, &beta, y, p.c, y, p.c, &p.algo,
                       impl_->workspace.get(), kWorkspaceBytes, static_cast<cudaStream_t>(s.handle())),
        "cublasLtMatmul");
}

}  // namespace pc
