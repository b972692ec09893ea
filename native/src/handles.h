// Opaque JS handles (Napi::External) for models and contexts. Each kind carries a N-API
// type tag so a handle of the wrong kind (or a foreign External) is rejected, and a
// disposed handle is detected (its pointer is reset, the box lives until GC).
#pragma once
#include <napi.h>

#include <memory>

#include "context.h"
#include "model.h"

namespace prism {

struct ModelBox {
  std::shared_ptr<Model> model;
};
struct ContextBox {
  std::shared_ptr<Context> ctx;
};

Napi::Value wrapModel(Napi::Env env, std::shared_ptr<Model> model);
Napi::Value wrapContext(Napi::Env env, std::shared_ptr<Context> ctx);
// Throw a JS TypeError/Error (as Napi::Error) on a wrong or disposed handle.
ModelBox* modelBox(Napi::Env env, Napi::Value v, const char* what);
ContextBox* contextBox(Napi::Env env, Napi::Value v, const char* what);

// The JS ModelInfo of a model (native.ts), whichever device holds its weights.
Napi::Object modelInfoToJs(Napi::Env env, const Model& m);

}  // namespace prism
