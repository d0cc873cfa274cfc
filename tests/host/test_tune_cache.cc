// The AllReduce table cache (libtaco/coll/tune_cache.cc): the fingerprint key, a round trip
// through the file bit for bit, a corrupted file and a corrupted entry, a file from another
// machine, entries of other keys kept, the default path. Compiled in, with what it uses.
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <clocale>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../../libtaco/coll/tune_cache.cc"
#include "../../libtaco/coll/tune_table.cc"
#include "../../libtaco/core/json.cc"
#include "../../libtaco/core/log.cc"
#include "../../libtaco/core/params.cc"
#include "check.h"

using namespace taco;

namespace {

TuneFingerprint h200() {
  TuneFingerprint f;
  f.gpu = "NVIDIA H200";
  f.sms = 132;
  f.ranks = 8;
  f.ranksPerHost = 8;
  f.route = "nccl-symmetric";
  f.nccl = 22809;
  f.taco = TACO_VERSION_CODE;
  f.codec = "fp8-block:block=256";
  f.dtype = "bfloat16";
  f.chunkBytes = (size_t)64 << 20;
  f.depth = 2;
  f.early = 1;
  f.claims = 1;
  return f;
}

// A table with awkward numbers: values that need all 9 digits, tiny and huge ones, no-times, a demotion.
TuneTable sample(const std::string& key) {
  const std::vector<size_t> bytes = tuneBuckets((size_t)1 << 20);
  std::vector<float> flat;
  for (size_t b = 0; b < bytes.size(); ++b)
    for (int c = 0; c < kNumCandidates; ++c)
      flat.push_back(c == kCandOneShotRaw && b > 4 ? kNoTime : 1.0f / 3.0f * (float)(b + 1) * (float)(c + 7) + 1e-3f);
  for (int c = 0; c < kNumCandidates; ++c) flat.push_back(c == kCandFused ? 1.0f : 0.0f);
  flat[2] = 1.17549435e-38f * 3;  // a tiny positive time
  flat[3] = 3.0e38f;              // a huge one
  TuneTable t;
  TEST_ASSERT(tuneTableFrom(key, bytes, flat, &t));
  return t;
}

bool sameTable(const TuneTable& a, const TuneTable& b) {
  if (a.key != b.key || a.bytes != b.bytes || a.demoted != b.demoted || a.hash != b.hash || a.us.size() != b.us.size())
    return false;
  for (size_t r = 0; r < a.us.size(); ++r)
    if (memcmp(a.us[r].data(), b.us[r].data(), sizeof(TuneRow)) != 0) return false;
  return true;
}

std::string slurp(const std::string& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

void spit(const std::string& p, const std::string& text) {
  std::ofstream f(p, std::ios::trunc);
  f << text;
}

}  // namespace

int main() {
  char dirTemplate[] = "/tmp/taco_tune_cache_XXXXXX";
  const char* dir = mkdtemp(dirTemplate);
  TEST_ASSERT(dir != nullptr);
  const std::string root = dir;

  // ---- the key: every field, and each field changes it
  const TuneFingerprint f = h200();
  const std::string key = tuneKey(f);
  TEST_ASSERT(key ==
              "gpu=NVIDIA H200;sms=132;ranks=8;per_host=8;route=nccl-symmetric;nccl=22809;taco=" +
                  std::to_string(TACO_VERSION_CODE) + ";codec=fp8-block:block=256;dtype=bfloat16;chunk=67108864;depth=2;early=1;claims=1");
  auto differs = [&](void (*edit)(TuneFingerprint&)) {
    TuneFingerprint g = h200();
    edit(g);
    return tuneKey(g) != key;
  };
  TEST_ASSERT(differs([](TuneFingerprint& g) { g.gpu = "NVIDIA H100 80GB HBM3"; }));
  TEST_ASSERT(differs([](TuneFingerprint& g) { g.sms = 114; }));
  TEST_ASSERT(differs([](TuneFingerprint& g) { g.ranks = 4; }));
  TEST_ASSERT(differs([](TuneFingerprint& g) { g.ranksPerHost = 4; }));
  TEST_ASSERT(differs([](TuneFingerprint& g) { g.route = "cuda-ipc"; }));
  TEST_ASSERT(differs([](TuneFingerprint& g) { g.nccl = 22903; }));
  TEST_ASSERT(differs([](TuneFingerprint& g) { g.taco = 101; }));
  TEST_ASSERT(differs([](TuneFingerprint& g) { g.codec = "taco:block=256"; }));
  TEST_ASSERT(differs([](TuneFingerprint& g) { g.dtype = "float32"; }));
  TEST_ASSERT(differs([](TuneFingerprint& g) { g.chunkBytes = (size_t)256 << 20; }));
  TEST_ASSERT(differs([](TuneFingerprint& g) { g.depth = 1; }));
  TEST_ASSERT(differs([](TuneFingerprint& g) { g.early = 0; }));
  TEST_ASSERT(differs([](TuneFingerprint& g) { g.claims = 0; }));
  // A GPU name cannot break the key's separators.
  TuneFingerprint odd = h200();
  odd.gpu = "A;B=C";
  TEST_ASSERT(tuneKey(odd).rfind("gpu=A_B_C;", 0) == 0);

  // ---- round trip, bit for bit, in a directory that does not exist yet
  const std::string path = root + "/sub/dir/tune.json";
  TuneTable t = sample(key), back;
  std::string why;
  TEST_ASSERT_MSG(tuneCacheStore(path, t, "fused demoted on rank 3: output differs", &why), "%s", why.c_str());
  TEST_ASSERT_EQ_INT(tuneCacheFind(path, key, &back, &why), 1);
  TEST_ASSERT(sameTable(t, back));
  TEST_ASSERT(std::isinf(back.us[6][kCandOneShotRaw]) && (back.demoted >> kCandFused & 1u));
  // The same under a locale with a decimal comma: the file still says 0.5, and reads back.
  if (setlocale(LC_NUMERIC, "de_DE.UTF-8") != nullptr || setlocale(LC_NUMERIC, "fr_FR.UTF-8") != nullptr) {
    const std::string p2 = root + "/comma.json";
    TEST_ASSERT(tuneCacheStore(p2, t, "", &why));
    TEST_ASSERT_EQ_INT(tuneCacheFind(p2, key, &back, &why), 1);
    TEST_ASSERT(sameTable(t, back));
    setlocale(LC_NUMERIC, "C");
  }
  // No temporary file is left behind.
  TEST_ASSERT(access((path + ".tmp." + std::to_string(getpid()) + ".0").c_str(), F_OK) != 0);

  // ---- a file from another machine: other keys only. Not an error, no table; and storing
  // ours keeps theirs.
  TuneFingerprint h100 = h200();
  h100.gpu = "NVIDIA H100 80GB HBM3";
  h100.sms = 132;
  const std::string other = root + "/other.json";
  TEST_ASSERT(tuneCacheStore(other, sample(tuneKey(h100)), "", &why));
  TEST_ASSERT_EQ_INT(tuneCacheFind(other, key, &back, &why), 0);
  TEST_ASSERT_MSG(why.find("none for this machine") != std::string::npos, "%s", why.c_str());
  TEST_ASSERT(tuneCacheStore(other, t, "", &why));
  TEST_ASSERT_EQ_INT(tuneCacheFind(other, key, &back, &why), 1);
  TEST_ASSERT_EQ_INT(tuneCacheFind(other, tuneKey(h100), &back, &why), 1);
  TEST_ASSERT(back.key == tuneKey(h100));
  // Storing again replaces the entry of the same key (one entry per key).
  TuneTable t2 = sample(key);
  t2.us[0][kCandPlain] = 99.0f;
  t2.hash = tuneHash(t2);
  TEST_ASSERT(tuneCacheStore(other, t2, "", &why));
  TEST_ASSERT_EQ_INT(tuneCacheFind(other, key, &back, &why), 1);
  TEST_ASSERT(sameTable(t2, back));
  const std::string text = slurp(other);
  size_t keys = 0;
  for (size_t at = text.find("\"key\""); at != std::string::npos; at = text.find("\"key\"", at + 1)) ++keys;
  TEST_ASSERT_EQ_SIZE(keys, (size_t)2);

  // ---- an absent file: no table, not an error
  TEST_ASSERT_EQ_INT(tuneCacheFind(root + "/absent.json", key, &back, &why), 0);

  // ---- corrupted files: refused with the reason
  const std::string bad = root + "/bad.json";
  spit(bad, "{\"format\": \"libtaco-tune-1\", \"tables\": [");  // cut short
  TEST_ASSERT_EQ_INT(tuneCacheFind(bad, key, &back, &why), -1);
  TEST_ASSERT_MSG(why.find("not JSON") != std::string::npos, "%s", why.c_str());
  spit(bad, "{\"format\": \"something else\", \"tables\": []}");
  TEST_ASSERT_EQ_INT(tuneCacheFind(bad, key, &back, &why), -1);
  TEST_ASSERT_MSG(why.find("not a libtaco table cache") != std::string::npos, "%s", why.c_str());
  spit(bad, "\x01\x02 binary");
  TEST_ASSERT_EQ_INT(tuneCacheFind(bad, key, &back, &why), -1);
  // An edited time: the hash no longer matches.
  std::string edited = slurp(path);
  const size_t at = edited.find("\"us\": [[");
  TEST_ASSERT(at != std::string::npos);
  edited.insert(at + 8, "1");  // the first time gains a leading digit
  spit(bad, edited);
  TEST_ASSERT_EQ_INT(tuneCacheFind(bad, key, &back, &why), -1);
  TEST_ASSERT_MSG(why.find("hash") != std::string::npos && why.find("corrupted") != std::string::npos, "%s",
                  why.c_str());
  // A removed demotion: found out too.
  std::string undemoted = slurp(path);
  const size_t dm = undemoted.find("\"demoted\": [\"fused\"]");
  TEST_ASSERT(dm != std::string::npos);
  undemoted.replace(dm, strlen("\"demoted\": [\"fused\"]"), "\"demoted\": []");
  spit(bad, undemoted);
  TEST_ASSERT_EQ_INT(tuneCacheFind(bad, key, &back, &why), -1);
  // Structurally wrong entries.
  const char* broken[] = {
      "{\"format\": \"libtaco-tune-1\", \"tables\": [{\"key\": \"K\"}]}",
      "{\"format\": \"libtaco-tune-1\", \"tables\": [{\"key\": \"K\", \"bytes\": [4096, 16384], \"algos\": [], "
      "\"us\": [[], []], \"demoted\": [], \"hash\": \"0000000000000000\"}]}",
      "{\"format\": \"libtaco-tune-1\", \"tables\": [{\"key\": \"K\", \"bytes\": [4096], \"algos\": [\"warp\"], "
      "\"us\": [[1]], \"demoted\": [], \"hash\": \"0000000000000000\"}]}",
      "{\"format\": \"libtaco-tune-1\", \"tables\": [{\"key\": \"K\", \"bytes\": [4096], \"algos\": [\"plain\"], "
      "\"us\": [[-1]], \"demoted\": [], \"hash\": \"0000000000000000\"}]}",
      "{\"format\": \"libtaco-tune-1\", \"tables\": [{\"key\": \"K\", \"bytes\": [4096], \"algos\": [\"plain\"], "
      "\"us\": [[1, 2]], \"demoted\": [], \"hash\": \"0000000000000000\"}]}",
  };
  for (const char* b : broken) {
    spit(bad, b);
    TEST_ASSERT_MSG(tuneCacheFind(bad, "K", &back, &why) == -1, "%s", b);
  }
  // A damaged file is replaced by a store (the other entries were lost with it).
  spit(bad, "{not json");
  TEST_ASSERT(tuneCacheStore(bad, t, "", &why));
  TEST_ASSERT_EQ_INT(tuneCacheFind(bad, key, &back, &why), 1);

  // ---- writers at once (threads here; jobs alike): every table survives, the file stays whole
  {
    const std::string shared = root + "/shared.json";
    std::vector<TuneTable> mine;
    for (int w = 0; w < 8; ++w) {
      TuneFingerprint g = h200();
      g.ranks = w + 2;
      mine.push_back(sample(tuneKey(g)));
    }
    std::vector<std::thread> writers;
    std::vector<int> stored(8, 0);
    for (int w = 0; w < 8; ++w)
      writers.emplace_back([&, w] {
        std::string err;
        for (int k = 0; k < 5; ++k) stored[(size_t)w] += tuneCacheStore(shared, mine[(size_t)w], "", &err);
      });
    for (std::thread& th : writers) th.join();
    for (int w = 0; w < 8; ++w) {
      TEST_ASSERT_EQ_INT(stored[(size_t)w], 5);
      TuneFingerprint g = h200();
      g.ranks = w + 2;
      TEST_ASSERT_MSG(tuneCacheFind(shared, tuneKey(g), &back, &why) == 1, "writer %d: %s", w, why.c_str());
    }
  }

  // ---- a store into a place that cannot be written: false with the reason, nothing thrown
  spit(root + "/file", "x");
  TEST_ASSERT(!tuneCacheStore(root + "/file/tune.json", t, "", &why));
  TEST_ASSERT(!why.empty());
  TEST_ASSERT(!tuneCacheStore("", t, "", &why));

  // ---- the default path: XDG_CACHE_HOME (absolute), else HOME
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  TEST_ASSERT(defaultTuneFile() == "/xdg/taco/tune.json");
  setenv("XDG_CACHE_HOME", "relative", 1);  // not absolute: ignored (XDG base directory rules)
  setenv("HOME", "/home/u", 1);
  TEST_ASSERT(defaultTuneFile() == "/home/u/.cache/taco/tune.json");
  unsetenv("XDG_CACHE_HOME");
  unsetenv("HOME");
  TEST_ASSERT(defaultTuneFile().empty());

  // ---- JSON: escapes round-trip, numbers keep their text
  JsonValue v;
  TEST_ASSERT(jsonParse("{\"a\": \"x\\\"y\\u00e9\\n\", \"n\": 1.50e3, \"l\": [true, null]}", &v, &why));
  TEST_ASSERT(v.get("a") && v.get("a")->text == "x\"y\xc3\xa9\n");
  TEST_ASSERT(v.get("n") && v.get("n")->text == "1.50e3");
  JsonValue w;
  TEST_ASSERT(jsonParse(jsonWrite(v), &w, &why) && jsonWrite(w) == jsonWrite(v));
  TEST_ASSERT(!jsonParse("[1, 2,]", &w, &why) && !jsonParse("01x", &w, &why) && !jsonParse("", &w, &why));
  TEST_ASSERT(!jsonParse(std::string(100, '[') + std::string(100, ']'), &w, &why));  // too deep

  return TEST_REPORT();
}
