/* qperr.h: a test error as EVENTS.md reports it (code, message, iperf's error). */
#ifndef QP_QPERR_H
#define QP_QPERR_H

#include <stdio.h>

typedef struct {
    const char *code;       /* EVENTS.md error code, NULL = no error */
    char message[512];
    int has_iperf_error;
    int iperf_error;
    int iperf_errno;
} qp_err;

/* Record an error code and a printf-style message in e. */
#define QP_ERR(e, c, ...) do { (e)->code = (c); \
    snprintf((e)->message, sizeof((e)->message), __VA_ARGS__); } while (0)

#endif
