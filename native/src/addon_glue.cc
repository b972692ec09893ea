#include "addon_glue.h"

#include <cmath>
#include <new>
#include <stdexcept>

namespace prism::glue {

Napi::Error formatError(Napi::Env env, const FormatError& e) {
  Napi::Error err = Napi::Error::New(env, e.what());
  err.Set("code", "PRISM_MODEL_FORMAT");
  err.Set("file", e.file());
  if (!e.tensor().empty()) err.Set("tensor", e.tensor());
  err.Set("reason", e.reason());
  return err;
}

Failure failureOf(std::exception_ptr e, const ErrorPolicy& policy) {
  Failure f;
  try {
    std::rethrow_exception(e);
  } catch (const FormatError& fe) {
    if (policy.formatErrors) f.format = std::make_shared<FormatError>(fe);
    f.message = policy.formatErrors ? fe.what() : policy.prefix + fe.what();
  } catch (const std::invalid_argument& ie) {
    f.range = policy.invalidIsRange;
    f.message = policy.prefix + ie.what();
  } catch (const std::bad_alloc& be) {
    f.message = policy.outOfMemory.empty() ? policy.prefix + be.what() : policy.outOfMemory;
  } catch (const std::exception& se) {
    f.message = policy.prefix + se.what();
  } catch (...) {
    f.message = policy.prefix + "unknown error";
  }
  return f;
}

Napi::Value failureToJs(Napi::Env env, const Failure& f) {
  if (f.format) return formatError(env, *f.format).Value();
  if (f.range) return Napi::RangeError::New(env, f.message).Value();
  return Napi::Error::New(env, f.message).Value();
}

std::string stringArg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  if (info.Length() <= i || !info[i].IsString())
    throw Napi::TypeError::New(info.Env(), std::string(name) + " must be a string");
  return info[i].As<Napi::String>().Utf8Value();
}

int64_t intArg(Napi::Env env, Napi::Value v, const std::string& name, int64_t min, int64_t max) {
  if (!v.IsNumber()) throw Napi::TypeError::New(env, name + " must be a number");
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!(d == std::floor(d)) || d < static_cast<double>(min) || d > static_cast<double>(max))
    throw Napi::RangeError::New(env, name + " must be an integer in [" + std::to_string(min) + ", " +
                                         std::to_string(max) + "]");
  return static_cast<int64_t>(d);
}

Napi::Function optionalFunctionArg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  if (info.Length() <= i || info[i].IsUndefined() || info[i].IsNull()) return Napi::Function();
  if (!info[i].IsFunction()) throw Napi::TypeError::New(info.Env(), std::string(name) + " must be a function");
  return info[i].As<Napi::Function>();
}

Napi::Object objectArg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  if (info.Length() <= i || !info[i].IsObject())
    throw Napi::TypeError::New(info.Env(), std::string(name) + " must be an object");
  return info[i].As<Napi::Object>();
}

ContextOptionsData contextOptionsArg(Napi::Env env, Napi::Object o) {
  ContextOptionsData opts;
  opts.kvBlocks = intArg(env, o.Get("kvBlocks"), "options.kvBlocks", 1, 1 << 24);
  opts.blockSize = intArg(env, o.Get("blockSize"), "options.blockSize", 1, 1 << 16);
  opts.maxBatchTokens = intArg(env, o.Get("maxBatchTokens"), "options.maxBatchTokens", 1, 1 << 20);
  opts.maxSeqs = intArg(env, o.Get("maxSeqs"), "options.maxSeqs", 1, 1 << 16);
  return opts;
}

void checkPositions(Napi::Env env, const ContextOptionsData& opts) {
  if (static_cast<double>(opts.blockSize) * static_cast<double>(opts.kvBlocks) > 2147483647.0)
    throw Napi::RangeError::New(env, "options.kvBlocks × blockSize must stay below 2^31 positions");
}

}  // namespace prism::glue
