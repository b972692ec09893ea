#include "json.h"

#include <cstdlib>
#include <cstring>

namespace prism {
namespace {

class Parser {
 public:
  explicit Parser(std::string_view t) : t_(t) {}

  JsonValue document() {
    JsonValue v = value(0);
    ws();
    if (p_ != t_.size()) fail("trailing characters after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& why) { throw std::runtime_error(why + " at byte " + std::to_string(p_)); }
  void ws() {
    while (p_ < t_.size() && (t_[p_] == ' ' || t_[p_] == '\n' || t_[p_] == '\r' || t_[p_] == '\t')) p_++;
  }
  char peek() {
    if (p_ >= t_.size()) fail("unexpected end of JSON");
    return t_[p_];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    p_++;
  }
  bool literal(const char* word) {
    size_t n = std::strlen(word);
    if (t_.substr(p_, n) == word) {
      p_ += n;
      return true;
    }
    return false;
  }

  JsonValue value(int depth) {
    if (depth > 64) fail("JSON nested too deeply");
    ws();
    JsonValue v;
    char c = peek();
    if (c == '{') {
      v.kind = JsonValue::Kind::Object;
      p_++;
      ws();
      if (peek() == '}') { p_++; return v; }
      for (;;) {
        ws();
        std::string key = string();
        ws();
        expect(':');
        v.obj.emplace_back(std::move(key), value(depth + 1));
        ws();
        if (peek() == ',') { p_++; continue; }
        expect('}');
        return v;
      }
    }
    if (c == '[') {
      v.kind = JsonValue::Kind::Array;
      p_++;
      ws();
      if (peek() == ']') { p_++; return v; }
      for (;;) {
        v.arr.push_back(value(depth + 1));
        ws();
        if (peek() == ',') { p_++; continue; }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.kind = JsonValue::Kind::String;
      v.str = string();
      return v;
    }
    if (literal("true")) { v.kind = JsonValue::Kind::Bool; v.b = true; return v; }
    if (literal("false")) { v.kind = JsonValue::Kind::Bool; return v; }
    if (literal("null")) return v;
    if (literal("NaN") || literal("Infinity") || literal("-Infinity")) fail("non-finite number");
    return number();
  }

  JsonValue number() {
    size_t start = p_;
    if (p_ < t_.size() && t_[p_] == '-') p_++;
    bool digits = false;
    while (p_ < t_.size() && ((t_[p_] >= '0' && t_[p_] <= '9') || t_[p_] == '.' || t_[p_] == 'e' || t_[p_] == 'E' ||
                              t_[p_] == '+' || t_[p_] == '-')) {
      digits = true;
      p_++;
    }
    if (!digits) { p_ = start; fail("unexpected character"); }
    std::string s(t_.substr(start, p_ - start));
    char* end = nullptr;
    double d = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size()) { p_ = start; fail("malformed number"); }
    JsonValue v;
    v.kind = JsonValue::Kind::Number;
    v.num = d;
    return v;
  }

  static void utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) out += static_cast<char>(cp);
    else if (cp < 0x800) { out += static_cast<char>(0xC0 | (cp >> 6)); out += static_cast<char>(0x80 | (cp & 0x3F)); }
    else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  unsigned hex4() {
    if (t_.size() - p_ < 4) fail("truncated \\u escape");
    unsigned cp = 0;
    for (int k = 0; k < 4; k++) {
      char h = t_[p_++];
      cp <<= 4;
      if (h >= '0' && h <= '9') cp |= h - '0';
      else if (h >= 'a' && h <= 'f') cp |= h - 'a' + 10;
      else if (h >= 'A' && h <= 'F') cp |= h - 'A' + 10;
      else fail("bad \\u escape");
    }
    return cp;
  }

  std::string string() {
    expect('"');
    std::string out;
    for (;;) {
      char c = peek();
      p_++;
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
      if (c != '\\') { out += c; continue; }
      char e = peek();
      p_++;
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00 && t_.substr(p_, 2) == "\\u") {
            p_ += 2;
            unsigned lo = hex4();
            if (lo >= 0xDC00 && lo < 0xE000) cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          utf8(out, cp);
          break;
        }
        default: fail("bad escape");
      }
    }
  }

  std::string_view t_;
  size_t p_ = 0;
};

}  // namespace

const JsonValue* JsonValue::get(const std::string& key) const {
  if (kind != Kind::Object) return nullptr;
  for (const auto& [k, v] : obj)
    if (k == key) return &v;
  return nullptr;
}

JsonValue parseJson(std::string_view text) { return Parser(text).document(); }

}  // namespace prism
