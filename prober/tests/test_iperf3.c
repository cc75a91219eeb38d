/* test_iperf3.c: the pure parts of the iperf3 protocol: framing, results, messages. */
#include "check.h"
#include "iperf3.h"

#include <jansson.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

/* Parse a NUL-terminated results string. */
static int parse(const char *s, iperf3_results *r, char *err, size_t errlen)
{
    return iperf3_parse_results(s, strlen(s), r, err, errlen);
}

/* A 3.12 server's results: -1 printed unsigned means "unknown". */
static void test_results_unsigned_minus_one(void)
{
    static const char s[] =
        "{\"cpu_util_total\":1.5,\"cpu_util_user\":0.5,\"cpu_util_system\":1.0,"
        "\"sender_has_retransmits\":0,\"congestion_used\":\"cubic\",\"streams\":["
        "{\"id\":1,\"bytes\":3970695168,\"retransmits\":18446744073709551615,\"jitter\":0,"
        "\"errors\":0,\"packets\":0,\"start_time\":0,\"end_time\":1.081}]}";
    iperf3_results r;
    char err[256] = "";

    CHECK_EQ(parse(s, &r, err, sizeof(err)), 0);
    CHECK_STR(err, "");
    CHECK_EQ(r.nstreams, 1);
    CHECK_EQ(r.streams[0].id, 1);
    CHECK_EQ(r.streams[0].bytes, 3970695168ULL);
    CHECK_EQ(r.streams[0].retransmits, -1);
    CHECK_NEAR(r.streams[0].end_time_s, 1.081, 1e-12);
    CHECK_EQ(r.total_bytes, 3970695168ULL);
    CHECK_EQ(r.sender_has_retransmits, 0);
    CHECK_STR(r.congestion_used, "cubic");
}

/* Several streams (ids 1, 3, 4), real -1 and known retransmits; bytes summed exactly. */
static void test_results_streams_summed(void)
{
    static const char s[] =
        "{\"sender_has_retransmits\":1,\"streams\":["
        "{\"id\":1,\"bytes\":1000,\"retransmits\":-1},"
        "{\"id\":3,\"bytes\":9007199254740992,\"retransmits\":7},"
        "{\"id\":4,\"bytes\":5}]}";
    iperf3_results r;
    char err[256];

    CHECK_EQ(parse(s, &r, err, sizeof(err)), 0);
    CHECK_EQ(r.nstreams, 3);
    CHECK_EQ(r.streams[0].retransmits, -1);
    CHECK_EQ(r.streams[1].id, 3);
    CHECK_EQ(r.streams[1].bytes, 9007199254740992ULL);
    CHECK_EQ(r.streams[1].retransmits, 7);
    CHECK_EQ(r.streams[2].id, 4);
    CHECK_EQ(r.streams[2].retransmits, -1);
    CHECK(r.streams[2].end_time_s < 0);
    CHECK_EQ(r.total_bytes, 9007199254741997ULL);
    CHECK_EQ(r.sender_has_retransmits, 1);
    CHECK_STR(r.congestion_used, "");
}

/* Broken results are rejected with a message saying what is wrong. */
static void test_results_rejects(void)
{
    iperf3_results r;
    char err[256];

    CHECK_EQ(parse("not json", &r, err, sizeof(err)), -1);
    CHECK_CONTAINS(err, "not valid JSON");
    CHECK_EQ(parse("[1,2]", &r, err, sizeof(err)), -1);
    CHECK_STR(err, "the server's results lack a \"streams\" array");
    CHECK_EQ(parse("{\"streams\":{}}", &r, err, sizeof(err)), -1);
    CHECK_EQ(parse("{\"streams\":[{\"id\":1}]}", &r, err, sizeof(err)), -1);
    CHECK_STR(err, "a stream in the server's results lacks a numeric id or bytes");
    CHECK_EQ(parse("{\"streams\":[{\"id\":\"1\",\"bytes\":1}]}", &r, err, sizeof(err)), -1);
    CHECK_EQ(parse("{\"streams\":[{\"id\":1,\"bytes\":-5}]}", &r, err, sizeof(err)), -1);
    CHECK_CONTAINS(err, "impossible");
    CHECK_EQ(parse("{\"streams\":[{\"id\":1.5,\"bytes\":5}]}", &r, err, sizeof(err)), -1);
    CHECK_EQ(parse("{\"streams\":[{\"id\":1,\"bytes\":1e300}]}", &r, err, sizeof(err)), -1);
    CHECK_EQ(parse("{\"streams\":[],\"streams\":[]}", &r, err, sizeof(err)), -1);
    {
        /* 129 streams: one more than -P allows. */
        char *s = malloc(129 * 24 + 64), *p = s;

        p += sprintf(p, "{\"streams\":[");
        for (int i = 0; i < 129; i++)
            p += sprintf(p, "%s{\"id\":%d,\"bytes\":1}", i ? "," : "", i + 1);
        sprintf(p, "]}");
        CHECK_EQ(parse(s, &r, err, sizeof(err)), -1);
        CHECK_STR(err, "the server's results list 129 streams (at most 128)");
        free(s);
    }
    /* Not NUL-terminated: the length bounds the parse. */
    CHECK_EQ(iperf3_parse_results("{\"streams\":[]}garbage", 14, &r, err, sizeof(err)), 0);
    CHECK_EQ(r.nstreams, 0);
}

/* The length prefix: big-endian, 1..8192. */
static void test_decode_len_bounds(void)
{
    const unsigned char ok[4] = { 0, 0, 0x20, 0x00 }, zero[4] = { 0, 0, 0, 0 },
                        over[4] = { 0, 0, 0x20, 0x01 }, huge[4] = { 0xff, 0xff, 0xff, 0xff },
                        one[4] = { 0, 0, 0, 1 };
    char err[256];
    uint32_t len = 0;

    CHECK_EQ(iperf3_decode_len(ok, IPERF3_MAX_JSON, &len, err, sizeof(err)), 0);
    CHECK_EQ(len, 8192);
    CHECK_EQ(iperf3_decode_len(one, IPERF3_MAX_JSON, &len, err, sizeof(err)), 0);
    CHECK_EQ(len, 1);
    CHECK_EQ(iperf3_decode_len(zero, IPERF3_MAX_JSON, &len, err, sizeof(err)), -1);
    CHECK_EQ(iperf3_decode_len(over, IPERF3_MAX_JSON, &len, err, sizeof(err)), -1);
    CHECK_STR(err, "the server announced a JSON message of 8193 bytes (allowed 1 to 8192)");
    CHECK_EQ(iperf3_decode_len(huge, IPERF3_MAX_JSON, &len, err, sizeof(err)), -1);
    CHECK_CONTAINS(err, "4294967295 bytes");
    /* Results may be longer with many streams: the bound grows with -P. */
    CHECK_EQ(iperf3_results_max(1), 8192 + 512);
    CHECK_EQ(iperf3_results_max(128), 8192 + 512 * 128);
    CHECK_EQ(iperf3_decode_len(over, iperf3_results_max(1), &len, err, sizeof(err)), 0);
    CHECK_EQ(len, 8193);
}

/* Our results for 128 streams with the largest numbers fit the bound a peer like us
 * would apply, and exceed the parameter limit (so the limits must differ). */
static void test_results_128_streams_fit(void)
{
    iperf3_own_stream st[QP_MAX_STREAMS];
    char *s;

    for (int i = 0; i < QP_MAX_STREAMS; i++)
        st[i] = (iperf3_own_stream){ iperf3_stream_id(i), 9007199254740991ULL, 4294967295LL,
                                     3600.123456789 };
    s = iperf3_results_json(st, QP_MAX_STREAMS, 12.5, 87.5, "cubic");
    CHECK(s != NULL);
    CHECK(strlen(s) > IPERF3_MAX_JSON);
    CHECK(strlen(s) <= iperf3_results_max(QP_MAX_STREAMS));
    free(s);
}

/* SERVER_ERROR payloads: full, 3.12's auth failure (code only), garbage, and nothing. */
static void test_server_error_codes(void)
{
    const unsigned char full[8] = { 0, 0, 0, 117, 0, 0, 0, 104 };
    const unsigned char auth[4] = { 0, 0, 0, 142 };
    const unsigned char neg[8] = { 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0 };
    qp_err e;

    memset(&e, 0, sizeof(e));
    iperf3_server_error(full, 8, &e);
    CHECK_STR(e.code, "server_error");
    CHECK_EQ(e.has_iperf_error, 1);
    CHECK_EQ(e.iperf_error, 117);
    CHECK_EQ(e.iperf_errno, 104);
    CHECK_STR(e.message, "the server reported iperf3 error 117: it could not exchange the "
                         "results; Connection reset by peer");
    memset(&e, 0, sizeof(e));
    iperf3_server_error(auth, 4, &e);
    CHECK_STR(e.code, "auth_required");
    CHECK_EQ(e.iperf_error, 142);
    CHECK_EQ(e.iperf_errno, 0);
    CHECK_CONTAINS(e.message, "requires authentication");
    /* Outside iperf3's codes (0-999) or errno (0-4095): protocol, no iperf_error. */
    memset(&e, 0, sizeof(e));
    iperf3_server_error(neg, 8, &e);
    CHECK_STR(e.code, "protocol");
    CHECK_EQ(e.has_iperf_error, 0);
    CHECK_STR(e.message, "the server sent SERVER_ERROR (0xFE) followed by code -1, errno 0, "
                         "which no iperf3 sends (codes 0-999, errno 0-4095): not an iperf3 "
                         "server, or a corrupted control stream");
    {
        /* What issue 9 saw as "iperf3 error -840617896" from a garbage first byte 0xFE. */
        const unsigned char garbage[8] = { 0xcd, 0xe5, 0x30, 0x58, 0, 0, 0, 0 };
        const unsigned char big_errno[8] = { 0, 0, 0, 117, 0, 0, 0x10, 0 };
        const unsigned char too_big[8] = { 0, 0, 0x03, 0xe8, 0, 0, 0, 0 };

        memset(&e, 0, sizeof(e));
        iperf3_server_error(garbage, 8, &e);
        CHECK_STR(e.code, "protocol");
        CHECK_CONTAINS(e.message, "code -840617896, errno 0, which no iperf3 sends");
        memset(&e, 0, sizeof(e));
        iperf3_server_error(big_errno, 8, &e);
        CHECK_STR(e.code, "protocol");
        CHECK_CONTAINS(e.message, "errno 4096");
        memset(&e, 0, sizeof(e));
        iperf3_server_error(too_big, 4, &e);
        CHECK_STR(e.code, "protocol");
        CHECK_CONTAINS(e.message, "code (alone) 1000");
    }
    {
        /* The edges of the sane range, and a code this prober has no text for. */
        const unsigned char max[8] = { 0, 0, 0x03, 0xe7, 0, 0, 0x0f, 0xff };
        const unsigned char unknown[8] = { 0, 0, 0, 155, 0, 0, 0, 0 };

        memset(&e, 0, sizeof(e));
        iperf3_server_error(max, 8, &e);
        CHECK_STR(e.code, "server_error");
        CHECK_EQ(e.iperf_error, 999);
        CHECK_EQ(e.iperf_errno, 4095);
        memset(&e, 0, sizeof(e));
        iperf3_server_error(unknown, 8, &e);
        CHECK_STR(e.code, "server_error");
        CHECK_EQ(e.has_iperf_error, 1);
        CHECK_STR(e.message, "the server reported iperf3 error 155: an error this prober does "
                             "not know (see iperf3's iperf_error.h)");
    }
    {
        const unsigned char buf2[8] = { 0, 0, 0, 141, 0, 0, 0, 0 };

        memset(&e, 0, sizeof(e));
        iperf3_server_error(buf2, 8, &e);
        CHECK_STR(e.message, "the server reported iperf3 error 141: it could not set the socket "
                             "buffer size asked for (-w)");
    }
    memset(&e, 0, sizeof(e));
    iperf3_server_error(full, 2, &e);
    CHECK_STR(e.code, "server_error");
    CHECK_EQ(e.has_iperf_error, 0);
}

/* The parameter message carries exactly what the issue lists. */
static void test_params_json_fields(void)
{
    qp_opts o;
    char *s;
    json_t *j;

    opts_defaults(&o);
    o.time_s = 7;
    o.streams = 4;
    s = iperf3_params_json(&o);
    j = json_loads(s, 0, NULL);
    CHECK(j != NULL);
    CHECK(json_is_true(json_object_get(j, "tcp")));
    CHECK_EQ(json_integer_value(json_object_get(j, "time")), 7);
    CHECK_EQ(json_integer_value(json_object_get(j, "parallel")), 4);
    CHECK_EQ(json_integer_value(json_object_get(j, "len")), 131072);
    CHECK(json_object_get(j, "window") == NULL);
    CHECK(json_object_get(j, "congestion") == NULL);
    CHECK_STR(json_string_value(json_object_get(j, "client_version")), "quickprobe " QP_VERSION);
    json_decref(j);
    free(s);
    o.window_bytes = 65536;
    o.congestion = "reno";
    s = iperf3_params_json(&o);
    j = json_loads(s, 0, NULL);
    CHECK_EQ(json_integer_value(json_object_get(j, "window")), 65536);
    CHECK_STR(json_string_value(json_object_get(j, "congestion")), "reno");
    json_decref(j);
    free(s);
}

/* Our results message has every field the server requires and parses back. */
static void test_own_results_roundtrip(void)
{
    iperf3_own_stream st[2] = { { 1, 123456789012ULL, 3, 1.5 }, { 3, 42, -1, 1.5 } };
    char *s = iperf3_results_json(st, 2, 1.25, 2.5, "bbr");
    iperf3_results r;
    char err[256];
    json_t *j = json_loads(s, 0, NULL), *s0;

    CHECK(j != NULL);
    CHECK_NEAR(json_real_value(json_object_get(j, "cpu_util_total")), 3.75, 1e-12);
    CHECK_NEAR(json_real_value(json_object_get(j, "cpu_util_user")), 1.25, 1e-12);
    CHECK_NEAR(json_real_value(json_object_get(j, "cpu_util_system")), 2.5, 1e-12);
    CHECK_EQ(json_integer_value(json_object_get(j, "sender_has_retransmits")), 1);
    s0 = json_array_get(json_object_get(j, "streams"), 0);
    CHECK(json_is_number(json_object_get(s0, "jitter")));
    CHECK_NEAR(json_number_value(json_object_get(s0, "jitter")), 0.0, 0);
    CHECK(json_is_integer(json_object_get(s0, "errors")));
    CHECK(json_is_integer(json_object_get(s0, "packets")));
    json_decref(j);
    CHECK_EQ(parse(s, &r, err, sizeof(err)), 0);
    CHECK_EQ(r.nstreams, 2);
    CHECK_EQ(r.streams[0].bytes, 123456789012ULL);
    CHECK_EQ(r.streams[1].id, 3);
    CHECK_EQ(r.streams[1].retransmits, -1);
    CHECK_STR(r.congestion_used, "bbr");
    free(s);
}

/* Stream ids skip 2; cookies are 36 characters of the alphabet and a NUL. */
static void test_ids_and_cookie(void)
{
    char c[IPERF3_COOKIE_LEN];

    CHECK_EQ(iperf3_stream_id(0), 1);
    CHECK_EQ(iperf3_stream_id(1), 3);
    CHECK_EQ(iperf3_stream_id(2), 4);
    CHECK_EQ(iperf3_stream_id(127), 129);
    iperf3_make_cookie(c);
    CHECK_EQ(strlen(c), 36);
    CHECK_EQ(strspn(c, "abcdefghijklmnopqrstuvwxyz234567"), 36);
}

/* Framing over a real socket: a state byte and a JSON message in one segment, then
 * an oversized message and EOF, as a hostile server could send them. */
static void test_framing_socketpair(void)
{
    int sv[2];
    net_reader rd;
    qp_err e;
    char *json = NULL;
    size_t len = 0;
    int st = 0;
    const unsigned char seg[] = { 13, 0, 0, 0, 2, '{', '}', 14, 0, 0, 0x20, 0x01 };

    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    CHECK_EQ(write(sv[1], seg, sizeof(seg)), (ssize_t)sizeof(seg));
    shutdown(sv[1], SHUT_WR);
    net_reader_init(&rd, sv[0]);
    memset(&e, 0, sizeof(e));
    CHECK_EQ(iperf3_read_state(&rd, 1.0, &st, &e), 0);
    CHECK_EQ(st, ST_EXCHANGE_RESULTS);
    CHECK_EQ(iperf3_read_json(&rd, 1.0, IPERF3_MAX_JSON, &json, &len, &e), 0);
    CHECK_EQ(len, 2);
    CHECK_STR(json, "{}");
    free(json);
    CHECK_EQ(iperf3_read_state(&rd, 1.0, &st, &e), 0);
    CHECK_EQ(st, ST_DISPLAY_RESULTS);
    CHECK_EQ(iperf3_read_json(&rd, 1.0, IPERF3_MAX_JSON, &json, &len, &e), -1);
    CHECK_STR(e.code, "protocol");
    CHECK_CONTAINS(e.message, "8193 bytes");
    CHECK_EQ(iperf3_read_state(&rd, 1.0, &st, &e), -1);
    CHECK_STR(e.code, "eof");
    close(sv[0]);
    close(sv[1]);
}

/* A silent server: the read gives up at its deadline with code timeout. */
static void test_read_deadline(void)
{
    int sv[2], st;
    net_reader rd;
    qp_err e;
    double t0;

    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    net_reader_init(&rd, sv[0]);
    t0 = net_now();
    CHECK_EQ(iperf3_read_state(&rd, 0.1, &st, &e), -1);
    CHECK_STR(e.code, "timeout");
    CHECK(net_now() - t0 >= 0.09);
    close(sv[0]);
    close(sv[1]);
}

/* Run every test; the exit status says whether all passed. */
int main(void)
{
    test_results_unsigned_minus_one();
    test_results_streams_summed();
    test_results_rejects();
    test_decode_len_bounds();
    test_results_128_streams_fit();
    test_server_error_codes();
    test_params_json_fields();
    test_own_results_roundtrip();
    test_ids_and_cookie();
    test_framing_socketpair();
    test_read_deadline();
    return check_done();
}
