/*
 * A very small unit-test harness: TEST() cases in a table, CHECK macros
 * that record failures and go on, and a closing "N passed, N failed" line.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef QRDMA_UNIT_H
#define QRDMA_UNIT_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

extern int unit_failures;

#define CHECK(cond)                                                                \
    do {                                                                           \
        if (!(cond)) {                                                             \
            fprintf(stderr, "  %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
            unit_failures++;                                                       \
        }                                                                          \
    } while (0)

#define CHECK_EQ(a, b)                                                             \
    do {                                                                           \
        uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                           \
        if (a_ != b_) {                                                            \
            fprintf(stderr, "  %s:%d: %s == 0x%" PRIx64 ", expected %s == 0x%" PRIx64 "\n", \
                    __FILE__, __LINE__, #a, a_, #b, b_);                           \
            unit_failures++;                                                       \
        }                                                                          \
    } while (0)

#define CHECK_STR_CONTAINS(hay, needle)                                            \
    do {                                                                           \
        if (!strstr((hay), (needle))) {                                            \
            fprintf(stderr, "  %s:%d: \"%s\" does not contain \"%s\"\n", __FILE__,  \
                    __LINE__, (hay), (needle));                                    \
            unit_failures++;                                                       \
        }                                                                          \
    } while (0)

struct unit_test {
    const char *name;
    void (*fn)(void);
};

#define UNIT_TEST(fn) { #fn, fn }

/* Runs every test, prints one line each and the closing count; returns the exit code. */
static inline int unit_run(const char *suite, const struct unit_test *tests, size_t n)
{
    int passed = 0, failed = 0;
    size_t i;

    for (i = 0; i < n; i++) {
        int before = unit_failures;

        tests[i].fn();
        if (unit_failures == before) {
            passed++;
            printf("ok %zu %s/%s\n", i + 1, suite, tests[i].name);
        } else {
            failed++;
            printf("not ok %zu %s/%s\n", i + 1, suite, tests[i].name);
        }
    }
    printf("%s: %d passed, %d failed\n", suite, passed, failed);
    return failed ? 1 : 0;
}

#endif /* QRDMA_UNIT_H */
