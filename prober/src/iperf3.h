/* iperf3.h: the iperf3 control protocol, client side (TCP upload). */
#ifndef QP_IPERF3_H
#define QP_IPERF3_H

#include <stddef.h>
#include <stdint.h>

#include "net.h"
#include "opts.h"
#include "qperr.h"

#define IPERF3_COOKIE_LEN 37        /* 36 characters and the NUL, all sent */
#define IPERF3_MAX_JSON 8192         /* the server's limit on our parameters */
#define IPERF3_RESULTS_PER_STREAM 512 /* results grow with -P: this much per stream */
#define IPERF3_BLOCK 131072

enum {
    ST_TEST_START = 1, ST_TEST_RUNNING = 2, ST_TEST_END = 4, ST_PARAM_EXCHANGE = 9,
    ST_CREATE_STREAMS = 10, ST_SERVER_TERMINATE = 11, ST_CLIENT_TERMINATE = 12,
    ST_EXCHANGE_RESULTS = 13, ST_DISPLAY_RESULTS = 14, ST_IPERF_DONE = 16,
    ST_ACCESS_DENIED = -1, ST_SERVER_ERROR = -2
};

#define IPERF3_IEAUTHTEST 142       /* iperf's "test authorization failed" */
#define IPERF3_MAX_ERROR 999        /* iperf3's error codes are 0-3xx (iperf_error.h) */
#define IPERF3_MAX_ERRNO 4095       /* errno values are below 4096 (Linux's MAX_ERRNO) */

/* One stream of a results message. */
typedef struct {
    int id;
    uint64_t bytes;
    int64_t retransmits;            /* -1 = unknown */
    double end_time_s;              /* < 0 = absent */
} iperf3_stream_result;

/* A decoded results message (the server's, or ours). */
typedef struct {
    int nstreams;
    iperf3_stream_result streams[QP_MAX_STREAMS];
    uint64_t total_bytes;
    int sender_has_retransmits;
    char congestion_used[32];
} iperf3_results;

/* What we send in our results message. */
typedef struct {
    int id;
    uint64_t bytes;
    int64_t retransmits;
    double end_time_s;
} iperf3_own_stream;

/* The iperf3 stream id of the i-th data connection (0-based): 1, 3, 4, 5, ... */
int iperf3_stream_id(int i);

/* Fill cookie with 36 random characters of iperf's alphabet and a NUL. */
void iperf3_make_cookie(char cookie[IPERF3_COOKIE_LEN]);

/* The parameter JSON for o; malloc'd string or NULL. */
char *iperf3_params_json(const qp_opts *o);

/* Our results JSON; malloc'd string or NULL. */
char *iperf3_results_json(const iperf3_own_stream *s, int n, double cpu_user_pct,
                          double cpu_sys_pct, const char *cc);

/* The largest results message accepted from a server running n streams: iperf3
 * bounds only the parameters (8192), but results carry one entry per stream. */
size_t iperf3_results_max(int nstreams);

/* Decode a 4-byte big-endian JSON length; 0 if 1..max_len, else -1 with a message. */
int iperf3_decode_len(const unsigned char b[4], size_t max_len, uint32_t *len,
                      char *err, size_t errlen);

/* Decode the server's results JSON (len bytes, not NUL-terminated); 0 or -1. */
int iperf3_parse_results(const char *buf, size_t len, iperf3_results *r,
                         char *err, size_t errlen);

/* What an iperf3 error code a server can send an uploading client means, or NULL. */
const char *iperf3_error_text(int code);

/* Decode the 8 (or 4: 3.12 auth failure) bytes after SERVER_ERROR into e: server_error
 * or auth_required, or protocol when the code or errno is outside what iperf3 sends. */
void iperf3_server_error(const unsigned char *b, size_t n, qp_err *e);

/* Read one state byte within timeout_s; 0 or -1 with e set. */
int iperf3_read_state(net_reader *r, double timeout_s, int *state, qp_err *e);

/* Read one length-prefixed JSON message of at most max_len bytes into a malloc'd
 * NUL-terminated buffer; 0 or -1 with e set (protocol when too long). */
int iperf3_read_json(net_reader *r, double timeout_s, size_t max_len, char **out,
                     size_t *outlen, qp_err *e);

/* Write a length-prefixed JSON message (1..max_len bytes) within timeout_s; 0 or -1. */
int iperf3_write_json(int fd, const char *json, size_t max_len, double timeout_s, qp_err *e);

/* Send one state byte within timeout_s; 0 or -1 with e set. */
int iperf3_write_state(int fd, int state, double timeout_s, qp_err *e);

/* Handle an unexpected state byte: fills e with busy / server_error / protocol;
 * reads the error ints after SERVER_ERROR. Always returns -1. */
int iperf3_unexpected(net_reader *r, int state, int expected, double timeout_s, qp_err *e);

/* Connect, send the cookie, exchange parameters, wait for CREATE_STREAMS.
 * Returns the control fd (reader attached to r) or -1 with e set. */
int iperf3_open(const net_addr *a, const qp_opts *o, const char *cookie, net_reader *r,
                qp_err *e);

/* Wait for TEST_START then TEST_RUNNING; 0 or -1 with e set. */
int iperf3_wait_running(net_reader *r, double timeout_s, qp_err *e);

/* Send TEST_END, exchange results, finish with IPERF_DONE; 0 or -1 with e set.
 * server receives the server's results (nstreams bounds their size). */
int iperf3_finish(int ctrl, net_reader *r, const char *own_json, int nstreams,
                  double timeout_s, iperf3_results *server, qp_err *e);

#endif
