// Opaque JS handles of the CPU's models and contexts (addon_glue.h: type-tagged Externals, so
// a handle of the wrong kind, a foreign External or a disposed handle is refused by name).
#pragma once
#include <napi.h>

#include <memory>

#include "addon_glue.h"
#include "context.h"
#include "model.h"

namespace prism {

extern const glue::HandleKind kModelHandle;
extern const glue::HandleKind kContextHandle;

inline Napi::Value wrapModel(Napi::Env env, std::shared_ptr<Model> model) {
  return glue::wrapHandle(env, std::move(model), kModelHandle);
}
inline Napi::Value wrapContext(Napi::Env env, std::shared_ptr<Context> ctx) {
  return glue::wrapHandle(env, std::move(ctx), kContextHandle);
}
// Throw a JS TypeError/Error (as Napi::Error) on a wrong or disposed handle.
inline const std::shared_ptr<Model>& modelArg(Napi::Env env, Napi::Value v, const char* what) {
  return glue::handleArg<Model>(env, v, kModelHandle, what);
}
inline const std::shared_ptr<Context>& contextArg(Napi::Env env, Napi::Value v, const char* what) {
  return glue::handleArg<Context>(env, v, kContextHandle, what);
}

// The JS ModelInfo of a model (native.ts), whichever device holds its weights.
Napi::Object modelInfoToJs(Napi::Env env, const Model& m);

}  // namespace prism
