#include "decode_tuning/cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "json.h"
#include "switches.h"

namespace prism {

namespace {

constexpr size_t kMaxEntries = 64;
constexpr size_t kMaxFileBytes = 1 << 20;  // a cache file larger than this is not ours

bool makeDirs(const std::string& dir) {
  for (size_t at = 1; at <= dir.size(); ++at) {
    if (at != dir.size() && dir[at] != '/') continue;
    const std::string part = dir.substr(0, at);
    if (::mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  return true;
}

std::string quote(const std::string& s) {
  std::string o = "\"";
  for (const char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      o += '\\';
      o += ch;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      o += buf;
    } else {
      o += ch;
    }
  }
  return o + "\"";
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", std::isfinite(v) ? v : 0.0);
  return buf;
}

std::string str(const JsonValue& o, const char* key) {
  const JsonValue* v = o.get(key);
  return v != nullptr && v->isString() ? v->str : std::string();
}

double num(const JsonValue& o, const char* key) {
  const JsonValue* v = o.get(key);
  return v != nullptr && v->isNumber() ? v->num : 0.0;
}

std::vector<TuningCacheEntry> readAll(const std::string& path) {
  std::vector<TuningCacheEntry> out;
  std::ifstream f(path, std::ios::binary);
  if (!f) return out;
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (text.size() > kMaxFileBytes) return out;
  try {
    const JsonValue root = parseJson(text);
    const JsonValue* entries = root.isObject() ? root.get("entries") : nullptr;
    if (entries == nullptr || !entries->isArray()) return out;
    for (const JsonValue& e : entries->arr) {
      if (!e.isObject()) continue;
      TuningCacheEntry t;
      t.cpu = str(e, "cpu");
      t.isa = str(e, "isa");
      t.threads = static_cast<int>(num(e, "threads"));
      t.shape = str(e, "shape");
      t.tuning = str(e, "tuning");
      t.ratioToDefault = num(e, "ratioToDefault");
      t.gbps = num(e, "gbps");
      t.ms = num(e, "ms");
      t.at = str(e, "at");
      t.host = str(e, "host");
      if (!t.cpu.empty() && !t.shape.empty() && !t.tuning.empty()) out.push_back(std::move(t));
    }
  } catch (const std::exception&) {
    out.clear();  // malformed: an empty cache
  }
  return out;
}

bool sameKey(const TuningCacheEntry& a, const TuningCacheEntry& b) {
  return a.cpu == b.cpu && a.isa == b.isa && a.threads == b.threads && a.shape == b.shape;
}

}  // namespace

std::string tuningCachePath() {
  const std::string dir = cacheDirectory();  // switches.h: PRISM_CACHE_DIR, else the user's cache
  return dir.empty() ? "" : dir + "/decode-tuning.json";
}

bool findTuning(const std::string& path, const TuningCacheEntry& key, TuningCacheEntry* out) {
  if (path.empty()) return false;
  for (TuningCacheEntry& e : readAll(path))
    if (sameKey(e, key)) {
      *out = std::move(e);
      return true;
    }
  return false;
}

bool storeTuning(const std::string& path, const TuningCacheEntry& entry) {
  if (path.empty()) return false;
  std::vector<TuningCacheEntry> all = readAll(path);
  std::vector<TuningCacheEntry> kept;
  for (TuningCacheEntry& e : all)
    if (!sameKey(e, entry)) kept.push_back(std::move(e));
  kept.push_back(entry);
  if (kept.size() > kMaxEntries) kept.erase(kept.begin(), kept.end() - kMaxEntries);
  std::ostringstream o;
  o << "{\n  \"version\": 1,\n  \"entries\": [";
  for (size_t i = 0; i < kept.size(); ++i) {
    const TuningCacheEntry& e = kept[i];
    o << (i ? ",\n    {" : "\n    {") << "\"cpu\": " << quote(e.cpu) << ", \"isa\": " << quote(e.isa)
      << ", \"threads\": " << e.threads << ", \"shape\": " << quote(e.shape) << ", \"tuning\": " << quote(e.tuning)
      << ", \"ratioToDefault\": " << number(e.ratioToDefault) << ", \"gbps\": " << number(e.gbps)
      << ", \"ms\": " << number(e.ms) << ", \"at\": " << quote(e.at) << ", \"host\": " << quote(e.host) << "}";
  }
  o << "\n  ]\n}\n";
  const size_t slash = path.rfind('/');
  if (slash != std::string::npos && !makeDirs(path.substr(0, slash))) return false;
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return false;
    f << o.str();
    if (!f.good()) {
      std::remove(tmp.c_str());
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace prism
