/* iperf3.c: the iperf3 control protocol: framing, parameters, results (client side). */
#include "iperf3.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

/* The iperf3 stream id of the i-th data connection (0-based): 1, 3, 4, 5, ... */
int iperf3_stream_id(int i)
{
    return i == 0 ? 1 : i + 2;
}

/* Fill cookie with 36 random characters of iperf's alphabet and a NUL. */
void iperf3_make_cookie(char cookie[IPERF3_COOKIE_LEN])
{
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz234567";
    unsigned char rnd[IPERF3_COOKIE_LEN - 1];

    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        for (size_t i = 0; i < sizeof(rnd); i++)
            rnd[i] = (unsigned char)(rand() ^ (int)getpid());
    for (size_t i = 0; i < sizeof(rnd); i++)
        cookie[i] = alphabet[rnd[i] % 32];
    cookie[IPERF3_COOKIE_LEN - 1] = '\0';
}

/* The parameter JSON for o; malloc'd string or NULL. */
char *iperf3_params_json(const qp_opts *o)
{
    json_t *j = json_object();
    char *s;

    if (!j)
        return NULL;
    json_object_set_new(j, "tcp", json_true());
    json_object_set_new(j, "omit", json_integer(0));
    json_object_set_new(j, "time", json_integer(o->time_s));
    json_object_set_new(j, "num", json_integer(0));
    json_object_set_new(j, "blockcount", json_integer(0));
    json_object_set_new(j, "parallel", json_integer(o->streams));
    json_object_set_new(j, "len", json_integer(IPERF3_BLOCK));
    json_object_set_new(j, "pacing_timer", json_integer(1000));
    if (o->window_bytes)
        json_object_set_new(j, "window", json_integer((json_int_t)o->window_bytes));
    if (o->congestion)
        json_object_set_new(j, "congestion", json_string(o->congestion));
    json_object_set_new(j, "client_version", json_string("quickprobe " QP_VERSION));
    s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return s;
}

/* Our results JSON; malloc'd string or NULL. */
char *iperf3_results_json(const iperf3_own_stream *st, int n, double cpu_user_pct,
                          double cpu_sys_pct, const char *cc)
{
    json_t *j = json_object(), *arr = json_array();
    char *s;

    if (!j || !arr)
        goto fail;
    json_object_set_new(j, "cpu_util_total", json_real(cpu_user_pct + cpu_sys_pct));
    json_object_set_new(j, "cpu_util_user", json_real(cpu_user_pct));
    json_object_set_new(j, "cpu_util_system", json_real(cpu_sys_pct));
    json_object_set_new(j, "sender_has_retransmits", json_integer(1));
    if (cc && *cc)
        json_object_set_new(j, "congestion_used", json_string(cc));
    for (int i = 0; i < n; i++) {
        json_t *o = json_pack("{s:i, s:I, s:I, s:f, s:i, s:i, s:f, s:f}",
                              "id", st[i].id, "bytes", (json_int_t)st[i].bytes,
                              "retransmits", (json_int_t)st[i].retransmits,
                              "jitter", 0.0, "errors", 0, "packets", 0,
                              "start_time", 0.0, "end_time", st[i].end_time_s);
        if (!o)
            goto fail;
        json_array_append_new(arr, o);
    }
    json_object_set_new(j, "streams", arr);
    s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return s;
fail:
    json_decref(arr);
    json_decref(j);
    return NULL;
}

/* The largest results message accepted from a server running n streams: iperf3
 * bounds only the parameters (8192), but results carry one entry per stream. */
size_t iperf3_results_max(int nstreams)
{
    return IPERF3_MAX_JSON + (size_t)IPERF3_RESULTS_PER_STREAM * (size_t)(nstreams > 0 ? nstreams : 0);
}

/* Decode a 4-byte big-endian JSON length; 0 if 1..max_len, else -1 with a message. */
int iperf3_decode_len(const unsigned char b[4], size_t max_len, uint32_t *len,
                      char *err, size_t errlen)
{
    uint32_t v = ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | b[3];

    if (v == 0 || v > max_len) {
        snprintf(err, errlen, "the server announced a JSON message of %u bytes "
                 "(allowed 1 to %zu)", v, max_len);
        return -1;
    }
    *len = v;
    return 0;
}

/* A JSON number as a double (integers too); 0 or -1 if v is not a number. */
static int json_num(const json_t *v, double *out)
{
    if (!json_is_number(v))
        return -1;
    *out = json_number_value(v);
    return 0;
}

/* Decode one element of the results' "streams" array into s; 0 or -1. */
static int parse_stream(const json_t *o, iperf3_stream_result *s, char *err, size_t errlen)
{
    double id, bytes, retr = -1, end = -1;

    if (!json_is_object(o) || json_num(json_object_get(o, "id"), &id) < 0 ||
        json_num(json_object_get(o, "bytes"), &bytes) < 0) {
        snprintf(err, errlen, "a stream in the server's results lacks a numeric id or bytes");
        return -1;
    }
    if (id != floor(id) || id < 0 || id > 1e6 || bytes < 0 || bytes > 9.2e18 ||
        bytes != floor(bytes)) {
        snprintf(err, errlen, "a stream in the server's results has an impossible id or "
                 "byte count");
        return -1;
    }
    json_num(json_object_get(o, "retransmits"), &retr);
    json_num(json_object_get(o, "end_time"), &end);
    s->id = (int)id;
    s->bytes = (uint64_t)bytes;
    /* iperf3 3.12/3.13 print -1 as 18446744073709551615: anything past INT64_MAX is -1. */
    s->retransmits = (retr < 0 || retr >= 9.2e18 || !isfinite(retr)) ? -1 : (int64_t)retr;
    s->end_time_s = isfinite(end) ? end : -1;
    return 0;
}

/* Decode the server's results JSON (len bytes, not NUL-terminated); 0 or -1. */
int iperf3_parse_results(const char *buf, size_t len, iperf3_results *r,
                         char *err, size_t errlen)
{
    json_error_t je;
    json_t *j, *streams, *v;
    size_t i, n;
    double d;

    memset(r, 0, sizeof(*r));
    /* Reals for every number: unsigned 64-bit values overflow jansson's integers. */
    j = json_loadb(buf, len, JSON_DECODE_INT_AS_REAL | JSON_REJECT_DUPLICATES, &je);
    if (!j) {
        snprintf(err, errlen, "the server's results are not valid JSON: %s", je.text);
        return -1;
    }
    streams = json_object_get(j, "streams");
    if (!json_is_object(j) || !json_is_array(streams)) {
        snprintf(err, errlen, "the server's results lack a \"streams\" array");
        goto fail;
    }
    n = json_array_size(streams);
    if (n > QP_MAX_STREAMS) {
        snprintf(err, errlen, "the server's results list %zu streams (at most %d)", n,
                 QP_MAX_STREAMS);
        goto fail;
    }
    for (i = 0; i < n; i++) {
        if (parse_stream(json_array_get(streams, i), &r->streams[i], err, errlen) < 0)
            goto fail;
        r->total_bytes += r->streams[i].bytes;
    }
    r->nstreams = (int)n;
    if (json_num(json_object_get(j, "sender_has_retransmits"), &d) == 0)
        r->sender_has_retransmits = d == 1.0;
    v = json_object_get(j, "congestion_used");
    if (json_is_string(v))
        snprintf(r->congestion_used, sizeof(r->congestion_used), "%s", json_string_value(v));
    json_decref(j);
    return 0;
fail:
    json_decref(j);
    return -1;
}

/* What an iperf3 error code a server can send an uploading client means, or NULL. */
const char *iperf3_error_text(int code)
{
    switch (code) {
    case 111: case 112: return "it could not exchange control messages";
    case 113: case 114: return "it could not read our parameters";
    case 116: case 117: return "it could not exchange the results";
    case 119: return "it thinks the client has terminated";
    case 120: return "the server has terminated";
    case 121: return "it is busy running a test";
    case 124: case 130: case 141: return "it could not set the socket buffer size asked for (-w)";
    case 134: return "it could not set the congestion control asked for (-C)";
    case 142: return "test authorization failed";
    case 144: return "it received no message in time";
    case 200: case 201: case 204: return "it could not set up a data stream";
    case 206: case 207: return "a data stream failed or closed on its side";
    case 208: return "a data stream had an invalid id";
    default: return NULL;
    }
}

/* A big-endian int32 from b. */
static int32_t be32(const unsigned char *b)
{
    return (int32_t)(((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) |
                     ((uint32_t)b[2] << 8) | b[3]);
}

/* Decode the 8 (or 4: 3.12 auth failure) bytes after SERVER_ERROR into e. iperf3's
 * error codes are 0-999 and errno values 0-4095: anything else is not iperf3 talking
 * (a garbage first byte that happened to be 0xFE), so it is `protocol`. */
void iperf3_server_error(const unsigned char *b, size_t n, qp_err *e)
{
    int32_t code = n >= 4 ? be32(b) : 0, eno = n >= 8 ? be32(b + 4) : 0;
    const char *text = iperf3_error_text(code);

    e->has_iperf_error = 0;
    if (n < 4) {
        QP_ERR(e, "server_error", "the server reported an error (SERVER_ERROR) without a code");
        return;
    }
    if (code < 0 || code > IPERF3_MAX_ERROR || eno < 0 || eno > IPERF3_MAX_ERRNO) {
        QP_ERR(e, "protocol", "the server sent SERVER_ERROR (0xFE) followed by %s %d, errno "
               "%d, which no iperf3 sends (codes 0-%d, errno 0-%d): not an iperf3 server, or "
               "a corrupted control stream", n >= 8 ? "code" : "code (alone)", code, eno,
               IPERF3_MAX_ERROR, IPERF3_MAX_ERRNO);
        return;
    }
    e->has_iperf_error = 1;
    e->iperf_error = code;
    e->iperf_errno = eno;
    if (code == IPERF3_IEAUTHTEST) {
        QP_ERR(e, "auth_required", "the server requires authentication "
               "(iperf3 error %d: test authorization failed)", code);
        return;
    }
    QP_ERR(e, "server_error", "the server reported iperf3 error %d: %s%s%s", code,
           text ? text : "an error this prober does not know (see iperf3's iperf_error.h)",
           eno ? "; " : "", eno ? strerror(eno) : "");
}

/* Map a net_* return code onto an EVENTS.md error. */
static void net_to_err(int rc, const char *msg, qp_err *e)
{
    const char *code = "io";

    if (rc == NET_ERR_TIMEOUT) code = "timeout";
    else if (rc == NET_ERR_INTR) code = "interrupted";
    else if (rc == NET_ERR_EOF) code = "protocol";
    QP_ERR(e, code, "%s", msg);
}

/* Read one state byte within timeout_s; 0 or -1 with e set. */
int iperf3_read_state(net_reader *r, double timeout_s, int *state, qp_err *e)
{
    char msg[256];
    signed char b;
    int rc = net_read_exact(r, &b, 1, NULL, net_now() + timeout_s, msg, sizeof(msg));

    if (rc != NET_OK) {
        net_to_err(rc, msg, e);
        if (rc == NET_ERR_EOF)
            e->code = "eof";    /* callers decide: server_closed first, protocol later */
        return -1;
    }
    *state = b;
    return 0;
}

/* Read one length-prefixed JSON message of at most max_len bytes into a malloc'd
 * NUL-terminated buffer; 0 or -1 with e set (protocol when too long). */
int iperf3_read_json(net_reader *r, double timeout_s, size_t max_len, char **out,
                     size_t *outlen, qp_err *e)
{
    unsigned char lb[4];
    char msg[256];
    uint32_t len;
    double deadline = net_now() + timeout_s;
    char *buf = NULL;
    int rc;

    rc = net_read_exact(r, lb, 4, NULL, deadline, msg, sizeof(msg));
    if (rc != NET_OK)
        goto netfail;
    if (iperf3_decode_len(lb, max_len, &len, msg, sizeof(msg)) < 0) {
        QP_ERR(e, "protocol", "%s", msg);
        return -1;
    }
    buf = malloc(len + 1);
    if (!buf) {
        QP_ERR(e, "io", "out of memory");
        return -1;
    }
    rc = net_read_exact(r, buf, len, NULL, deadline, msg, sizeof(msg));
    if (rc != NET_OK)
        goto netfail;
    buf[len] = '\0';
    *out = buf;
    *outlen = len;
    return 0;
netfail:
    free(buf);
    net_to_err(rc, msg, e);
    return -1;
}

/* Write a length-prefixed JSON message (1..max_len bytes) within timeout_s; 0 or -1. */
int iperf3_write_json(int fd, const char *json, size_t max_len, double timeout_s, qp_err *e)
{
    size_t n = strlen(json);
    unsigned char lb[4] = { (unsigned char)(n >> 24), (unsigned char)(n >> 16),
                            (unsigned char)(n >> 8), (unsigned char)n };
    double deadline = net_now() + timeout_s;
    char msg[256];
    int rc;

    if (n == 0 || n > max_len) {
        QP_ERR(e, "io", "our JSON message is %zu bytes (allowed 1 to %zu)", n, max_len);
        return -1;
    }
    rc = net_write_all(fd, lb, 4, deadline, msg, sizeof(msg));
    if (rc == NET_OK)
        rc = net_write_all(fd, json, n, deadline, msg, sizeof(msg));
    if (rc != NET_OK) {
        net_to_err(rc, msg, e);
        return -1;
    }
    return 0;
}

/* Send one state byte within timeout_s; 0 or -1 with e set. */
int iperf3_write_state(int fd, int state, double timeout_s, qp_err *e)
{
    signed char b = (signed char)state;
    char msg[256];
    int rc = net_write_all(fd, &b, 1, net_now() + timeout_s, msg, sizeof(msg));

    if (rc != NET_OK) {
        net_to_err(rc, msg, e);
        return -1;
    }
    return 0;
}

/* Handle an unexpected state byte: fills e with busy / server_error / protocol;
 * reads the error ints after SERVER_ERROR. Always returns -1. */
int iperf3_unexpected(net_reader *r, int state, int expected, double timeout_s, qp_err *e)
{
    unsigned char b[8];
    size_t got = 0;
    char msg[256];

    if (state == ST_ACCESS_DENIED) {
        QP_ERR(e, "server_busy", "the server is busy running a test; try again later");
        return -1;
    }
    if (state == ST_SERVER_ERROR) {
        int rc = net_read_exact(r, b, 8, &got, net_now() + timeout_s, msg, sizeof(msg));

        if (rc == NET_ERR_TIMEOUT && got < 4) {
            QP_ERR(e, "timeout", "the server sent SERVER_ERROR but no error code in time");
            return -1;
        }
        iperf3_server_error(b, got, e);
        return -1;
    }
    if (state == ST_SERVER_TERMINATE) {
        QP_ERR(e, "server_error", "the server terminated the test (SERVER_TERMINATE)");
        return -1;
    }
    QP_ERR(e, "protocol", "unexpected state %d from the server (expected %d)", state, expected);
    return -1;
}

/* Read a state byte and require it to be expected; 0 or -1 with e set. */
static int expect_state(net_reader *r, int expected, double timeout_s, qp_err *e)
{
    int st;

    if (iperf3_read_state(r, timeout_s, &st, e) < 0) {
        if (strcmp(e->code, "eof") == 0)
            QP_ERR(e, "protocol", "the server closed the control connection while we "
                   "waited for state %d", expected);
        return -1;
    }
    if (st != expected)
        return iperf3_unexpected(r, st, expected, timeout_s, e);
    return 0;
}

/* The server ended the control connection before saying anything: e says so. A busy
 * iperf3 always writes ACCESS_DENIED (0xFF) before it closes, and Linux delivers that
 * byte before the reset our unread cookie provokes; so an end with nothing received is
 * a server that closes at once (a proxy without a backend, tcpwrappers, not iperf3). */
static void closed_error(const net_reader *r, qp_err *e)
{
    QP_ERR(e, "server_closed", "the server accepted the connection and %s it without "
           "sending anything (a busy iperf3 answers ACCESS_DENIED first): it is not an "
           "iperf3 server, or it refuses this client", r->reset ? "reset" : "closed");
}

/* Send the cookie and read the first state byte into st: 0; -1 with e set; 1 when the
 * connection ended by a reset with nothing received (e is server_closed), which a busy
 * iperf3 whose 0xFF was lost on the path would also give: worth one more try. */
static int hello(int fd, net_reader *r, const char *cookie, double to, int *st, qp_err *e)
{
    char msg[256];
    int rc = net_write_all(fd, cookie, IPERF3_COOKIE_LEN, net_now() + to, msg, sizeof(msg));

    if (rc == NET_ERR_INTR || rc == NET_ERR_TIMEOUT) {
        QP_ERR(e, rc == NET_ERR_INTR ? "interrupted" : "timeout", "sending the cookie: %s",
               msg);
        return -1;
    }
    /* A failed write means the server already reset the connection; what it sent
     * before that (a busy iperf3's 0xFF) is still there to read, so look at once. */
    if (iperf3_read_state(r, rc == NET_OK ? to : 0.0, st, e) == 0)
        return 0;
    if (rc == NET_OK && strcmp(e->code, "eof") != 0)
        return -1;
    if (rc != NET_OK)
        r->reset = 1;
    closed_error(r, e);
    return r->reset ? 1 : -1;
}

/* Connect the control socket and greet the server until its first state byte, trying
 * once more after a reset with nothing received; the fd, or -1 with e set. */
static int open_control(const net_addr *a, double to, const char *cookie, net_reader *r,
                        int *st, qp_err *e)
{
    char msg[256];
    int fd = -1, rc = 1;

    for (int attempt = 0; attempt < 2 && rc == 1 && !net_interrupted; attempt++) {
        if (fd >= 0)
            close(fd);
        fd = net_connect(a, to, 0, NULL, msg, sizeof(msg));
        if (fd < 0) {
            QP_ERR(e, net_connect_code(fd), "%s", msg);
            return -1;
        }
        net_set_nodelay(fd);
        net_reader_init(r, fd);
        rc = hello(fd, r, cookie, to, st, e);
    }
    if (rc == 0)
        return fd;
    if (rc == 1 && net_interrupted)
        QP_ERR(e, "interrupted", "interrupted");
    close(fd);
    return -1;
}

/* Connect, send the cookie, exchange parameters, wait for CREATE_STREAMS.
 * Returns the control fd (reader attached to r) or -1 with e set. */
int iperf3_open(const net_addr *a, const qp_opts *o, const char *cookie, net_reader *r,
                qp_err *e)
{
    double to = o->connect_timeout_s;
    char *params = NULL;
    int fd, st;

    fd = open_control(a, to, cookie, r, &st, e);
    if (fd < 0)
        return -1;
    if (st != ST_PARAM_EXCHANGE) {
        iperf3_unexpected(r, st, ST_PARAM_EXCHANGE, to, e);
        goto fail;
    }
    params = iperf3_params_json(o);
    if (!params) {
        QP_ERR(e, "io", "out of memory");
        goto fail;
    }
    if (iperf3_write_json(fd, params, IPERF3_MAX_JSON, to, e) < 0 ||
        expect_state(r, ST_CREATE_STREAMS, to, e) < 0)
        goto fail;
    free(params);
    return fd;
fail:
    free(params);
    close(fd);
    return -1;
}

/* Wait for TEST_START then TEST_RUNNING; 0 or -1 with e set. */
int iperf3_wait_running(net_reader *r, double timeout_s, qp_err *e)
{
    if (expect_state(r, ST_TEST_START, timeout_s, e) < 0)
        return -1;
    return expect_state(r, ST_TEST_RUNNING, timeout_s, e);
}

/* Send TEST_END, exchange results, finish with IPERF_DONE; 0 or -1 with e set.
 * server receives the server's results (nstreams bounds their size). */
int iperf3_finish(int ctrl, net_reader *r, const char *own_json, int nstreams,
                  double timeout_s, iperf3_results *server, qp_err *e)
{
    char *json = NULL, msg[256];
    size_t len;

    if (iperf3_write_state(ctrl, ST_TEST_END, timeout_s, e) < 0 ||
        expect_state(r, ST_EXCHANGE_RESULTS, timeout_s, e) < 0 ||
        iperf3_write_json(ctrl, own_json, iperf3_results_max(nstreams), timeout_s, e) < 0 ||
        iperf3_read_json(r, timeout_s, iperf3_results_max(nstreams), &json, &len, e) < 0)
        goto fail;
    if (iperf3_parse_results(json, len, server, msg, sizeof(msg)) < 0) {
        QP_ERR(e, "protocol", "%s", msg);
        goto fail;
    }
    free(json);
    json = NULL;
    if (expect_state(r, ST_DISPLAY_RESULTS, timeout_s, e) < 0)
        goto fail;
    /* The server may already have closed: IPERF_DONE is a courtesy. */
    iperf3_write_state(ctrl, ST_IPERF_DONE, timeout_s, &(qp_err){0});
    return 0;
fail:
    free(json);
    return -1;
}
