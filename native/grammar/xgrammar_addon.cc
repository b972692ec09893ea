// prism_xgrammar.node: xgrammar's C++ core (built from its pinned source release, see
// scripts/build-native.mjs) behind the few calls the grammar worker needs. It is a module of
// its own, not part of prism_native, because only the grammar worker thread loads it and
// because the third-party code is compiled with its own flags (C++17, -O2, its warnings off).
//
// Everything xgrammar reports goes through C++ exceptions: its failed checks
// (XGRAMMAR_CHECK / LOG(FATAL)) throw xgrammar::LogFatalError in this build (logging is not
// customized, so nothing calls abort()), and the structural-tag parser returns a variant that
// we turn into an exception. Every export catches them and throws a JS Error instead, so
// nothing a client sends (a schema, a regex, an EBNF text, a tag) can end the process.
#include <napi.h>
#include <xgrammar/xgrammar.h>

#include <cstring>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace {

using xgrammar::CompiledGrammar;
using xgrammar::GrammarCompiler;
using xgrammar::GrammarMatcher;
using xgrammar::NullObj;
using xgrammar::TokenizerInfo;

// Handle kinds: an External of the wrong kind (or a foreign one) is rejected, and a disposed
// handle (its object reset to null) is detected; the box itself lives until GC.
const napi_type_tag kInfoTag = {0x7072697378670001ull, 0x746f6b656e697a65ull};
const napi_type_tag kCompilerTag = {0x7072697378670002ull, 0x636f6d70696c6572ull};
const napi_type_tag kGrammarTag = {0x7072697378670003ull, 0x6772616d6d617273ull};
const napi_type_tag kMatcherTag = {0x7072697378670004ull, 0x6d61746368657273ull};

template <typename T>
struct Box {
  T value;
};

template <typename T>
Napi::Value wrap(Napi::Env env, T value, const napi_type_tag& tag) {
  auto ext = Napi::External<Box<T>>::New(env, new Box<T>{std::move(value)}, [](Napi::Env, Box<T>* b) { delete b; });
  napi_type_tag_object(env, ext, &tag);
  return ext;
}

template <typename T>
Box<T>* unwrapBox(const Napi::Value& v, const napi_type_tag& tag, const char* kind) {
  bool ok = false;
  if (v.IsExternal()) napi_check_object_type_tag(v.Env(), v, &tag, &ok);
  if (!ok) throw Napi::TypeError::New(v.Env(), std::string("expected a ") + kind + " handle");
  return v.As<Napi::External<Box<T>>>().Data();
}

template <typename T>
T& unwrap(const Napi::Value& v, const napi_type_tag& tag, const char* kind) {
  Box<T>* b = unwrapBox<T>(v, tag, kind);
  if (b->value.IsNull()) throw Napi::Error::New(v.Env(), std::string("the ") + kind + " has been disposed");
  return b->value;
}

// xgrammar's fatal-error text starts with "[HH:MM:SS] /path/of/the/build/file.cc:123: ";
// the client needs the reason, not where the library's build put its sources.
std::string clean(const char* what) {
  std::string s(what);
  if (!s.empty() && s[0] == '[') {
    const size_t cc = s.find(".cc:");
    const size_t h = s.find(".h:");
    const size_t at = cc != std::string::npos ? cc : h;
    if (at != std::string::npos) {
      const size_t colon = s.find(": ", at);
      if (colon != std::string::npos) s = s.substr(colon + 2);
    }
  }
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s.empty() ? "the grammar library rejected it" : s;
}

// Runs `f`, turning every C++ exception into a JS Error (Napi::Error passes through).
template <typename F>
Napi::Value guarded(Napi::Env env, F&& f) {
  try {
    return f();
  } catch (const Napi::Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Napi::Error::New(env, clean(e.what()));
  } catch (...) {
    throw Napi::Error::New(env, "the grammar library failed");
  }
}

std::string stringArg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  if (info.Length() <= i || !info[i].IsString())
    throw Napi::TypeError::New(info.Env(), std::string(name) + " must be a string");
  return info[i].As<Napi::String>().Utf8Value();
}

int32_t intArg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  if (info.Length() <= i || !info[i].IsNumber())
    throw Napi::TypeError::New(info.Env(), std::string(name) + " must be a number");
  const double d = info[i].As<Napi::Number>().DoubleValue();
  if (!(d >= -2147483648.0 && d <= 2147483647.0) || d != static_cast<double>(static_cast<int32_t>(d)))
    throw Napi::RangeError::New(info.Env(), std::string(name) + " must be a 32-bit integer");
  return static_cast<int32_t>(d);
}

bool boolArg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  if (info.Length() <= i || !info[i].IsBoolean())
    throw Napi::TypeError::New(info.Env(), std::string(name) + " must be a boolean");
  return info[i].As<Napi::Boolean>().Value();
}

// createTokenizerInfo(vocab: string[], vocabType, prependSpace, vocabSize, stopTokenIds: number[])
Napi::Value CreateTokenizerInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsArray()) throw Napi::TypeError::New(env, "vocab must be an array of strings");
  Napi::Array arr = info[0].As<Napi::Array>();
  std::vector<std::string> vocab(arr.Length());
  for (uint32_t i = 0; i < arr.Length(); i++) {
    Napi::Value t = arr.Get(i);
    if (!t.IsString()) throw Napi::TypeError::New(env, "vocab must be an array of strings");
    vocab[i] = t.As<Napi::String>().Utf8Value();
  }
  const std::string kind = stringArg(info, 1, "vocabType");
  xgrammar::VocabType type;
  if (kind == "raw")
    type = xgrammar::VocabType::RAW;
  else if (kind == "byte_fallback")
    type = xgrammar::VocabType::BYTE_FALLBACK;
  else if (kind == "byte_level")
    type = xgrammar::VocabType::BYTE_LEVEL;
  else
    throw Napi::TypeError::New(env, "vocabType must be raw, byte_fallback or byte_level");
  const bool prependSpace = boolArg(info, 2, "prependSpace");
  const int32_t vocabSize = intArg(info, 3, "vocabSize");
  if (info.Length() < 5 || !info[4].IsArray()) throw Napi::TypeError::New(env, "stopTokenIds must be an array");
  Napi::Array stopArr = info[4].As<Napi::Array>();
  std::vector<int32_t> stops(stopArr.Length());
  for (uint32_t i = 0; i < stopArr.Length(); i++) {
    Napi::Value v = stopArr.Get(i);
    if (!v.IsNumber()) throw Napi::TypeError::New(env, "stopTokenIds must be numbers");
    stops[i] = v.As<Napi::Number>().Int32Value();
    if (stops[i] < 0 || stops[i] >= vocabSize) throw Napi::RangeError::New(env, "stopTokenIds must be below vocabSize");
  }
  return guarded(env, [&] {
    return wrap(env, TokenizerInfo(vocab, type, vocabSize, stops, prependSpace), kInfoTag);
  });
}

// createCompiler(info, maxThreads): xgrammar's own cache is off (the worker keeps an LRU).
Napi::Value CreateCompiler(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  TokenizerInfo& ti = unwrap<TokenizerInfo>(info[0], kInfoTag, "tokenizer info");
  const int32_t threads = intArg(info, 1, "maxThreads");
  if (threads < 1 || threads > 64) throw Napi::RangeError::New(env, "maxThreads must be 1..64");
  return guarded(env, [&] { return wrap(env, GrammarCompiler(ti, threads, false), kCompilerTag); });
}

// compileJsonSchema(compiler, schema, strict): one line, ", " and ": " between items (no
// free whitespace: keys and punctuation are forced, jump-forward appends them).
Napi::Value CompileJsonSchema(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  GrammarCompiler& c = unwrap<GrammarCompiler>(info[0], kCompilerTag, "compiler");
  const std::string schema = stringArg(info, 1, "schema");
  const bool strict = boolArg(info, 2, "strict");
  return guarded(env, [&] {
    return wrap(env,
                c.CompileJSONSchema(schema, /*any_whitespace=*/false, /*indent=*/std::nullopt,
                                    std::make_pair(std::string(", "), std::string(": ")), strict),
                kGrammarTag);
  });
}

Napi::Value CompileEbnf(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  GrammarCompiler& c = unwrap<GrammarCompiler>(info[0], kCompilerTag, "compiler");
  const std::string ebnf = stringArg(info, 1, "ebnf");
  return guarded(env, [&] { return wrap(env, c.CompileGrammar(ebnf, "root"), kGrammarTag); });
}

// compileStructuralTag(compiler, json): parsed first, so a bad tag is reported with
// xgrammar's reason (the compile path would report it less clearly).
Napi::Value CompileStructuralTag(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  GrammarCompiler& c = unwrap<GrammarCompiler>(info[0], kCompilerTag, "compiler");
  const std::string tag = stringArg(info, 1, "structural tag");
  return guarded(env, [&] {
    auto parsed = xgrammar::Grammar::FromStructuralTag(tag, std::nullopt);
    if (auto* err = std::get_if<xgrammar::StructuralTagError>(&parsed))
      std::visit([](const auto& e) { throw std::runtime_error(e.what()); }, *err);
    return wrap(env, c.CompileStructuralTag(tag), kGrammarTag);
  });
}

// createMatcher(grammar, terminateWithoutStopToken)
Napi::Value CreateMatcher(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CompiledGrammar& g = unwrap<CompiledGrammar>(info[0], kGrammarTag, "compiled grammar");
  const bool withoutStop = boolArg(info, 1, "terminateWithoutStopToken");
  return guarded(env, [&] { return wrap(env, GrammarMatcher(g, std::nullopt, withoutStop, 0), kMatcherTag); });
}

Napi::Value AcceptToken(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  GrammarMatcher& m = unwrap<GrammarMatcher>(info[0], kMatcherTag, "matcher");
  const int32_t token = intArg(info, 1, "token");
  return guarded(env, [&] { return Napi::Boolean::New(env, m.AcceptToken(token)); });
}

Napi::Value AcceptString(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  GrammarMatcher& m = unwrap<GrammarMatcher>(info[0], kMatcherTag, "matcher");
  const std::string text = stringArg(info, 1, "text");
  return guarded(env, [&] { return Napi::Boolean::New(env, m.AcceptString(text)); });
}

// fillNextTokenBitmask(matcher, mask: Int32Array): the mask's length must be the bitmask
// size of the tokenizer's vocabulary (ceil(vocabSize / 32); xgrammar checks it); bit t set =
// token t allowed. The caller owns the buffer, so each mask can be transferred to the engine.
Napi::Value FillNextTokenBitmask(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  GrammarMatcher& m = unwrap<GrammarMatcher>(info[0], kMatcherTag, "matcher");
  if (info.Length() < 2 || !info[1].IsTypedArray() ||
      info[1].As<Napi::TypedArray>().TypedArrayType() != napi_int32_array)
    throw Napi::TypeError::New(env, "mask must be an Int32Array");
  Napi::Int32Array mask = info[1].As<Napi::Int32Array>();
  return guarded(env, [&] {
    int64_t shape[1] = {static_cast<int64_t>(mask.ElementLength())};
    int64_t strides[1] = {1};
    DLTensor t;
    t.data = mask.Data();
    t.device = DLDevice{kDLCPU, 0};
    t.ndim = 1;
    t.dtype = xgrammar::GetBitmaskDLType();
    t.shape = shape;
    t.strides = strides;
    t.byte_offset = 0;
    return Napi::Boolean::New(env, m.FillNextTokenBitmask(&t, 0));
  });
}

Napi::Value IsTerminated(const Napi::CallbackInfo& info) {
  GrammarMatcher& m = unwrap<GrammarMatcher>(info[0], kMatcherTag, "matcher");
  return guarded(info.Env(), [&] { return Napi::Boolean::New(info.Env(), m.IsTerminated()); });
}

Napi::Value FindJumpForwardString(const Napi::CallbackInfo& info) {
  GrammarMatcher& m = unwrap<GrammarMatcher>(info[0], kMatcherTag, "matcher");
  return guarded(info.Env(), [&] { return Napi::String::New(info.Env(), m.FindJumpForwardString()); });
}

// rollback(matcher, numTokens): undoes the last `numTokens` accepted tokens (0 <= numTokens <=
// the tokens accepted so far; xgrammar 0.2.8 keeps the whole history, its max_rollback_tokens
// is unused). Speculative decoding rolls a matcher back over the draft tokens it refuses.
Napi::Value Rollback(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  GrammarMatcher& m = unwrap<GrammarMatcher>(info[0], kMatcherTag, "matcher");
  const int32_t n = intArg(info, 1, "numTokens");
  if (n < 0) throw Napi::RangeError::New(env, "numTokens must be >= 0");
  return guarded(env, [&] {
    m.Rollback(n);  // a count past the history fails xgrammar's check: a JS Error
    return env.Undefined();
  });
}

// dispose(handle): frees the object now (matchers made from a grammar keep their own
// reference to it); disposing twice, or a handle of no kind, is a no-op / TypeError.
Napi::Value Dispose(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsExternal()) throw Napi::TypeError::New(env, "expected a grammar handle");
  Napi::Value v = info[0];
  bool is = false;
  if (napi_check_object_type_tag(env, v, &kMatcherTag, &is) == napi_ok && is)
    unwrapBox<GrammarMatcher>(v, kMatcherTag, "matcher")->value = GrammarMatcher(NullObj{});
  else if (napi_check_object_type_tag(env, v, &kGrammarTag, &is) == napi_ok && is)
    unwrapBox<CompiledGrammar>(v, kGrammarTag, "compiled grammar")->value = CompiledGrammar(NullObj{});
  else if (napi_check_object_type_tag(env, v, &kCompilerTag, &is) == napi_ok && is)
    unwrapBox<GrammarCompiler>(v, kCompilerTag, "compiler")->value = GrammarCompiler(NullObj{});
  else if (napi_check_object_type_tag(env, v, &kInfoTag, &is) == napi_ok && is)
    unwrapBox<TokenizerInfo>(v, kInfoTag, "tokenizer info")->value = TokenizerInfo(NullObj{});
  else
    throw Napi::TypeError::New(env, "expected a grammar handle");
  return env.Undefined();
}

Napi::Value BitmaskSize(const Napi::CallbackInfo& info) {
  const int32_t vocab = intArg(info, 0, "vocabSize");
  if (vocab < 0) throw Napi::RangeError::New(info.Env(), "vocabSize must be >= 0");
  return Napi::Number::New(info.Env(), xgrammar::GetBitmaskSize(vocab));
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("createTokenizerInfo", Napi::Function::New(env, CreateTokenizerInfo));
  exports.Set("createCompiler", Napi::Function::New(env, CreateCompiler));
  exports.Set("compileJsonSchema", Napi::Function::New(env, CompileJsonSchema));
  exports.Set("compileEbnf", Napi::Function::New(env, CompileEbnf));
  exports.Set("compileStructuralTag", Napi::Function::New(env, CompileStructuralTag));
  exports.Set("createMatcher", Napi::Function::New(env, CreateMatcher));
  exports.Set("acceptToken", Napi::Function::New(env, AcceptToken));
  exports.Set("acceptString", Napi::Function::New(env, AcceptString));
  exports.Set("fillNextTokenBitmask", Napi::Function::New(env, FillNextTokenBitmask));
  exports.Set("isTerminated", Napi::Function::New(env, IsTerminated));
  exports.Set("findJumpForwardString", Napi::Function::New(env, FindJumpForwardString));
  exports.Set("rollback", Napi::Function::New(env, Rollback));
  exports.Set("dispose", Napi::Function::New(env, Dispose));
  exports.Set("bitmaskSize", Napi::Function::New(env, BitmaskSize));
  return exports;
}

}  // namespace

NODE_API_MODULE(prism_xgrammar, Init)
