/* check.h: a tiny assertion library for the prober's C unit tests.
 * Each test binary ends with `return check_done();`, which prints "N passed, N failed"
 * and returns non-zero when anything failed. Header-only so every test links alone. */
#ifndef QP_CHECK_H
#define QP_CHECK_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int check_passed, check_failed;

/* Record one result, printing the failed expression and where. */
static inline void check_record(int ok, const char *file, int line, const char *what)
{
    if (ok) {
        check_passed++;
        return;
    }
    check_failed++;
    fprintf(stderr, "FAIL %s:%d: %s\n", file, line, what);
}

/* Record an integer equality, printing both values on failure. */
static inline void check_eq_ll(long long a, long long b, const char *file, int line,
                               const char *what)
{
    if (a != b)
        fprintf(stderr, "  got %lld, expected %lld\n", a, b);
    check_record(a == b, file, line, what);
}

/* Record a string equality (NULL allowed), printing both on failure. */
static inline void check_eq_str(const char *a, const char *b, const char *file, int line,
                                const char *what)
{
    int ok = (a == NULL && b == NULL) || (a && b && strcmp(a, b) == 0);

    if (!ok)
        fprintf(stderr, "  got \"%s\", expected \"%s\"\n", a ? a : "(null)", b ? b : "(null)");
    check_record(ok, file, line, what);
}

/* Record a floating-point equality within tol, printing both on failure. */
static inline void check_near(double a, double b, double tol, const char *file, int line,
                              const char *what)
{
    int ok = fabs(a - b) <= tol;

    if (!ok)
        fprintf(stderr, "  got %.17g, expected %.17g (tolerance %g)\n", a, b, tol);
    check_record(ok, file, line, what);
}

#define CHECK(cond) check_record(!!(cond), __FILE__, __LINE__, #cond)
#define CHECK_EQ(a, b) check_eq_ll((long long)(a), (long long)(b), __FILE__, __LINE__, \
                                   #a " == " #b)
#define CHECK_STR(a, b) check_eq_str((a), (b), __FILE__, __LINE__, #a " == " #b)
#define CHECK_NEAR(a, b, tol) check_near((a), (b), (tol), __FILE__, __LINE__, \
                                         #a " ~= " #b)
/* The message must contain the given fragment. */
#define CHECK_CONTAINS(s, frag) check_record(strstr((s), (frag)) != NULL, __FILE__, \
                                             __LINE__, #s " contains \"" frag "\"")

/* Print the totals; the exit status for main. */
static inline int check_done(void)
{
    printf("%d passed, %d failed\n", check_passed, check_failed);
    return check_failed ? 1 : 0;
}

#endif
