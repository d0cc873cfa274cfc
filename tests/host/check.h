/*
 * A tiny assertion framework for the host tests (C and C++).
 *
 *   int main(void) {
 *     TEST_ASSERT(x == 1);
 *     TEST_ASSERT_MSG(p != NULL, "case %d", i);
 *     TEST_ASSERT_EQ_INT(tacoCodecFind("taco", &c), tacoSuccess);
 *     TEST_ASSERT_STR_CONTAINS(tacoGetLastError(NULL), "spec");
 *     return TEST_REPORT();
 *   }
 *
 * Every check counts as passed or failed; a failure prints `file:line: FAILED ...` and
 * the test goes on. TEST_REPORT() prints the closing line `N passed, M failed` and
 * returns the exit status (nonzero when anything failed or nothing was checked).
 */
#ifndef TACO_TESTS_HOST_CHECK_H_
#define TACO_TESTS_HOST_CHECK_H_

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* counts[0] = passed, counts[1] = failed */
static inline int* test_counts_(void) {
  static int counts[2] = {0, 0};
  return counts;
}

static inline int test_record_(int ok, const char* file, int line, const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static inline int test_record_(int ok, const char* file, int line, const char* fmt, ...) {
  if (ok) {
    test_counts_()[0]++;
    return 1;
  }
  test_counts_()[1]++;
  fprintf(stderr, "%s:%d: FAILED: ", file, line);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  fflush(stderr);
  return 0;
}

/* TEST_ASSERT evaluates to 1 when the check passed, 0 when it failed. */
#define TEST_ASSERT(cond) test_record_(!!(cond), __FILE__, __LINE__, "%s", #cond)

#define TEST_ASSERT_MSG(cond, ...)                                                             \
  do {                                                                                         \
    if (!test_record_(!!(cond), __FILE__, __LINE__, "%s", #cond)) {                            \
      fprintf(stderr, "    ");                                                                 \
      fprintf(stderr, __VA_ARGS__);                                                            \
      fputc('\n', stderr);                                                                     \
    }                                                                                          \
  } while (0)

#define TEST_ASSERT_EQ_INT(a, b)                                                               \
  do {                                                                                         \
    long long test_a_ = (long long)(a), test_b_ = (long long)(b);                              \
    test_record_(test_a_ == test_b_, __FILE__, __LINE__, "%s == %s (%lld != %lld)", #a, #b,     \
                 test_a_, test_b_);                                                            \
  } while (0)

#define TEST_ASSERT_EQ_SIZE(a, b)                                                              \
  do {                                                                                         \
    unsigned long long test_a_ = (unsigned long long)(a), test_b_ = (unsigned long long)(b);   \
    test_record_(test_a_ == test_b_, __FILE__, __LINE__, "%s == %s (%llu != %llu)", #a, #b,     \
                 test_a_, test_b_);                                                            \
  } while (0)

#define TEST_ASSERT_STR_CONTAINS(haystack, needle)                                             \
  do {                                                                                         \
    const char* test_h_ = (haystack);                                                          \
    const char* test_n_ = (needle);                                                            \
    test_record_(test_h_ != NULL && strstr(test_h_, test_n_) != NULL, __FILE__, __LINE__,     \
                 "%s contains \"%s\" (it is \"%s\")", #haystack, test_n_,                      \
                 test_h_ ? test_h_ : "(null)");                                                \
  } while (0)

/* Prints the closing line and returns main's exit status. */
#define TEST_REPORT() test_report_()
static inline int test_report_(void) {
  int passed = test_counts_()[0], failed = test_counts_()[1];
  fflush(stderr);
  if (passed + failed == 0) fprintf(stderr, "no checks ran\n");
  printf("%d passed, %d failed\n", passed, failed);
  fflush(stdout);
  return (failed != 0 || passed == 0) ? 1 : 0;
}

#endif /* TACO_TESTS_HOST_CHECK_H_ */
