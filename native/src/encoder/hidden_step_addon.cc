// hiddenStep(ctx, plan): a decoder step whose result is each sequence's last-token hidden state
// after the final norm ([S × hidden]) instead of sampled tokens: the pooling of decoder
// embedders (Qwen3-Embedding's last-token pooling). The plan is an ordinary StepPlan, read and
// checked by plan_reader.cc; it must sample nothing, ask for no logits and verify no drafts.
#include <napi.h>

#include <cstring>

#include "context.h"
#include "handles.h"
#include "plan_reader.h"

namespace prism {
namespace {

class HiddenStepWorker : public Napi::AsyncWorker {
 public:
  HiddenStepWorker(Napi::Env env, std::shared_ptr<Context> ctx)
      : Napi::AsyncWorker(env, "prism.hiddenStep"), ctx_(std::move(ctx)), deferred_(env) {}
  Napi::Promise promise() { return deferred_.Promise(); }
  void Execute() override {
    try {
      ctx_->step(ctx_->plan, ctx_->result);
    } catch (const std::exception& e) {
      SetError(std::string("step failed: ") + e.what());
    }
  }
  void OnOK() override {
    const int64_t S = ctx_->plan.S, D = ctx_->model()->cfg.hidden;
    Napi::Float32Array out = Napi::Float32Array::New(Env(), static_cast<size_t>(S * D));
    std::memcpy(out.Data(), ctx_->result.hidden, static_cast<size_t>(S * D) * sizeof(float));
    ctx_->busy = false;
    deferred_.Resolve(out);
  }
  void OnError(const Napi::Error& e) override {
    ctx_->busy = false;
    deferred_.Reject(e.Value());
  }

 private:
  std::shared_ptr<Context> ctx_;
  Napi::Promise::Deferred deferred_;
};

Napi::Value HiddenStep(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<Context> ctx = contextArg(env, info[0], "ctx");
  if (info.Length() < 2 || !info[1].IsObject()) throw Napi::TypeError::New(env, "plan must be an object");
  if (ctx->busy) throw Napi::Error::New(env, "hiddenStep: another step is already running on this context");
  readStepPlan(env, info[1].As<Napi::Object>(), *ctx, ctx->plan);
  StepPlanData& p = ctx->plan;
  for (int32_t s = 0; s < p.S; s++)
    if (p.sample[s] || p.topLogprobs[s] >= 0) throw Napi::RangeError::New(env, "hiddenStep: plan.sample and plan.topLogprobs must ask for nothing");
  if (p.returnLogits != ReturnLogits::None || p.draftTotal > 0 || p.lateMaskRows > 0 || p.exitLayer != ctx->model()->cfg.layers)
    throw Napi::RangeError::New(env, "hiddenStep: a plan without logits, drafts, late masks or an early exit");
  p.returnHidden = true;
  ctx->busy = true;
  auto* w = new HiddenStepWorker(env, ctx);
  Napi::Promise promise = w->promise();
  w->Queue();
  return promise;
}

}  // namespace

void registerHiddenStepExports(Napi::Env env, Napi::Object exports) {
  exports.Set("hiddenStep", Napi::Function::New(env, HiddenStep));
}

}  // namespace prism
