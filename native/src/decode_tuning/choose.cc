#include "decode_tuning/choose.h"

#include <cstdio>
#include <ctime>
#include <map>
#include <mutex>
#include <sstream>

#include "decode_tuning/cache.h"
#include "decode_tuning/host.h"
#include "decode_tuning/measure.h"
#include "switches.h"

namespace prism {

namespace {

void addGroup(const LinearGroup& g, TuneLayer* l) {
  for (const LinearGroup::Part& p : g.parts) {
    if (p.w.rows == 0) continue;
    l->mats.push_back(&p.w);
    l->bytes += p.w.bytes;
  }
}

// Every layer's decode matmuls in the forward pass's order; a mixture-of-experts layer
// contributes its router and one expert (a different one per layer, as decode visits them).
std::vector<TuneLayer> decodeLayers(const Model& model) {
  std::vector<TuneLayer> out;
  for (size_t i = 0; i < model.layers.size(); ++i) {
    const LayerWeights& L = model.layers[i];
    TuneLayer l;
    addGroup(L.qkv, &l);
    addGroup(L.o, &l);
    if (!L.moe.gateUp.empty()) {
      addGroup(L.moe.router, &l);
      const size_t e = i % L.moe.gateUp.size();
      addGroup(L.moe.gateUp[e], &l);
      if (e < L.moe.down.size()) addGroup(L.moe.down[e], &l);
    } else {
      addGroup(L.gateUp, &l);
      addGroup(L.down, &l);
    }
    if (!l.mats.empty()) out.push_back(std::move(l));
  }
  return out;
}

std::string signature(const LinearGroup& g) {
  std::ostringstream o;
  for (const LinearGroup::Part& p : g.parts)
    o << typeName(p.w.type) << '/' << static_cast<int>(p.w.layout) << ':' << p.w.rows << 'x' << p.w.cols << ' ';
  return o.str();
}

std::string nowIso() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

bool isKeyword(const std::string& r) { return r == "auto" || r == "measure" || r == "host" || r == "off"; }

// The constants with the tile height and prefetch hint measured faster on this kind of host.
// Intel with AVX-512: a T1 prefetch one tile ahead instead of NTA (family 6 model 207, issue
// 27: with the prefetch actually emitted (q4g.h), ab-steps on 1B Q4_0 read T1 0.762 and NTA
// 1.380 of the step time without any prefetch, 3B T1 0.785; docs/benchmarks.md). The tile
// height differs between the Intel classes measured:
// - family 6 model 207 (issue 27): 8-row tiles against the kernels' own 4 (decode_bench, 16
//   1B-shaped layers, 2 threads: Q4_0 0.919-0.943, Q4_K 0.923, Q8_0 0.969; the default
//   model's int16 tiles: 4 rows 1.041, 2 rows 1.122 of the 8-row step time).
// - family 6 model 167, and the Intel AVX-512 classes not measured (issue 44): 2-row tiles.
//   decode_bench, T1 one tile ahead, time ÷ 8 rows' (4 rows, 2 rows): 3B-shaped layers Q4_0
//   2 threads 0.891 (2 rows ÷ 4 rows 1.001), 1 thread 0.868, 0.867; 1B-shaped Q4_0 0.899,
//   0.872; 3B Q4_1 0.930, 0.901; Q4_K 0.895, 0.873; Q8_0 0.947, 0.952. In the engine
//   (ab-steps, 3B Q4_0, 150 paired steps) 0.901, 0.877; the default model's int16 tiles 0.996,
//   0.990 (its A/A control 0.992). An 8-row tile's eight streams a row apart read ~12% slower
//   here, with or without the software prefetch.
//   These classes also share each one-token matmul's row tiles by stealing (row_steal.h): an
//   even split left the owner thread waiting at the joins 5-8 ms of a 73 ms pass over the 3B
//   Q4_0 layers, the worker never. step_profile, 2 threads, 2-row tiles, steal ÷ even split,
//   paired medians of 12-16 rounds: 1B Q4_0 0.948; 3B Q4_0 0.965, Q4_1 0.970, Q8_0 0.947, Q4_K
//   0.942; 8B Q4_0 0.938, Q4_1 0.992. In the engine the gain is within the spread between
//   weight copies (ab-steps, 3B Q4_0, 250 steps at the size suite's contexts, even / steal /
//   even / steal: 1.000, 0.958, 0.980, 0.969).
// AMD with AVX-512 (family 25 model 17, Zen 4, issue 44): a T1 prefetch one tile ahead, the
// kernels' own tile height, stolen row tiles. step_profile, 2 threads, paired medians of 12
// rounds, T1 ÷ NTA (today's constant) pass time: 3B Q4_0 0.696, Q4_1 0.570, Q8_0 0.748, Q4_K
// 0.568; 1B Q4_0 0.713; 8B Q4_0 0.681; 1 thread 3B Q4_0 0.601 (NTA read 0.63 of the read loop
// there, no prefetch 1.038 of NTA's time, T0 1.374 of T1's). On top of T1, 16-24 rounds:
// steal 0.921-0.988 (3B Q4_0), 0.953 (3B Q8_0), 0.974 (3B Q4_K, 1B Q4_0), 0.964 (8B Q4_0);
// 2 rows 1.010 and 1.163, 8 rows 0.971 and 0.998, two tiles ahead 0.969 and 1.002.
// Other hosts (AMD with AVX2 only, not measured with the prefetch emitted) keep the constants.
DecodeTuning hostDefaultTuning(const HostInfo& host, const std::string& isa) {
  DecodeTuning t = kDefaultDecodeTuning;
  if (isa != "avx512") return t;
  if (host.vendor == "GenuineIntel") {
    const bool model207 = host.family == 6 && host.model == 207;
    t.rows = model207 ? 8 : 2;
    t.stealRows = !model207;
    t.hint = PrefetchHint::T1;
  } else if (host.vendor == "AuthenticAMD") {
    t.stealRows = true;
    t.hint = PrefetchHint::T1;
  }
  return t;
}

// What this process decided per cache key (an inconclusive race included, which the file
// never holds), so `auto` races a key at most once per process.
struct Decided {
  std::mutex mutex;
  std::map<std::string, DecodeTuningChoice> byKey;
};

Decided& decided() {
  static Decided d;
  return d;
}

std::string memoKey(const TuningCacheEntry& k) {
  return k.cpu + '\n' + k.isa + '\n' + std::to_string(k.threads) + '\n' + k.shape;
}

}  // namespace

std::string decodeShapeKey(const Model& model) {
  // Layer signatures, runs of equal ones written once with a count: "[sig]×16".
  std::ostringstream o;
  std::string last;
  int run = 0;
  auto flush = [&] {
    if (run > 0) o << '[' << last << "]x" << run << ' ';
  };
  for (const LayerWeights& L : model.layers) {
    std::string s = signature(L.qkv) + signature(L.o) + signature(L.gateUp) + signature(L.down);
    if (!L.moe.gateUp.empty())
      s += "moe " + std::to_string(L.moe.gateUp.size()) + ' ' + signature(L.moe.router) + signature(L.moe.gateUp[0]) +
           (L.moe.down.empty() ? std::string() : signature(L.moe.down[0]));
    if (s == last) {
      run++;
      continue;
    }
    flush();
    last = s;
    run = 1;
  }
  flush();
  o << "head " << signature(model.output);
  return o.str();
}

bool validDecodeTuningRequest(const std::string& request, std::string* error) {
  if (request.empty() || isKeyword(request)) return true;
  DecodeTuning t;
  std::string why;
  if (parseDecodeTuning(request, &t, &why)) return true;
  *error = "must be auto, measure, host, off or a setting such as 'prefetch=nta:1,rows=auto,idle=on' (" + why + ")";
  return false;
}

DecodeTuningChoice chooseDecodeTuning(const Model& model, ThreadPool& pool, KernelScratch& scratch,
                                      WeightPrefetcher& prefetcher, const std::string& requested) {
  DecodeTuningChoice c;
  // One base for every path below but `off` and a given setting: the host default is what a
  // context runs when nothing is measured (no layers, weights that fit the cache, a race the
  // noise made inconclusive) and the incumbent a race must beat. On Intel AVX-512 that is a
  // T1 prefetch where the constants' NTA measured slowest (issue 27).
  const DecodeTuning base = hostDefaultTuning(hostInfo(), selectedIsa());
  c.tuning = base;
  std::string request = requested;
  if (request.empty()) {
    const std::string env = switchText(Switch::DecodeTuning);  // read at each context creation
    request = env.empty() ? "host" : env;
    std::string why;
    if (!validDecodeTuningRequest(request, &why)) {
      std::fprintf(stderr, "prism: PRISM_DECODE_TUNING %s; using host\n", why.c_str());
      request = "host";
    }
  }
  if (request == "off") {
    c.tuning = kDefaultDecodeTuning;
    c.source = "off";
    return c;
  }
  if (request == "host") {
    c.source = "host";
    return c;
  }
  if (!isKeyword(request)) {
    std::string why;
    parseDecodeTuning(request, &c.tuning, &why);  // validated above
    c.source = "given";
    return c;
  }
  const HostInfo& host = hostInfo();
  const std::vector<TuneLayer> layers = decodeLayers(model);
  if (layers.empty()) {
    c.source = "fits-cache";
    c.detail = "no layer matrices to stream";
    return c;
  }
  TuningCacheEntry key;
  key.cpu = host.cpuKey();
  key.isa = selectedIsa();
  key.threads = pool.size();
  key.shape = decodeShapeKey(model);
  c.cachePath = tuningCachePath();
  const std::string memo = memoKey(key);
  if (request == "auto") {
    {
      Decided& d = decided();
      std::lock_guard<std::mutex> lock(d.mutex);
      if (auto it = d.byKey.find(memo); it != d.byKey.end()) {
        DecodeTuningChoice again = it->second;
        again.measuredMs = 0;  // measured once, by an earlier context of this process
        if (again.source == "measured") again.source = "cached";
        return again;
      }
    }
    TuningCacheEntry hit;
    std::string why;
    if (findTuning(c.cachePath, key, &hit) && parseDecodeTuning(hit.tuning, &c.tuning, &why)) {
      c.source = "cached";
      c.ratioToDefault = hit.ratioToDefault;
      c.detail = "measured " + hit.at + " in " + std::to_string(static_cast<int>(hit.ms)) + " ms";
      return c;
    }
    // Weights that fit the last-level cache are not streamed from DRAM: decode is not bound
    // by the memory there, and a race would only measure cache hits (32 MiB when sysfs does
    // not say). An explicit `measure` still races.
    size_t bytes = 0;
    for (const TuneLayer& l : layers) bytes += l.bytes;
    const size_t llc = host.l3 ? host.l3 : (size_t(32) << 20);
    if (bytes <= llc) {
      c.source = "fits-cache";
      c.detail = std::to_string(bytes >> 20) + " MiB of layer weights, last-level cache " + std::to_string(llc >> 20) + " MiB";
      return c;
    }
  }
  const TuneResult r = measureDecodeTuning(layers, base, pool, scratch, prefetcher, TuneBudget{});
  c.measuredMs = r.ms;
  c.detail = r.summary();
  c.ratioToDefault = r.ratioToDefault;
  auto remember = [&] {
    Decided& d = decided();
    std::lock_guard<std::mutex> lock(d.mutex);
    d.byKey[memo] = c;
  };
  if (!r.conclusive) {
    c.source = "inconclusive";
    remember();
    return c;
  }
  c.tuning = r.tuning;
  c.source = "measured";
  TuningCacheEntry e = key;
  e.tuning = r.tuning.describe();
  e.ratioToDefault = r.ratioToDefault;
  e.gbps = r.gbps;
  e.ms = r.ms;
  e.at = nowIso();
  e.host = host.describe();
  storeTuning(c.cachePath, e);
  remember();
  return c;
}

}  // namespace prism
