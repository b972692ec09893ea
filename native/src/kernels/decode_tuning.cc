#include "kernels/decode_tuning.h"

#include <cstdlib>
#include <sstream>

namespace prism {

namespace {

const char* hintName(PrefetchHint h) {
  switch (h) {
    case PrefetchHint::None:
      return "off";
    case PrefetchHint::Nta:
      return "nta";
    case PrefetchHint::T0:
      return "t0";
    case PrefetchHint::T1:
      return "t1";
  }
  return "off";
}

bool parseHint(const std::string& s, PrefetchHint* out) {
  if (s == "off") *out = PrefetchHint::None;
  else if (s == "nta") *out = PrefetchHint::Nta;
  else if (s == "t0") *out = PrefetchHint::T0;
  else if (s == "t1") *out = PrefetchHint::T1;
  else return false;
  return true;
}

}  // namespace

std::string DecodeTuning::describe() const {
  std::ostringstream o;
  o << "prefetch=" << hintName(hint);
  if (hint != PrefetchHint::None) {
    o << ':' << aheadHalves / 2;
    if (aheadHalves % 2) o << ".5";
  }
  o << ",rows=";
  if (rows == 0) o << "auto";
  else o << static_cast<int>(rows);
  o << ",idle=" << (idlePrefetch ? "on" : "off");
  if (stealRows) o << ",split=steal";
  return o.str();
}

bool parseDecodeTuning(const std::string& text, DecodeTuning* out, std::string* error) {
  DecodeTuning t;
  std::string item;
  std::istringstream in(text);
  auto fail = [&](const std::string& why) {
    *error = why;
    return false;
  };
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string::npos) return fail("decode tuning: '" + item + "' is not key=value (keys: prefetch, rows, idle, split)");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "prefetch") {
      const size_t colon = value.find(':');
      if (!parseHint(value.substr(0, colon), &t.hint))
        return fail("decode tuning: prefetch must be off or nta|t0|t1:<tiles ahead>; got '" + value + "'");
      if (t.hint == PrefetchHint::None) {
        if (colon != std::string::npos) return fail("decode tuning: prefetch=off takes no distance; got '" + value + "'");
        continue;
      }
      if (colon == std::string::npos) continue;  // the default distance
      char* end = nullptr;
      const std::string d = value.substr(colon + 1);
      const double tiles = std::strtod(d.c_str(), &end);
      const double halves = tiles * 2;
      if (d.empty() || *end != '\0' || !(halves >= 1 && halves <= 16) || halves != static_cast<int>(halves))
        return fail("decode tuning: the prefetch distance must be a multiple of 0.5 tiles from 0.5 to 8; got '" + d + "'");
      t.aheadHalves = static_cast<uint8_t>(halves);
    } else if (key == "rows") {
      if (value == "auto") t.rows = 0;
      else if (value == "1" || value == "2" || value == "4" || value == "8") t.rows = static_cast<uint8_t>(std::atoi(value.c_str()));
      else return fail("decode tuning: rows must be auto, 1, 2, 4 or 8; got '" + value + "'");
    } else if (key == "idle") {
      if (value == "on") t.idlePrefetch = true;
      else if (value == "off") t.idlePrefetch = false;
      else return fail("decode tuning: idle must be on or off; got '" + value + "'");
    } else if (key == "split") {
      if (value == "even") t.stealRows = false;
      else if (value == "steal") t.stealRows = true;
      else return fail("decode tuning: split must be even or steal; got '" + value + "'");
    } else {
      return fail("decode tuning: unknown key '" + key + "' (keys: prefetch, rows, idle, split)");
    }
  }
  *out = t;
  return true;
}

}  // namespace prism
