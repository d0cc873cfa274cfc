#include "coll/tune_cache.h"  // tests/host/test_tune_cache.cc compiles this file directly

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <locale.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <set>

#include "core/json.h"
#include "core/log.h"
#include "core/params.h"

namespace taco {
namespace {

constexpr const char* kFormat = "libtaco-tune-1";
// How this writer starts every file: a file that starts so but does not parse is a damaged cache
// of ours (a hand edit, a copy cut short), not someone's file that TACO_TUNE_FILE points at.
constexpr const char* kHead = "{\"format\": \"libtaco-tune-1\"";
// A temporary file this old is a killed writer's (a live one renames it within milliseconds).
constexpr time_t kStaleSeconds = 3600;

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

// What is at the path, as far as the cache is concerned.
enum class FileState {
  kOk,         // a regular file of this format: its tables
  kAbsent,     // nothing there
  kUnreadable, // it may be a cache, but reading it failed (EACCES, EIO, EMFILE...)
  kForeign,    // not a regular file, too large, not JSON, or JSON of another kind: not ours to touch
  kOtherVersion,  // another libtaco version's cache
  kDamaged,    // this writer's file, damaged
};

std::string kindOf(mode_t m) {
  if (S_ISDIR(m)) return "is a directory, not a regular file";
  if (S_ISFIFO(m)) return "is a FIFO, not a regular file";
  if (S_ISCHR(m)) return "is a character device, not a regular file";
  if (S_ISBLK(m)) return "is a block device, not a regular file";
  if (S_ISSOCK(m)) return "is a socket, not a regular file";
  return "is not a regular file";
}

// Refuses what is not a regular file of at most kTuneCacheMaxBytes (true with `why`).
bool refused(const std::string& path, const struct stat& s, std::string* why) {
  if (!S_ISREG(s.st_mode)) {
    *why = path + " " + kindOf(s.st_mode);
    return true;
  }
  if ((unsigned long long)s.st_size > kTuneCacheMaxBytes) {
    *why = path + fmt(" holds %llu bytes, more than a table cache may (%zu)", (unsigned long long)s.st_size,
                      kTuneCacheMaxBytes);
    return true;
  }
  return false;
}

// Reads the file at `path` (links followed). Only a regular file is opened, and non-blocking: a
// device could be endless (/dev/zero), a FIFO would block. *st: what it is, when it exists.
FileState readFile(const std::string& path, std::string* text, struct stat* st, std::string* why) {
  if (stat(path.c_str(), st) != 0) {
    *why = path + ": " + strerror(errno);
    return errno == ENOENT ? FileState::kAbsent : FileState::kUnreadable;
  }
  if (refused(path, *st, why)) return FileState::kForeign;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    *why = path + ": " + strerror(errno);
    return errno == ENOENT ? FileState::kAbsent : FileState::kUnreadable;
  }
  if (fstat(fd, st) != 0) {
    *why = path + ": " + strerror(errno);
    close(fd);
    return FileState::kUnreadable;
  }
  if (refused(path, *st, why)) {  // replaced since the stat
    close(fd);
    return FileState::kForeign;
  }
  text->clear();
  char buf[65536];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *why = path + ": " + strerror(errno);
      close(fd);
      return FileState::kUnreadable;
    }
    if (n == 0) break;
    if (text->size() + (size_t)n > kTuneCacheMaxBytes) {  // grew since the stat
      *why = path + fmt(" holds more bytes than a table cache may (%zu)", kTuneCacheMaxBytes);
      close(fd);
      return FileState::kForeign;
    }
    text->append(buf, (size_t)n);
  }
  close(fd);
  return FileState::kOk;
}

// `path` with its symbolic links followed, as long as its last component is one (a relative link
// from the link's directory): the file a store replaces, so that the link stays a link.
bool followLinks(const std::string& path, std::string* target, std::string* why) {
  std::string p = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat s;
    if (lstat(p.c_str(), &s) != 0 || !S_ISLNK(s.st_mode)) {  // absent, or not a link: this one
      *target = p;
      return true;
    }
    char buf[PATH_MAX];
    const ssize_t n = readlink(p.c_str(), buf, sizeof(buf));
    if (n < 0 || (size_t)n >= sizeof(buf)) {
      *why = "cannot read the symbolic link " + p + ": " + (n < 0 ? strerror(errno) : "its target is too long");
      return false;
    }
    const std::string link(buf, (size_t)n);
    const size_t slash = p.rfind('/');
    p = (!link.empty() && link[0] == '/') || slash == std::string::npos ? link : p.substr(0, slash + 1) + link;
  }
  *why = path + ": too many levels of symbolic links";
  return false;
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

std::string columnsText(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
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
  // The columns must be this libtaco's candidates, each once: a table written by a build without
  // one of them would never choose it here, so it is measured again instead.
  std::vector<int> column;  // candidate of each column
  std::vector<std::string> names;
  uint32_t seen = 0;
  for (const JsonValue& a : algos->items) {
    const int c = a.kind == JsonValue::kString ? candidateByName(a.text.c_str()) : -1;
    if (c < 0) {
      *why = "unknown algorithm column " + (a.kind == JsonValue::kString ? "'" + a.text + "'" : std::string("?")) +
             " (written by another libtaco build)";
      return false;
    }
    if (seen >> c & 1u) {
      *why = "algorithm column '" + a.text + "' appears twice";
      return false;
    }
    seen |= 1u << c;
    column.push_back(c);
    names.push_back(a.text);
  }
  if (seen != (1u << kNumCandidates) - 1) {
    std::vector<std::string> mine;
    for (int c = 0; c < kNumCandidates; ++c) mine.push_back(candidateName(c));
    *why = "its algorithm columns (" + columnsText(names) + ") are not this libtaco's (" + columnsText(mine) +
           "): written by another build";
    return false;
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
  // The largest size asked for (absent from entries written before it was recorded).
  if (const JsonValue* asked = e.get("max_bytes")) {
    size_t v = 0;
    if (asked->kind != JsonValue::kNumber || !parseSizeText(asked->text, &v) || v < kTuneMinBytes ||
        (v & (v - 1)) != 0) {
      *why = "its max_bytes is not a power of two from 4096 up";
      return false;
    }
    t.requestedBytes = v;
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
  if (t.requestedBytes != 0 && t.bytes.back() < t.requestedBytes) {  // never written so by this library
    *why = "it was measured up to " + std::to_string(t.bytes.back()) + " bytes of the " +
           std::to_string(t.requestedBytes) + " asked for";
    return false;
  }
  *out = std::move(t);
  return true;
}

// The file's tables (kOk), or what is there instead, with `why`. *st: the file's type and mode.
FileState readTables(const std::string& path, std::vector<JsonValue>* tables, struct stat* st, std::string* why) {
  std::string text;
  const FileState state = readFile(path, &text, st, why);
  if (state != FileState::kOk) return state;
  const bool ours = text.compare(0, strlen(kHead), kHead) == 0;
  JsonValue doc;
  std::string perr;
  if (!jsonParse(text, &doc, &perr)) {
    *why = path + " is not JSON (" + perr + ")";
    return ours ? FileState::kDamaged : FileState::kForeign;
  }
  const JsonValue* format = doc.get("format");
  const JsonValue* list = doc.get("tables");
  const bool formatted = format != nullptr && format->kind == JsonValue::kString;
  if (formatted && format->text == kFormat && list != nullptr && list->kind == JsonValue::kArray) {
    *tables = std::move(doc.members["tables"].items);
    return FileState::kOk;
  }
  if (formatted && format->text != kFormat && format->text.compare(0, 13, "libtaco-tune-") == 0) {
    *why = path + " is the table cache of another libtaco version (format '" + format->text + "'; this one reads '" +
           kFormat + "')";
    return FileState::kOtherVersion;
  }
  *why = path + " is not a libtaco table cache (format '" + std::string(kFormat) + "' with a list of tables)";
  return ours || (formatted && format->text == kFormat) ? FileState::kDamaged : FileState::kForeign;
}

// Removes the temporary files of `target` that a killed writer left (best effort).
void removeStaleTemporaries(const std::string& target) {
  const size_t slash = target.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : target.substr(0, slash);
  const std::string prefix = (slash == std::string::npos ? target : target.substr(slash + 1)) + ".tmp.";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  const time_t now = time(nullptr);
  while (const struct dirent* e = readdir(d)) {
    if (strncmp(e->d_name, prefix.c_str(), prefix.size()) != 0) continue;
    const std::string p = dir + "/" + e->d_name;
    struct stat s;
    if (lstat(p.c_str(), &s) == 0 && S_ISREG(s.st_mode) && s.st_mtime + kStaleSeconds < now) (void)unlink(p.c_str());
  }
  closedir(d);
}

// The read-modify-write of tuneCacheStore, under its lock; `target` is no symbolic link.
bool storeLocked(const std::string& target, const TuneTable& t, const std::string& notes, std::string* why,
                 const std::vector<int>* choice) {
  std::vector<JsonValue> tables;
  struct stat st;
  std::string rwhy;
  const FileState state = readTables(target, &tables, &st, &rwhy);
  switch (state) {
    case FileState::kOk:
    case FileState::kAbsent:
      break;
    case FileState::kUnreadable:
      *why = rwhy + ": nothing written, so that the tables it may hold are not lost";
      return false;
    case FileState::kForeign:
    case FileState::kOtherVersion:
      *why = rwhy + ": left as it is and nothing written (point TACO_TUNE_FILE at another file, or remove it)";
      return false;
    case FileState::kDamaged: {
      const std::string bad = target + ".bad";
      if (rename(target.c_str(), bad.c_str()) != 0) {
        *why = rwhy + ": cannot move it to " + bad + ": " + strerror(errno) + "; nothing written";
        return false;
      }
      TACO_WARN("tune: %s: a damaged table cache, moved to %s; a new one is written in its place", rwhy.c_str(),
                bad.c_str());
      tables.clear();
      break;
    }
  }
  JsonValue entry;
  std::string perr;
  if (!jsonParse(tuneTableJson(t, notes, choice), &entry, &perr)) {
    *why = "internal error: a table does not serialise (" + perr + ")";
    return false;
  }
  // One entry per key: the first of its key becomes this one, any later ones go.
  std::vector<JsonValue> kept;
  bool placed = false;
  for (JsonValue& e : tables) {
    const JsonValue* k = e.get("key");
    if (k != nullptr && k->kind == JsonValue::kString && k->text == t.key) {
      if (!placed) kept.push_back(entry), placed = true;
      continue;
    }
    kept.push_back(std::move(e));
  }
  if (!placed) kept.push_back(entry);
  std::string text = std::string("{\"format\": \"") + kFormat + "\", \"tables\": [\n";
  for (size_t k = 0; k < kept.size(); ++k) text += (k ? ",\n  " : "  ") + jsonWrite(kept[k]);
  text += "\n]}\n";
  removeStaleTemporaries(target);
  static std::atomic<unsigned> serial{0};
  const std::string tmp = target + fmt(".tmp.%d.%u", (int)getpid(), serial.fetch_add(1));
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
  if (fd < 0) {
    *why = "cannot write " + tmp + ": " + strerror(errno);
    return false;
  }
  if (state == FileState::kOk) (void)fchmod(fd, st.st_mode & 07777);  // the replaced file's permissions (a shared cache)
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += (size_t)n;
  }
  const bool ok = done == text.size() && fsync(fd) == 0;
  const int err = errno;
  if (close(fd) != 0 || !ok) {
    *why = "cannot write " + tmp + ": " + strerror(ok ? errno : err);
    unlink(tmp.c_str());
    return false;
  }
  if (rename(tmp.c_str(), target.c_str()) != 0) {
    *why = "cannot rename " + tmp + " to " + target + ": " + strerror(errno);
    unlink(tmp.c_str());
    return false;
  }
  return true;
}

// The lock beside the cache: writers of this file take turns (flock), so that two jobs, or two
// communicators of one process, storing at once both keep their tables. Where flock is not
// supported the rename alone still keeps the file whole. 0666 (less the umask): every user who
// shares the cache can lock it.
class CacheLock {
 public:
  explicit CacheLock(const std::string& target) : fd_(open((target + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666)) {
    while (fd_ >= 0 && flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~CacheLock() {
    if (fd_ >= 0) close(fd_);  // releases the lock
  }
  CacheLock(const CacheLock&) = delete;
  CacheLock& operator=(const CacheLock&) = delete;

 private:
  int fd_;
};

}  // namespace

std::string tuneKey(const TuneFingerprint& f) {
  std::string gpu = f.gpu;
  for (char& c : gpu)
    if (c == ';' || c == '=') c = '_';  // the key's separators
  return "gpu=" + gpu + ";sms=" + std::to_string(f.sms) + ";ranks=" + std::to_string(f.ranks) +
         ";per_host=" + std::to_string(f.ranksPerHost) + ";route=" + f.route + ";nccl=" + std::to_string(f.nccl) +
         ";taco=" + std::to_string(f.taco) + ";build=" + f.build + ";driver=" + std::to_string(f.driver) +
         ";codec=" + f.codec + ";dtype=" + f.dtype +
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
  s += "]";
  if (t.requestedBytes != 0) s += ", \"max_bytes\": " + std::to_string(t.requestedBytes);
  s += ", \"notes\": " + jsonQuote(notes);
  if (choice != nullptr) {
    s += ", \"choice\": [";
    for (size_t b = 0; b < choice->size(); ++b) s += std::string(b ? ", " : "") + "\"" + candidateName((*choice)[b]) + "\"";
    s += "]";
  }
  s += ", \"hash\": " + fmt("\"%016llx\"", (unsigned long long)t.hash) + "}";
  return s;
}

int tuneCacheFind(const std::string& path, const std::string& key, TuneTable* out, std::string* why) {
  try {
    std::vector<JsonValue> tables;
    struct stat st;
    const FileState state = readTables(path, &tables, &st, why);
    if (state != FileState::kOk) return state == FileState::kAbsent ? 0 : -1;
    CNumbers c;
    std::string first;  // the first unusable entry's fault, when no entry of the key is usable
    for (const JsonValue& e : tables) {
      const JsonValue* k = e.get("key");
      if (k == nullptr || k->kind != JsonValue::kString || k->text != key) continue;
      std::string ewhy;
      if (entryTable(e, out, &ewhy)) return 1;
      if (first.empty()) first = ewhy;
    }
    if (!first.empty()) {
      *why = path + ": the table for this machine is corrupted or stale: " + first;
      return -1;
    }
    *why = path + " has " + std::to_string(tables.size()) + " table(s), none for this machine and configuration";
    return 0;
  } catch (const std::bad_alloc&) {
    *why = path + ": out of host memory while reading it";
  } catch (const std::exception& e) {
    *why = path + ": " + e.what();
  }
  return -1;
}

bool tuneCacheStore(const std::string& path, const TuneTable& t, const std::string& notes, std::string* why,
                    const std::vector<int>* choice) {
  if (path.empty()) {
    *why = "no cache file (set TACO_TUNE_FILE, XDG_CACHE_HOME or HOME)";
    return false;
  }
  try {
    const std::string refusal = tuneTableUncacheable(t);
    if (!refusal.empty()) {
      *why = "the table is not cached: " + refusal;
      return false;
    }
    std::string target;
    if (!followLinks(path, &target, why) || !makeParent(target, why)) return false;
    CacheLock lock(target);
    return storeLocked(target, t, notes, why, choice);
  } catch (const std::bad_alloc&) {
    *why = path + ": out of host memory while writing it";
  } catch (const std::exception& e) {
    *why = path + ": " + e.what();
  }
  return false;
}

void tuneCacheWarn(const std::string& text) {
  static std::mutex mu;
  static std::set<std::string>* said = new std::set<std::string>();  // never destroyed: used at exit too
  bool first = true;
  try {
    std::lock_guard<std::mutex> lock(mu);
    first = said->insert(text).second;
  } catch (...) {  // out of memory: said again rather than thrown
  }
  if (first) TACO_WARN("%s", text.c_str());
  else TACO_INFO("%s", text.c_str());
}

}  // namespace taco
