/* The checks the C tests share: include after <stdio.h>, <stdlib.h> and "weft.h".
 *
 * CHECK(call)              the call must return WEFT_STATUS_OK, else the test stops;
 * EXPECT_TRUE(cond, ...)   a failed condition is reported (printf-style message) and
 *                          counted in `failures`, and the test goes on. */
#ifndef WEFT_TEST_CHECK_H
#define WEFT_TEST_CHECK_H

static int failures = 0;

#define CHECK(call)                                                              \
  do {                                                                           \
    weft_status s_ = (call);                                                     \
    if (s_ != WEFT_STATUS_OK) {                                                  \
      fprintf(stderr, "%s:%d: %s returned %u: %s\n", __FILE__, __LINE__, #call,  \
              (unsigned)s_, weft_last_error());                                  \
      exit(1);                                                                   \
    }                                                                            \
  } while (0)

#define EXPECT_TRUE(cond, ...)                                       \
  do {                                                               \
    if (!(cond)) {                                                   \
      fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond);     \
      fprintf(stderr, __VA_ARGS__);                                  \
      fprintf(stderr, "\n");                                         \
      failures++;                                                    \
    }                                                                \
  } while (0)

#endif
