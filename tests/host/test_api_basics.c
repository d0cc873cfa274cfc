/*
 * The public API's basics, compiled as C (C99, -Wpedantic -Werror): proves that
 * taco.h is valid C, and checks what include/taco.h documents for version,
 * error strings and last-error text, algorithm names, the config initializer, and the codec
 * lookup API (tacoCodecFind / tacoCodecFromId / tacoCodecGetInfo / tacoCompressedSize).
 * Needs no GPU.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "taco.h"

static void test_version(void) {
  TEST_ASSERT_EQ_INT(TACO_VERSION_CODE, TACO_MAJOR * 10000 + TACO_MINOR * 100 + TACO_PATCH);
  TEST_ASSERT_EQ_INT(tacoGetVersion(), TACO_VERSION_CODE);
}

static void test_error_strings(void) {
  const char* seen[tacoNumResults];
  int r, j;
  for (r = 0; r < tacoNumResults; ++r) {
    const char* s = tacoGetErrorString((tacoResult_t)r);
    seen[r] = s;
    TEST_ASSERT_MSG(s != NULL && s[0] != '\0', "code %d has no error string", r);
    if (s == NULL) continue;
    if (r != tacoSuccess) TEST_ASSERT_STR_CONTAINS(s, "tacoGetLastError");
    for (j = 0; j < r; ++j)
      TEST_ASSERT_MSG(seen[j] == NULL || strcmp(seen[j], s) != 0, "codes %d and %d share the string '%s'",
                      j, r, s);
  }
  /* Codes outside the enum still give a string, never NULL. */
  TEST_ASSERT(tacoGetErrorString(tacoNumResults) != NULL);
  TEST_ASSERT(tacoGetErrorString((tacoResult_t)-1) != NULL);
  TEST_ASSERT(tacoGetErrorString((tacoResult_t)12345) != NULL);
  TEST_ASSERT_STR_CONTAINS(tacoGetErrorString(tacoInvalidArgument), "argument");
  TEST_ASSERT_STR_CONTAINS(tacoGetErrorString(tacoUnhandledCudaError), "CUDA");
  TEST_ASSERT_STR_CONTAINS(tacoGetErrorString(tacoNcclError), "NCCL");
  /* Never NULL, with or without a communicator. */
  TEST_ASSERT(tacoGetLastError(NULL) != NULL);
}

static void test_config_initializer(void) {
  tacoConfig_t c = TACO_CONFIG_INITIALIZER;
  TEST_ASSERT_EQ_SIZE(c.size, sizeof(tacoConfig_t));
  TEST_ASSERT_EQ_SIZE(c.magic, TACO_CONFIG_MAGIC);
  TEST_ASSERT_EQ_INT(c.version, TACO_VERSION_CODE);
  TEST_ASSERT(c.codec == NULL);
  TEST_ASSERT_EQ_SIZE(c.chunkBytes, TACO_CONFIG_UNDEF_SIZE);
  TEST_ASSERT_EQ_SIZE(c.fallbackBytes, TACO_CONFIG_UNDEF_SIZE);
  TEST_ASSERT_EQ_INT(c.pipelineDepth, TACO_CONFIG_UNDEF_INT);
  TEST_ASSERT_EQ_INT(c.checkConsistency, TACO_CONFIG_UNDEF_INT);
  TEST_ASSERT_EQ_SIZE(TACO_CONFIG_UNDEF_SIZE, (size_t)-1);
  TEST_ASSERT(TACO_CONFIG_UNDEF_INT < -2147483646);
}

/* Expects tacoCodecFind(spec) to fail with tacoInvalidArgument and a last-error
 * message containing `mention` (the offending value or the argument's name). */
static void expect_bad_spec(const char* spec, const char* mention, int line) {
  tacoCodec_t c;
  tacoResult_t r;
  c.id = -7;
  c.blockSize = -7;
  r = tacoCodecFind(spec, &c);
  TEST_ASSERT_MSG(r == tacoInvalidArgument, "line %d: tacoCodecFind(\"%s\") returned %d, expected %d", line,
                  spec ? spec : "(null)", (int)r, (int)tacoInvalidArgument);
  TEST_ASSERT_MSG(strstr(tacoGetLastError(NULL), mention) != NULL,
                  "line %d: tacoCodecFind(\"%s\"): last error '%s' does not mention '%s'", line,
                  spec ? spec : "(null)", tacoGetLastError(NULL), mention);
}

static void test_codec_find(void) {
  tacoCodec_t c;
  tacoCodecInfo_t info;
  int id, b;
  size_t s1 = 0, s2 = 0;

  TEST_ASSERT_EQ_INT(tacoCodecFind("taco", &c), tacoSuccess);
  TEST_ASSERT_EQ_INT(c.id, tacoCodecTaco);
  TEST_ASSERT_EQ_INT(c.blockSize, 256);

  TEST_ASSERT_EQ_INT(tacoCodecFind("taco:block=128", &c), tacoSuccess);
  TEST_ASSERT_EQ_INT(c.id, tacoCodecTaco);
  TEST_ASSERT_EQ_INT(c.blockSize, 128);

  /* Every power of two in range is accepted. */
  for (b = TACO_MIN_BLOCK; b <= TACO_MAX_BLOCK; b *= 2) {
    char spec[64];
    snprintf(spec, sizeof(spec), "taco:block=%d", b);
    TEST_ASSERT_EQ_INT(tacoCodecFind(spec, &c), tacoSuccess);
    TEST_ASSERT_EQ_INT(c.blockSize, b);
  }

  /* Every codec id has a registry name that tacoCodecFind resolves back to it. */
  for (id = 0; id < tacoNumCodecs; ++id) {
    tacoCodec_t byId, byName;
    TEST_ASSERT_EQ_INT(tacoCodecFromId(id, 0, &byId), tacoSuccess);
    TEST_ASSERT_EQ_INT(byId.id, id);
    memset(&info, 0, sizeof(info));
    TEST_ASSERT_EQ_INT(tacoCodecGetInfo(byId, &info), tacoSuccess);
    TEST_ASSERT_EQ_INT(info.id, id);
    TEST_ASSERT_EQ_INT(info.blockSize, byId.blockSize);
    TEST_ASSERT(info.description != NULL && info.description[0] != '\0');
    TEST_ASSERT_MSG(info.name != NULL && info.name[0] != '\0', "codec id %d has no name", id);
    if (info.name == NULL) continue;
    TEST_ASSERT_EQ_INT(tacoCodecFind(info.name, &byName), tacoSuccess);
    TEST_ASSERT_EQ_INT(byName.id, id);
    /* An unknown name lists every known one. */
    TEST_ASSERT_EQ_INT(tacoCodecFind("no-such-codec", &byName), tacoInvalidArgument);
    TEST_ASSERT_STR_CONTAINS(tacoGetLastError(NULL), info.name);
    TEST_ASSERT_EQ_INT(byName.blockSize, byId.blockSize);
    /* Blocked codecs: a default block in range; the others: 0. */
    if (byId.blockSize != 0) {
      TEST_ASSERT(byId.blockSize >= TACO_MIN_BLOCK && byId.blockSize <= TACO_MAX_BLOCK);
      TEST_ASSERT((byId.blockSize & (byId.blockSize - 1)) == 0);
    }
  }

  /* The registry names the design lists, with their stable ids. */
  {
    static const struct {
      const char* name;
      int id;
    } kNames[] = {{"none", tacoCodecNone},
                  {"bf16", tacoCodecBf16},
                  {"taco", tacoCodecTaco},
                  {"taco-e5m2", tacoCodecTacoE5M2},
                  {"fp8-block", tacoCodecFp8Block},
                  {"int8-hadamard", tacoCodecInt8Hadamard},
                  {"int8-block", tacoCodecInt8Block},
                  {"int4-block", tacoCodecInt4Block},
                  {"int6-hadamard", tacoCodecInt6Hadamard}};
    size_t i;
    for (i = 0; i < sizeof(kNames) / sizeof(kNames[0]); ++i) {
      TEST_ASSERT_MSG(tacoCodecFind(kNames[i].name, &c) == tacoSuccess, "codec '%s'", kNames[i].name);
      TEST_ASSERT_MSG(c.id == kNames[i].id, "codec '%s' has id %d, expected %d", kNames[i].name, c.id,
                      kNames[i].id);
    }
  }

  /* The taco codec's description. */
  TEST_ASSERT_EQ_INT(tacoCodecFind("taco", &c), tacoSuccess);
  TEST_ASSERT_EQ_INT(tacoCodecGetInfo(c, &info), tacoSuccess);
  TEST_ASSERT(info.name != NULL && strcmp(info.name, "taco") == 0);
  TEST_ASSERT_EQ_INT(info.codeBits, 8);
  TEST_ASSERT_EQ_INT(info.scalesPerBlock, 2);
  TEST_ASSERT_EQ_INT(info.rotated, 1);
  TEST_ASSERT(info.formatVersion >= 1);

  /* int6-hadamard: 6-bit codes, one scale, rotated; 3/4 byte per element + 4 per block. */
  TEST_ASSERT_EQ_INT(tacoCodecFind("int6-hadamard", &c), tacoSuccess);
  TEST_ASSERT_EQ_INT(c.blockSize, 256);
  TEST_ASSERT_EQ_INT(tacoCodecGetInfo(c, &info), tacoSuccess);
  TEST_ASSERT_EQ_INT(info.codeBits, 6);
  TEST_ASSERT_EQ_INT(info.scalesPerBlock, 1);
  TEST_ASSERT_EQ_INT(info.rotated, 1);
  TEST_ASSERT_EQ_INT(tacoCompressedSize(c, 1 << 20, tacoBfloat16, &s1), tacoSuccess);
  TEST_ASSERT_EQ_SIZE(s1, TACO_HEADER_BYTES + (size_t)3 * (1 << 18) + 4 * 4096);

  /* Bad specs: unknown names, malformed or out-of-range block sizes. */
  expect_bad_spec("no-such-codec", "no-such-codec", __LINE__);
  expect_bad_spec("", "spec", __LINE__);
  expect_bad_spec("TACO", "TACO", __LINE__);
  expect_bad_spec("taco:block=100", "100", __LINE__);   /* not a power of two */
  expect_bad_spec("taco:block=96", "96", __LINE__);     /* not a power of two */
  expect_bad_spec("taco:block=16", "16", __LINE__);     /* below TACO_MIN_BLOCK */
  expect_bad_spec("taco:block=2048", "2048", __LINE__); /* above TACO_MAX_BLOCK */
  expect_bad_spec("taco:block=0", "0", __LINE__);
  expect_bad_spec("taco:block=-256", "-256", __LINE__);
  expect_bad_spec("taco:block=", "block", __LINE__);
  expect_bad_spec("taco:block=abc", "abc", __LINE__);
  expect_bad_spec("taco:block=256x", "256x", __LINE__);
  expect_bad_spec("taco:blocks=256", "blocks", __LINE__);
  expect_bad_spec("taco:", "taco:", __LINE__);

  /* NULL arguments name the argument. */
  TEST_ASSERT_EQ_INT(tacoCodecFind(NULL, &c), tacoInvalidArgument);
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(NULL), "spec");
  TEST_ASSERT_EQ_INT(tacoCodecFind("taco", NULL), tacoInvalidArgument);
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(NULL), "codec");

  /* tacoCodecFromId: unknown ids and bad block sizes. */
  TEST_ASSERT_EQ_INT(tacoCodecFromId(tacoNumCodecs, 0, &c), tacoInvalidArgument);
  TEST_ASSERT_EQ_INT(tacoCodecFromId(-1, 0, &c), tacoInvalidArgument);
  TEST_ASSERT_EQ_INT(tacoCodecFromId(tacoCodecTaco, 100, &c), tacoInvalidArgument);
  TEST_ASSERT_EQ_INT(tacoCodecFromId(tacoCodecTaco, 2048, &c), tacoInvalidArgument);
  TEST_ASSERT_EQ_INT(tacoCodecFromId(tacoCodecTaco, 512, &c), tacoSuccess);
  TEST_ASSERT_EQ_INT(c.blockSize, 512);
  TEST_ASSERT_EQ_INT(tacoCodecFromId(tacoCodecTaco, 0, NULL), tacoInvalidArgument);

  /* tacoCodecGetInfo rejects a codec that tacoCodecFind would not give. */
  c.id = tacoNumCodecs;
  c.blockSize = 256;
  TEST_ASSERT_EQ_INT(tacoCodecGetInfo(c, &info), tacoInvalidArgument);
  c.id = tacoCodecTaco;
  c.blockSize = 100;
  TEST_ASSERT_EQ_INT(tacoCodecGetInfo(c, &info), tacoInvalidArgument);

  /* Compressed size: a pure function of (codec, count, dtype), header included, a multiple of 16. */
  TEST_ASSERT_EQ_INT(tacoCodecFind("taco", &c), tacoSuccess);
  TEST_ASSERT_EQ_INT(tacoCompressedSize(c, 1000003, tacoBfloat16, &s1), tacoSuccess);
  TEST_ASSERT_EQ_INT(tacoCompressedSize(c, 1000003, tacoBfloat16, &s2), tacoSuccess);
  TEST_ASSERT_EQ_SIZE(s1, s2);
  TEST_ASSERT_EQ_SIZE(s1 % 16, 0);
  TEST_ASSERT(s1 >= TACO_HEADER_BYTES + 1000003); /* 8-bit codes */
  TEST_ASSERT(s1 < 2 * 1000003);                  /* and smaller than bf16 */
  TEST_ASSERT_EQ_INT(tacoCompressedSize(c, 16, tacoFloat32, NULL), tacoInvalidArgument);
  TEST_ASSERT_EQ_INT(tacoCompressedSize(c, 16, tacoNumDataTypes, &s1), tacoInvalidArgument);
  for (id = 0; id < tacoNumCodecs; ++id) {
    size_t small = 0, large = 0;
    TEST_ASSERT_EQ_INT(tacoCodecFromId(id, 0, &c), tacoSuccess);
    TEST_ASSERT_EQ_INT(tacoCompressedSize(c, 1, tacoFloat32, &small), tacoSuccess);
    TEST_ASSERT_EQ_INT(tacoCompressedSize(c, 1 << 20, tacoFloat32, &large), tacoSuccess);
    TEST_ASSERT_MSG(small % 16 == 0 && large % 16 == 0 && small > TACO_HEADER_BYTES && large > small,
                    "codec id %d: sizes %zu (1 element) and %zu (2^20)", id, small, large);
    /* Every codec compresses fp32 to at most its raw size (plus header and padding). */
    TEST_ASSERT_MSG(large <= TACO_HEADER_BYTES + (size_t)4 * (1 << 20) + 16, "codec id %d: %zu bytes", id,
                    large);
  }
}

/* Every tacoAlgo_t has a distinct, non-empty name; anything else has none. */
static void test_algo_names(void) {
  int a, b;
  for (a = 0; a < tacoNumAlgos; ++a) {
    const char* s = tacoAlgoName((tacoAlgo_t)a);
    TEST_ASSERT_MSG(s != NULL && s[0] != '\0', "algorithm %d has no name", a);
    if (s == NULL) continue;
    for (b = 0; b < a; ++b) TEST_ASSERT_MSG(strcmp(tacoAlgoName((tacoAlgo_t)b), s) != 0, "%d and %d: '%s'", b, a, s);
  }
  TEST_ASSERT(strcmp(tacoAlgoName(tacoAlgoAuto), "auto") == 0);
  TEST_ASSERT(strcmp(tacoAlgoName(tacoAlgoStaged), "staged") == 0);
  TEST_ASSERT(strcmp(tacoAlgoName(tacoAlgoOneShotRaw), "oneshot-raw") == 0);
  TEST_ASSERT(tacoAlgoName(tacoNumAlgos) == NULL);
  TEST_ASSERT(tacoAlgoName((tacoAlgo_t)-1) == NULL);
}

int main(void) {
  test_version();
  test_error_strings();
  test_algo_names();
  test_config_initializer();
  test_codec_find();
  return TEST_REPORT();
}
