// The addon glue every group of exports shares, whichever device it serves (addon.cc and the
// LoRA and KV exports for the CPU, cuda/host/device_addon.cc for CUDA): argument checks,
// opaque handles, the workers that run a load, a step or other work off the JS thread, and
// the one mapping of C++ errors onto JS errors (native/errors.ts types them on the other side).
#pragma once
#include <napi.h>

#include <exception>
#include <functional>
#include <memory>
#include <string>

#include "context.h"
#include "format_error.h"
#include "plan_reader.h"

namespace prism::glue {

// --- errors ------------------------------------------------------------------------------

// A JS Error for a model-file problem, with the structured fields errors.ts maps onto
// ModelFormatError.
Napi::Error formatError(Napi::Env env, const FormatError& e);

// Runs `f`, turning C++ exceptions into JS exceptions (Napi::Error passes through).
template <typename F>
auto guarded(Napi::Env env, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Napi::Error&) {
    throw;
  } catch (const FormatError& e) {
    throw formatError(env, e);
  } catch (const std::bad_alloc&) {
    throw Napi::Error::New(env, "out of memory");
  } catch (const std::exception& e) {
    throw Napi::Error::New(env, e.what());
  }
}

// How the exception of work done off the JS thread becomes its promise's rejection: the
// message is `prefix` + what(); a FormatError keeps its fields (formatErrors), an
// std::invalid_argument becomes a RangeError (invalidIsRange), and std::bad_alloc says
// `outOfMemory` (when not empty).
struct ErrorPolicy {
  std::string prefix;
  std::string outOfMemory;
  bool formatErrors = false;
  bool invalidIsRange = false;
};

// What the failure left for the JS thread (taken on the worker thread: no JS values there).
struct Failure {
  std::shared_ptr<FormatError> format;
  bool range = false;
  std::string message;
};
Failure failureOf(std::exception_ptr e, const ErrorPolicy& policy);
Napi::Value failureToJs(Napi::Env env, const Failure& f);

// --- arguments ---------------------------------------------------------------------------

std::string stringArg(const Napi::CallbackInfo& info, size_t i, const char* name);
// A whole number in [min, max]: TypeError when not a number, RangeError naming the bounds.
int64_t intArg(Napi::Env env, Napi::Value v, const std::string& name, int64_t min, int64_t max);
// Argument i when it is a function, an empty one when it is absent, undefined or null.
Napi::Function optionalFunctionArg(const Napi::CallbackInfo& info, size_t i, const char* name);
Napi::Object objectArg(const Napi::CallbackInfo& info, size_t i, const char* name);

// The options every device's context takes (ContextOptions in native.ts): kvBlocks,
// blockSize, maxBatchTokens, maxSeqs; each device reads its own further fields from `o`.
ContextOptionsData contextOptionsArg(Napi::Env env, Napi::Object o);
// kvBlocks × blockSize must stay below 2^31 positions (plans index positions as int32).
void checkPositions(Napi::Env env, const ContextOptionsData& opts);

// --- handles -----------------------------------------------------------------------------

// An opaque JS handle: a Napi::External holding a shared_ptr, type-tagged so that a handle of
// another kind (or a foreign External) is refused; dispose resets the pointer (the box lives
// until GC), and a disposed handle is refused by name.
struct HandleKind {
  napi_type_tag tag;
  const char* kind;  // with its article, for "<what> must be <kind> handle": "a model", "an adapter"
  const char* noun;  // for "<what>: the <noun> has been disposed"
};

template <class T>
struct HandleBox {
  std::shared_ptr<T> ptr;
};

template <class T>
Napi::Value wrapHandle(Napi::Env env, std::shared_ptr<T> ptr, const HandleKind& kind) {
  auto ext = Napi::External<HandleBox<T>>::New(env, new HandleBox<T>{std::move(ptr)},
                                               [](Napi::Env, HandleBox<T>* b) { delete b; });
  napi_type_tag_object(env, ext, &kind.tag);
  return ext;
}

// The box behind a live handle of `kind`: TypeError for anything else, Error when it was
// disposed.
template <class T>
HandleBox<T>* handleBox(Napi::Env env, Napi::Value v, const HandleKind& kind, const char* what) {
  bool ok = false;
  if (v.IsExternal()) napi_check_object_type_tag(env, v, &kind.tag, &ok);
  if (!ok) throw Napi::TypeError::New(env, std::string(what) + " must be " + kind.kind + " handle");
  HandleBox<T>* b = v.As<Napi::External<HandleBox<T>>>().Data();
  if (!b->ptr) throw Napi::Error::New(env, std::string(what) + ": the " + kind.noun + " has been disposed");
  return b;
}

// What a live handle holds.
template <class T>
const std::shared_ptr<T>& handleArg(Napi::Env env, Napi::Value v, const HandleKind& kind, const char* what) {
  return handleBox<T>(env, v, kind, what)->ptr;
}

// --- work off the JS thread --------------------------------------------------------------

// A promise settled by work on a libuv worker thread: `run` runs there (its exception rejects
// the promise as `errors` says), `done` turns its result into the JS value, and `settle` runs
// on the JS thread either way, before the promise settles (a context's busy flag). `keep`
// stays referenced until then (JS memory the work reads).
template <class Result>
class Work : public Napi::AsyncWorker {
 public:
  using Run = std::function<Result()>;
  using Done = std::function<Napi::Value(Napi::Env, Result&)>;

  static Napi::Promise queue(Napi::Env env, const char* name, ErrorPolicy errors, Run run, Done done,
                             std::function<void()> settle = {}, Napi::Object keep = Napi::Object()) {
    auto* w = new Work(env, name, std::move(errors), std::move(run), std::move(done), std::move(settle), keep);
    Napi::Promise p = w->deferred_.Promise();
    w->Queue();
    return p;
  }

  void Execute() override {
    try {
      result_ = run_();
    } catch (...) {
      failure_ = failureOf(std::current_exception(), errors_);
      SetError(failure_.message);
    }
  }
  void OnOK() override {
    Napi::Value v = done_(Env(), result_);
    if (settle_) settle_();
    deferred_.Resolve(v);
  }
  void OnError(const Napi::Error&) override {
    if (settle_) settle_();
    deferred_.Reject(failureToJs(Env(), failure_));
  }

 private:
  Work(Napi::Env env, const char* name, ErrorPolicy errors, Run run, Done done, std::function<void()> settle,
       Napi::Object keep)
      : Napi::AsyncWorker(env, name), errors_(std::move(errors)), run_(std::move(run)), done_(std::move(done)),
        settle_(std::move(settle)), deferred_(env) {
    if (!keep.IsEmpty()) keep_ = Napi::Persistent(keep);
  }

  ErrorPolicy errors_;
  Run run_;
  Done done_;
  std::function<void()> settle_;
  Napi::Promise::Deferred deferred_;
  Napi::ObjectReference keep_;
  Result result_{};
  Failure failure_;
};

// A model load on a worker thread with progress (fractions 0..1 to `onProgress`, on the JS
// thread; a throwing callback is ignored): `load` returns the model, `wrap` its handle.
// Errors: a FormatError with its fields, else "<path>: <why>".
template <class T>
class LoadWork : public Napi::AsyncProgressQueueWorker<double> {
 public:
  using Load = std::function<std::shared_ptr<T>(const std::function<void(double)>&)>;
  using Wrap = std::function<Napi::Value(Napi::Env, std::shared_ptr<T>)>;

  static Napi::Promise queue(Napi::Env env, const char* name, const std::string& path, Napi::Function onProgress,
                             Load load, Wrap wrap) {
    auto* w = new LoadWork(env, name, path, onProgress, std::move(load), std::move(wrap));
    Napi::Promise p = w->deferred_.Promise();
    w->Queue();
    return p;
  }

  void Execute(const ExecutionProgress& progress) override {
    try {
      model_ = load_([&](double f) { progress.Send(&f, 1); });
    } catch (...) {
      failure_ = failureOf(std::current_exception(), errors_);
      SetError(failure_.message);
    }
  }
  void OnProgress(const double* data, size_t count) override {
    if (progress_.IsEmpty() || count == 0) return;
    try {
      progress_.Call({Napi::Number::New(Env(), data[count - 1])});
    } catch (const Napi::Error&) {
      // A throwing progress callback must not break the load; the error is dropped.
    }
  }
  void OnOK() override { deferred_.Resolve(wrap_(Env(), std::move(model_))); }
  void OnError(const Napi::Error&) override { deferred_.Reject(failureToJs(Env(), failure_)); }

 private:
  LoadWork(Napi::Env env, const char* name, const std::string& path, Napi::Function onProgress, Load load, Wrap wrap)
      : Napi::AsyncProgressQueueWorker<double>(env, name),
        errors_{path + ": ", path + ": out of memory while loading", true, false},
        load_(std::move(load)), wrap_(std::move(wrap)), deferred_(env) {
    if (!onProgress.IsEmpty()) progress_ = Napi::Persistent(onProgress);
  }

  ErrorPolicy errors_;
  Load load_;
  Wrap wrap_;
  Napi::Promise::Deferred deferred_;
  Napi::FunctionReference progress_;
  std::shared_ptr<T> model_;
  Failure failure_;
};

// --- the step protocol of a context ------------------------------------------------------
//
// What a context type Ctx offers (context.h for the CPU, cuda/host/device_model.h): plan,
// result, busy, lateMasks, failSteps, step(plan, result) and vocab(). `read` checks a plan
// against it (plan_reader.h).

// step(ctx, plan): reads the plan on the JS thread (a rejected plan leaves the context free),
// then runs it on a worker; at most one step per context.
template <class Ctx, class Read>
Napi::Value queueStep(Napi::Env env, const char* name, std::shared_ptr<Ctx> ctx, Napi::Value plan, Read&& read) {
  if (!plan.IsObject()) throw Napi::TypeError::New(env, "plan must be an object");
  if (ctx->busy) throw Napi::Error::New(env, "step: another step is already running on this context");
  read(env, plan.As<Napi::Object>(), *ctx, ctx->plan);
  if (ctx->plan.lateMaskRows > 0) ctx->lateMasks.expect(ctx->plan.lateMaskRows, (ctx->vocab() + 31) / 32);
  ctx->busy = true;
  return Work<bool>::queue(
      env, name, ErrorPolicy{"step failed: ", "", false, false},
      [ctx] {
        try {
          ctx->step(ctx->plan, ctx->result);
        } catch (...) {
          ctx->lateMasks.abandon();  // masks that arrive now are for nobody
          throw;
        }
        return true;
      },
      [ctx](Napi::Env e, bool&) -> Napi::Value {
        return stepResultToJs(e, ctx->result, ctx->plan.S, ctx->plan.lateMaskRows > 0, ctx->vocab(),
                              !ctx->plan.draftCounts.empty());
      },
      [ctx] { ctx->busy = false; });
}

// supplyMasks(ctx, masks | null): hands the running step the masks its plan announced with
// lateMaskRows (null: they will not come, the step fails); false when no step waits for them.
template <class Ctx>
Napi::Value supplyMasks(const Napi::CallbackInfo& info, Ctx& ctx) {
  Napi::Env env = info.Env();
  if (info.Length() < 2) throw Napi::TypeError::New(env, "masks must be an Int32Array or null");
  if (info[1].IsNull()) return Napi::Boolean::New(env, ctx.lateMasks.supply(nullptr, 0));
  if (!info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_int32_array)
    throw Napi::TypeError::New(env, "masks must be an Int32Array or null");
  Napi::Int32Array a = info[1].As<Napi::Int32Array>();
  try {
    return Napi::Boolean::New(env, ctx.lateMasks.supply(a.Data(), a.ElementLength()));
  } catch (const std::length_error& e) {
    throw Napi::RangeError::New(env, e.what());
  }
}

// Test hook (native.ts faultTestHooks): the next `count` steps throw from native code
// mid-forward. Nothing a client sends reaches it.
template <class Ctx>
void failNextSteps(const Napi::CallbackInfo& info, Ctx& ctx) {
  ctx.failSteps.store(static_cast<int>(intArg(info.Env(), info[1], "count", 0, 1 << 20)));
}

// dispose: a running step keeps its own reference and the memory goes when it finishes; a
// step waiting for late masks would wait for ever (nobody can supply them now): it fails.
template <class Ctx>
void disposeContext(HandleBox<Ctx>* box) {
  box->ptr->lateMasks.abandon();
  box->ptr.reset();
}

}  // namespace prism::glue
