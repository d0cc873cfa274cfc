// A small JSON reader and the string escaping a writer needs: enough for the files libtaco
// keeps itself (the AllReduce table cache, coll/tune_cache.cc). Numbers are kept as their
// text, so that a float written with enough digits reads back to the same bits.
#pragma once
#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace taco {

struct JsonValue {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = kNull;
  bool boolean = false;
  std::string text;  // kString: the decoded string; kNumber: the number as written
  std::vector<JsonValue> items;                 // kArray
  std::map<std::string, JsonValue> members;    // kObject (a repeated name: the last one)

  // The member `name` of an object, or nullptr (also when this is not an object).
  const JsonValue* get(const char* name) const;
};

// Parses a whole document (one value, surrounded by white space only). False with `why`
// (what and where) on malformed text or nesting deeper than 64.
bool jsonParse(const std::string& text, JsonValue* out, std::string* why);

// `s` as a JSON string literal, quotes included.
std::string jsonQuote(const std::string& s);

// `v` as JSON text (numbers as they were read), on one line.
std::string jsonWrite(const JsonValue& v);

}  // namespace taco
