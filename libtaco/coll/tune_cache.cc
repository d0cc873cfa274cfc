#include "coll/tune_cache.h"  // tests/host/test_tune_cache.cc compiles this file directly

#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/json.h"
#include "core/params.h"

namespace taco {
namespace {

constexpr const char* kFormat = "libtaco-tune-1";

// Numbers are written and read in the C locale whatever the process set (a decimal comma
// would break the file), without touching the process's locale.
class CNumbers {
 public:
  CNumbers() : c_(newlocale(LC_NUMERIC_MASK, "C", (locale_t)0)), old_(c_ ? uselocale(c_) : (locale_t)0) {}
  ~CNumbers() {
    if (c_) {
      uselocale(old_);
      freelocale(c_);
    }
  }

 private:
  locale_t c_;
  locale_t old_;
};

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  char buf[256];
  va_list ap;
  va_start(ap, f);
  vsnprintf(buf, sizeof(buf), f, ap);
  va_end(ap);
  return buf;
}

bool readFile(const std::string& path, std::string* text, int* err) {
  FILE* f = fopen(path.c_str(), "rb");
  if (f == nullptr) {
    *err = errno;
    return false;
  }
  char buf[65536];
  size_t n;
  text->clear();
  while ((n = fread(buf, 1, sizeof(buf), f)) > 0) text->append(buf, n);
  const bool ok = !ferror(f);
  *err = ok ? 0 : EIO;
  fclose(f);
  return ok;
}

// mkdir -p of the directory holding `path`.
bool makeParent(const std::string& path, std::string* why) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0) return true;
  const std::string dir = path.substr(0, slash);
  for (size_t i = 1; i <= dir.size(); ++i) {
    if (i < dir.size() && dir[i] != '/') continue;
    const std::string part = dir.substr(0, i);
    if (mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) {
      *why = "cannot create directory " + part + ": " + strerror(errno);
      return false;
    }
  }
  return true;
}

bool parseSizeText(const std::string& s, size_t* out) {
  if (s.empty() || s[0] == '-') return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = strtoull(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = (size_t)v;
  return true;
}

// The entry `e` as a table, or false with `why`.
bool entryTable(const JsonValue& e, TuneTable* out, std::string* why) {
  const JsonValue* key = e.get("key");
  const JsonValue* bytes = e.get("bytes");
  const JsonValue* algos = e.get("algos");
  const JsonValue* us = e.get("us");
  const JsonValue* demoted = e.get("demoted");
  const JsonValue* hash = e.get("hash");
  if (!key || key->kind != JsonValue::kString || !bytes || bytes->kind != JsonValue::kArray || !algos ||
      algos->kind != JsonValue::kArray || !us || us->kind != JsonValue::kArray || !demoted ||
      demoted->kind != JsonValue::kArray || !hash || hash->kind != JsonValue::kString) {
    *why = "an entry lacks one of key, bytes, algos, us, demoted, hash";
    return false;
  }
  TuneTable t;
  t.key = key->text;
  for (const JsonValue& b : bytes->items) {
    size_t v = 0;
    if (b.kind != JsonValue::kNumber || !parseSizeText(b.text, &v) || v < kTuneMinBytes || (v & (v - 1)) != 0 ||
        (!t.bytes.empty() && v != 2 * t.bytes.back())) {
      *why = "its buckets are not the powers of two from 4096 up";
      return false;
    }
    t.bytes.push_back(v);
  }
  if (t.bytes.empty() || t.bytes[0] != kTuneMinBytes) {
    *why = "its buckets do not start at 4096";
    return false;
  }
  std::vector<int> column;  // candidate of each column
  for (const JsonValue& a : algos->items) {
    const int c = a.kind == JsonValue::kString ? candidateByName(a.text.c_str()) : -1;
    if (c < 0) {
      *why = "unknown algorithm column " + (a.kind == JsonValue::kString ? "'" + a.text + "'" : std::string("?"));
      return false;
    }
    column.push_back(c);
  }
  if (us->items.size() != t.bytes.size()) {
    *why = "it has " + std::to_string(us->items.size()) + " rows of times for " + std::to_string(t.bytes.size()) +
           " buckets";
    return false;
  }
  for (const JsonValue& row : us->items) {
    if (row.kind != JsonValue::kArray || row.items.size() != column.size()) {
      *why = "a row of times does not match its columns";
      return false;
    }
    TuneRow r;
    r.fill(kNoTime);
    for (size_t k = 0; k < column.size(); ++k) {
      const JsonValue& v = row.items[k];
      if (v.kind == JsonValue::kNull) continue;
      char* end = nullptr;
      const float x = v.kind == JsonValue::kNumber ? strtof(v.text.c_str(), &end) : -1.0f;
      if (v.kind != JsonValue::kNumber || *end != '\0' || !(x > 0) || std::isinf(x)) {
        *why = "a time is not a positive number or null";
        return false;
      }
      r[column[k]] = x;
    }
    t.us.push_back(r);
  }
  for (const JsonValue& d : demoted->items) {
    const int c = d.kind == JsonValue::kString ? candidateByName(d.text.c_str()) : -1;
    if (c < 0) {
      *why = "unknown demoted algorithm";
      return false;
    }
    t.demoted |= 1u << c;
  }
  char* end = nullptr;
  const unsigned long long h = strtoull(hash->text.c_str(), &end, 16);
  if (hash->text.size() != 16 || *end != '\0') {
    *why = "its hash is not 16 hex digits";
    return false;
  }
  t.hash = tuneHash(t);
  if (t.hash != (uint64_t)h) {
    *why = fmt("its hash %s does not match its contents (%016llx): edited or damaged", hash->text.c_str(),
               (unsigned long long)t.hash);
    return false;
  }
  *out = std::move(t);
  return true;
}

// The file's tables, or false with `why` (absent: *absent).
bool readTables(const std::string& path, std::vector<JsonValue>* tables, bool* absent, std::string* why) {
  std::string text;
  int err = 0;
  *absent = false;
  if (!readFile(path, &text, &err)) {
    *absent = err == ENOENT;
    *why = path + ": " + strerror(err);
    return false;
  }
  JsonValue doc;
  std::string perr;
  if (!jsonParse(text, &doc, &perr)) {
    *why = path + " is not JSON (" + perr + ")";
    return false;
  }
  const JsonValue* format = doc.get("format");
  const JsonValue* list = doc.get("tables");
  if (!format || format->kind != JsonValue::kString || format->text != kFormat || !list ||
      list->kind != JsonValue::kArray) {
    *why = path + " is not a libtaco table cache (format '" + std::string(kFormat) + "' with a list of tables)";
    return false;
  }
  *tables = list->items;
  return true;
}

// The read-modify-write of tuneCacheStore, under its lock.
bool storeLocked(const std::string& path, const TuneTable& t, const std::string& notes, std::string* why,
                 const std::vector<int>* choice) {
  std::vector<JsonValue> tables;
  bool absent = false;
  std::string ignored;
  if (!readTables(path, &tables, &absent, &ignored)) tables.clear();  // unreadable or damaged: replaced
  JsonValue entry;
  std::string perr;
  if (!jsonParse(tuneTableJson(t, notes, choice), &entry, &perr)) {
    *why = "internal error: a table does not serialise (" + perr + ")";
    return false;
  }
  bool replaced = false;
  for (JsonValue& e : tables) {
    const JsonValue* k = e.get("key");
    if (k != nullptr && k->kind == JsonValue::kString && k->text == t.key) e = entry, replaced = true;
  }
  if (!replaced) tables.push_back(entry);
  std::string text = std::string("{\"format\": \"") + kFormat + "\", \"tables\": [\n";
  for (size_t k = 0; k < tables.size(); ++k) text += (k ? ",\n  " : "  ") + jsonWrite(tables[k]);
  text += "\n]}\n";
  static std::atomic<unsigned> serial{0};
  const std::string tmp = path + fmt(".tmp.%d.%u", (int)getpid(), serial.fetch_add(1));
  FILE* f = fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    *why = "cannot write " + tmp + ": " + strerror(errno);
    return false;
  }
  const bool wrote = fwrite(text.data(), 1, text.size(), f) == text.size();
  const bool flushed = fflush(f) == 0 && fsync(fileno(f)) == 0;
  if (fclose(f) != 0 || !wrote || !flushed) {
    *why = "cannot write " + tmp + ": " + strerror(errno);
    unlink(tmp.c_str());
    return false;
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    *why = "cannot rename " + tmp + " to " + path + ": " + strerror(errno);
    unlink(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace

std::string tuneKey(const TuneFingerprint& f) {
  std::string gpu = f.gpu;
  for (char& c : gpu)
    if (c == ';' || c == '=') c = '_';  // the key's separators
  return "gpu=" + gpu + ";sms=" + std::to_string(f.sms) + ";ranks=" + std::to_string(f.ranks) +
         ";per_host=" + std::to_string(f.ranksPerHost) + ";route=" + f.route + ";nccl=" + std::to_string(f.nccl) +
         ";taco=" + std::to_string(f.taco) + ";codec=" + f.codec + ";dtype=" + f.dtype +
         ";chunk=" + std::to_string(f.chunkBytes) + ";depth=" + std::to_string(f.depth) +
         ";early=" + std::to_string(f.early) + ";claims=" + std::to_string(f.claims);
}

std::string tuneCachePath() {
  const char* set = envParams().tuneFile;
  return set != nullptr && *set != '\0' ? std::string(set) : defaultTuneFile();
}

std::string tuneTableJson(const TuneTable& t, const std::string& notes, const std::vector<int>* choice) {
  CNumbers c;
  std::string s = "{\"key\": " + jsonQuote(t.key) + ", \"bytes\": [";
  for (size_t b = 0; b < t.bytes.size(); ++b) s += (b ? ", " : "") + std::to_string(t.bytes[b]);
  s += "], \"algos\": [";
  for (int k = 0; k < kNumCandidates; ++k) s += std::string(k ? ", " : "") + "\"" + candidateName(k) + "\"";
  s += "], \"us\": [";
  for (size_t b = 0; b < t.us.size(); ++b) {
    s += b ? ", [" : "[";
    for (int k = 0; k < kNumCandidates; ++k)
      s += (k ? ", " : "") + (std::isinf(t.us[b][k]) ? std::string("null") : fmt("%.9g", (double)t.us[b][k]));
    s += "]";
  }
  s += "], \"demoted\": [";
  bool first = true;
  for (int k = 0; k < kNumCandidates; ++k)
    if (t.demoted >> k & 1u) s += std::string(first ? "" : ", ") + "\"" + candidateName(k) + "\"", first = false;
  s += "], \"notes\": " + jsonQuote(notes);
  if (choice != nullptr) {
    s += ", \"choice\": [";
    for (size_t b = 0; b < choice->size(); ++b) s += std::string(b ? ", " : "") + "\"" + candidateName((*choice)[b]) + "\"";
    s += "]";
  }
  s += ", \"hash\": " + fmt("\"%016llx\"", (unsigned long long)t.hash) + "}";
  return s;
}

int tuneCacheFind(const std::string& path, const std::string& key, TuneTable* out, std::string* why) {
  std::vector<JsonValue> tables;
  bool absent = false;
  if (!readTables(path, &tables, &absent, why)) return absent ? 0 : -1;
  CNumbers c;
  for (const JsonValue& e : tables) {
    const JsonValue* k = e.get("key");
    if (k == nullptr || k->kind != JsonValue::kString || k->text != key) continue;
    std::string ewhy;
    if (!entryTable(e, out, &ewhy)) {
      *why = path + ": the table for this machine is corrupted: " + ewhy;
      return -1;
    }
    return 1;
  }
  *why = path + " has " + std::to_string(tables.size()) + " table(s), none for this machine and configuration";
  return 0;
}

bool tuneCacheStore(const std::string& path, const TuneTable& t, const std::string& notes, std::string* why,
                    const std::vector<int>* choice) {
  if (path.empty()) {
    *why = "no cache file (set TACO_TUNE_FILE, XDG_CACHE_HOME or HOME)";
    return false;
  }
  if (!makeParent(path, why)) return false;
  // Writers of this file take turns (flock on a lock file beside it), so that two jobs, or two
  // communicators of one process, storing at once both keep their tables. Where flock is not
  // supported the rename alone still keeps the file whole.
  const int lockFd = open((path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lockFd >= 0) (void)flock(lockFd, LOCK_EX);
  const bool ok = storeLocked(path, t, notes, why, choice);
  if (lockFd >= 0) close(lockFd);  // releases the lock
  return ok;
}

}  // namespace taco
