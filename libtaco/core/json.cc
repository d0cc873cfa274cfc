#include "core/json.h"

#include <cstdio>
#include <cstring>

namespace taco {

const JsonValue* JsonValue::get(const char* name) const {
  if (kind != kObject) return nullptr;
  auto it = members.find(name);
  return it == members.end() ? nullptr : &it->second;
}

namespace {

constexpr int kMaxDepth = 64;

struct Parser {
  explicit Parser(const std::string& text) : s(text) {}
  const std::string& s;
  size_t i = 0;
  std::string why;

  bool fail(const char* what) {
    if (why.empty()) {
      char buf[128];
      snprintf(buf, sizeof(buf), "%s at byte %zu", what, i);
      why = buf;
    }
    return false;
  }
  void space() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
  }
  bool literal(const char* word) {
    const size_t n = strlen(word);
    if (s.compare(i, n, word) != 0) return fail("unknown literal");
    i += n;
    return true;
  }
  static int hexDigit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  static void utf8(unsigned cp, std::string* out) {
    if (cp < 0x80) {
      out->push_back((char)cp);
    } else if (cp < 0x800) {
      out->push_back((char)(0xc0 | (cp >> 6)));
      out->push_back((char)(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
      out->push_back((char)(0xe0 | (cp >> 12)));
      out->push_back((char)(0x80 | ((cp >> 6) & 0x3f)));
      out->push_back((char)(0x80 | (cp & 0x3f)));
    } else {
      out->push_back((char)(0xf0 | (cp >> 18)));
      out->push_back((char)(0x80 | ((cp >> 12) & 0x3f)));
      out->push_back((char)(0x80 | ((cp >> 6) & 0x3f)));
      out->push_back((char)(0x80 | (cp & 0x3f)));
    }
  }
  bool hex4(unsigned* cp) {
    if (i + 4 > s.size()) return fail("short \\u escape");
    *cp = 0;
    for (int k = 0; k < 4; ++k) {
      const int d = hexDigit(s[i++]);
      if (d < 0) return fail("bad \\u escape");
      *cp = *cp * 16 + (unsigned)d;
    }
    return true;
  }
  bool string(std::string* out) {
    if (i >= s.size() || s[i] != '"') return fail("expected a string");
    ++i;
    out->clear();
    while (i < s.size()) {
      const char c = s[i++];
      if (c == '"') return true;
      if ((unsigned char)c < 0x20) return fail("control character in a string");
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (i >= s.size()) break;
      const char e = s[i++];
      switch (e) {
        case '"': out->push_back('"'); break;
        case '\\': out->push_back('\\'); break;
        case '/': out->push_back('/'); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        case 'u': {
          unsigned cp = 0;
          if (!hex4(&cp)) return false;
          if (cp >= 0xd800 && cp < 0xdc00) {  // a surrogate pair
            unsigned lo = 0;
            if (i + 2 > s.size() || s[i] != '\\' || s[i + 1] != 'u') return fail("lone surrogate");
            i += 2;
            if (!hex4(&lo) || lo < 0xdc00 || lo >= 0xe000) return fail("bad surrogate pair");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          }
          utf8(cp, out);
          break;
        }
        default: return fail("bad escape");
      }
    }
    return fail("unterminated string");
  }
  bool number(std::string* out) {
    const size_t start = i;
    if (i < s.size() && s[i] == '-') ++i;
    const size_t digits = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    if (i == digits) return fail("expected a value");
    if (i < s.size() && s[i] == '.') {
      ++i;
      const size_t frac = i;
      while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
      if (i == frac) return fail("bad number");
    }
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
      ++i;
      if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
      const size_t exp = i;
      while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
      if (i == exp) return fail("bad exponent");
    }
    out->assign(s, start, i - start);
    return true;
  }
  bool value(JsonValue* v, int depth) {
    if (depth > kMaxDepth) return fail("nested too deeply");
    space();
    if (i >= s.size()) return fail("unexpected end");
    const char c = s[i];
    if (c == '{') {
      v->kind = JsonValue::kObject;
      ++i;
      space();
      if (i < s.size() && s[i] == '}') return ++i, true;
      for (;;) {
        space();
        std::string name;
        if (!string(&name)) return false;
        space();
        if (i >= s.size() || s[i] != ':') return fail("expected ':'");
        ++i;
        JsonValue member;
        if (!value(&member, depth + 1)) return false;
        v->members[name] = std::move(member);
        space();
        if (i < s.size() && s[i] == ',') {
          ++i;
          continue;
        }
        if (i < s.size() && s[i] == '}') return ++i, true;
        return fail("expected ',' or '}'");
      }
    }
    if (c == '[') {
      v->kind = JsonValue::kArray;
      ++i;
      space();
      if (i < s.size() && s[i] == ']') return ++i, true;
      for (;;) {
        JsonValue item;
        if (!value(&item, depth + 1)) return false;
        v->items.push_back(std::move(item));
        space();
        if (i < s.size() && s[i] == ',') {
          ++i;
          continue;
        }
        if (i < s.size() && s[i] == ']') return ++i, true;
        return fail("expected ',' or ']'");
      }
    }
    if (c == '"') {
      v->kind = JsonValue::kString;
      return string(&v->text);
    }
    if (c == 't' || c == 'f') {
      v->kind = JsonValue::kBool;
      v->boolean = c == 't';
      return literal(c == 't' ? "true" : "false");
    }
    if (c == 'n') {
      v->kind = JsonValue::kNull;
      return literal("null");
    }
    v->kind = JsonValue::kNumber;
    return number(&v->text);
  }
};

}  // namespace

bool jsonParse(const std::string& text, JsonValue* out, std::string* why) {
  Parser p(text);
  *out = JsonValue();
  bool ok = p.value(out, 0);
  if (ok) {
    p.space();
    if (p.i != text.size()) ok = p.fail("text after the value");
  }
  if (!ok && why != nullptr) *why = p.why;
  return ok;
}

std::string jsonQuote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if ((unsigned char)c < 0x20) {
          char buf[8];
          snprintf(buf, sizeof(buf), "\\u%04x", (unsigned)(unsigned char)c);
          out += buf;
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
  return out;
}

std::string jsonWrite(const JsonValue& v) {
  switch (v.kind) {
    case JsonValue::kNull: return "null";
    case JsonValue::kBool: return v.boolean ? "true" : "false";
    case JsonValue::kNumber: return v.text;
    case JsonValue::kString: return jsonQuote(v.text);
    case JsonValue::kArray: {
      std::string out = "[";
      for (size_t k = 0; k < v.items.size(); ++k) out += (k ? ", " : "") + jsonWrite(v.items[k]);
      return out + "]";
    }
    case JsonValue::kObject: {
      std::string out = "{";
      bool first = true;
      for (const auto& kv : v.members) {
        out += (first ? "" : ", ") + jsonQuote(kv.first) + ": " + jsonWrite(kv.second);
        first = false;
      }
      return out + "}";
    }
  }
  return "null";
}

}  // namespace taco
