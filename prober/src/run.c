/* run.c: a test run from connect to result: connections, the sender, drain, results. */
#include "run.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "iperf2.h"
#include "measure.h"
#include "output.h"
#include "sender.h"

/* Prepare r for options o (no I/O); 0 or -1 with e set. */
int run_init(qp_run *r, const qp_opts *o, qp_err *e)
{
    memset(r, 0, sizeof(*r));
    r->o = o;
    r->ctrl = -1;
    r->send_ep = r->send_wake = -1;
    r->n = o->streams;
    r->streams = calloc((size_t)r->n, sizeof(*r->streams));
    /* inst_bps looks back 500 ms: keep that much history plus slack. */
    r->ring_cap = 500 / o->sample_ms + 4;
    r->ring = calloc((size_t)r->ring_cap, sizeof(*r->ring));
    if (!r->streams || !r->ring) {
        QP_ERR(e, "io", "out of memory");
        return -1;
    }
    for (int i = 0; i < r->n; i++) {
        r->streams[i].fd = -1;
        r->streams[i].server_bytes = -1;
        r->streams[i].id = o->iperf2 ? i + 1 : iperf3_stream_id(i);
    }
    r->out.server_bytes = -1;
    return 0;
}

/* Close every socket and free r. */
void run_free(qp_run *r)
{
    for (int i = 0; r->streams && i < r->n; i++)
        if (r->streams[i].fd >= 0)
            close(r->streams[i].fd);
    if (r->ctrl >= 0)
        close(r->ctrl);
    if (r->send_ep >= 0)
        close(r->send_ep);
    if (r->send_wake >= 0)
        close(r->send_wake);
    free(r->send_buf);
    free(r->streams);
    free(r->ring);
    r->streams = NULL;
    r->ring = NULL;
    r->send_buf = NULL;
    r->ctrl = r->send_ep = r->send_wake = -1;
}

/* Fill e with the congestion error listing the kernel's algorithms. */
static void cc_error(const char *cc, qp_err *e)
{
    char avail[256];

    if (tcpinfo_available_cc(avail, sizeof(avail)) < 0)
        snprintf(avail, sizeof(avail), "unknown");
    QP_ERR(e, "congestion", "congestion control '%.32s' is not available in this kernel; "
           "available: %s", cc, avail);
}

/* Map a net_connect failure for a data stream onto e. */
static void connect_error(const qp_run *r, int rc, const char *msg, qp_err *e)
{
    if (rc == NET_ERR_CC)
        cc_error(r->o->congestion, e);
    else
        QP_ERR(e, net_connect_code(rc), "data stream: %s", msg);
}

/* Read what the kernel gave the first data socket: cc, MSS, send buffer. */
static void read_socket_facts(qp_run *r, int fd)
{
    qp_tcpinfo ti;
    char msg[128];
    int sb = 0;
    socklen_t sl = sizeof(sb);

    if (tcpinfo_congestion(fd, r->congestion, sizeof(r->congestion)) < 0)
        r->congestion[0] = '\0';
    if (tcpinfo_read(fd, &ti, msg, sizeof(msg)) == 0)
        r->mss_bytes = ti.mss_bytes;
    if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sb, &sl) == 0)
        r->window_given_bytes = sb;
}

/* 1 if the peer has closed or reset fd (EOF or ECONNRESET waiting to be read). */
static int peer_closed(int fd)
{
    char c;
    ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT | MSG_PEEK);

    return n == 0 || (n < 0 && (errno == ECONNRESET || errno == EPIPE));
}

/* e for an iperf 2 server that closed data stream id before taking any data: its only
 * way to refuse (iperf 2 has no busy answer), and retrying soon does not help. */
static void closed_error(int id, qp_err *e)
{
    QP_ERR(e, "server_closed", "the server closed data stream %d at once, before reading our data: "
           "it is not an iperf 2 server, or it refuses this client", id);
}

/* Data an iperf 2 server that closes at once may still have acked: its kernel acks what
 * arrives before the application closes, up to the initial receive buffer (tcp_rmem's
 * default is 128 KiB). A stream reset with no more acked than this never got going. */
#define CLOSED_AT_ONCE_BYTES (256u * 1024)

/* After a failed data phase: an iperf 2 stream whose write failed with a reset or a
 * closed pipe before more than CLOSED_AT_ONCE_BYTES were acked is server_closed, not io. */
static void classify_send_failure(const qp_run *r, qp_err *e)
{
    if (!r->o->iperf2 || !e->code || strcmp(e->code, "io") != 0)
        return;
    for (int i = 0; i < r->n; i++) {
        const qp_stream *s = &r->streams[i];
        int en = atomic_load(&((qp_stream *)s)->send_errno);
        qp_tcpinfo ti;
        char msg[128];

        if (en != EPIPE && en != ECONNRESET)
            continue;
        if (tcpinfo_read(s->fd, &ti, msg, sizeof(msg)) == 0 &&
            ti.bytes_acked > CLOSED_AT_ONCE_BYTES + s->preamble_bytes)
            continue;
        closed_error(s->id, e);
        return;
    }
}

/* Connect data stream i and send its preamble (cookie or iperf 2 flags); 0 or -1. */
static int connect_stream(qp_run *r, int i, qp_err *e)
{
    static const unsigned char zeros[4] = { 0, 0, 0, 0 };
    const qp_opts *o = r->o;
    qp_stream *s = &r->streams[i];
    const void *pre = o->iperf2 ? (const void *)zeros : (const void *)r->cookie;
    size_t prelen = o->iperf2 ? sizeof(zeros) : IPERF3_COOKIE_LEN;
    char msg[256];
    int fd, rc;

    fd = net_connect(&r->addr, o->connect_timeout_s, (int)o->window_bytes, o->congestion,
                     msg, sizeof(msg));
    if (fd < 0) {
        connect_error(r, fd, msg, e);
        return -1;
    }
    rc = net_write_all(fd, pre, prelen, net_now() + o->connect_timeout_s, msg, sizeof(msg));
    if (rc != NET_OK) {
        QP_ERR(e, rc == NET_ERR_INTR ? "interrupted" :
                  rc == NET_ERR_TIMEOUT ? "timeout" : "io", "data stream: %s", msg);
        if (rc == NET_ERR_IO && o->iperf2 && peer_closed(fd))
            closed_error(s->id, e);
        close(fd);
        return -1;
    }
    s->fd = fd;
    /* The kernel counts the SYN as one byte acked. */
    s->preamble_bytes = prelen + 1;
    if (i == 0)
        read_socket_facts(r, fd);
    return 0;
}

/* Open the first connection, trying each resolved address in turn (a name may
 * resolve to ::1 while the server listens on 127.0.0.1 only); 0 or -1. */
static int open_first(qp_run *r, const net_addr *addrs, int naddrs, qp_err *e)
{
    for (int i = 0; i < naddrs; i++) {
        r->addr = addrs[i];
        memset(e, 0, sizeof(*e));
        if (!r->o->iperf2) {
            r->ctrl = iperf3_open(&r->addr, r->o, r->cookie, &r->rd, e);
            if (r->ctrl >= 0)
                return 0;
        } else if (connect_stream(r, 0, e) == 0) {
            return 0;
        }
        if (strcmp(e->code, "connect_refused") != 0 && strcmp(e->code, "io") != 0)
            return -1;
    }
    return -1;
}

/* Resolve, open the control connection (iperf3) and the data streams; 0 or -1. */
static int setup(qp_run *r, qp_err *e)
{
    const qp_opts *o = r->o;
    net_addr addrs[8];
    char msg[256];
    int naddrs;

    naddrs = net_resolve(o->host, o->port, o->connect_timeout_s, addrs, 8, msg, sizeof(msg));
    if (naddrs == NET_ERR_INTR) {
        QP_ERR(e, "interrupted", "interrupted");
        return -1;
    }
    if (naddrs < 0) {
        QP_ERR(e, "dns", "%s", msg);
        return -1;
    }
    r->addr = addrs[0];
    /* getaddrinfo does not return early on a signal: honour one that came meanwhile. */
    if (net_interrupted) {
        QP_ERR(e, "interrupted", "interrupted");
        return -1;
    }
    /* Refuse before connecting: a silent fallback would measure another algorithm. */
    if (o->congestion && !tcpinfo_cc_available(o->congestion)) {
        cc_error(o->congestion, e);
        return -1;
    }
    if (!o->iperf2)
        iperf3_make_cookie(r->cookie);
    if (open_first(r, addrs, naddrs, e) < 0)
        return -1;
    for (int i = o->iperf2 ? 1 : 0; i < r->n; i++)
        if (connect_stream(r, i, e) < 0)
            return -1;
    out_start(r);
    r->start_printed = 1;
    if (!o->iperf2 && iperf3_wait_running(&r->rd, o->connect_timeout_s, e) < 0)
        return -1;
    return 0;
}

/* Shortest time an unmoving window must stay so before the drain believes the receiver
 * has read everything. A Linux receiver announces a grown window only when it doubles,
 * so the window cannot say "all read"; only its standing still can. Trusting a window
 * back at 90 % of the largest seen lost data whenever autotuning had grown the buffer
 * since (8 streams on a loaded box: 11 of 30 runs short, up to 2 %); waiting 20 ms
 * (or one RTT) of stillness lost none in 15. */
#define DRAIN_QUIET_MIN_S 0.02
#define DRAIN_POLL_NS 1000000L  /* the drain reads TCP_INFO every millisecond */
#define DRAIN_DUE_MARGIN_S 0.005 /* a quick answer's drain ends this long before its due time:
                                    the last poll's wake-up can overshoot its 1 ms sleep on a
                                    loaded host (the large matrix's 10 Mbit/s x 200 ms CUBIC
                                    quick run, cut with a margin of one poll, answered 0.72 ms
                                    after its deadline) */

/* 1 if stream s has nothing left in flight and its receiver has read what it got:
 * acked data can still sit in the server's buffer, and iperf3 drops it at TEST_END.
 * Reads show as the advertised window reopening: done when it has stopped moving for
 * quiet_s after everything was acked. *acked is cleared while data is still in flight. */
static int stream_drained(qp_stream *s, double now, double quiet_s, int *acked)
{
    qp_tcpinfo ti;
    char msg[128];

    if (tcpinfo_read(s->fd, &ti, msg, sizeof(msg)) < 0)
        return 1;
    if (ti.snd_wnd_bytes != s->drain_wnd_bytes) {
        s->drain_wnd_bytes = ti.snd_wnd_bytes;
        s->drain_wnd_t = now;
    }
    if (ti.notsent_bytes || ti.unacked_segments) {
        s->drain_wnd_t = now;       /* stillness counts from the last ACK on */
        *acked = 0;
        return 0;
    }
    return now - s->drain_wnd_t >= quiet_s;
}

/* Wait (bounded) until every stream's written data is acked and read, so the
 * server's byte count agrees with ours; returns when the last byte was acked (the end
 * of the transfer: the quiet wait for the server's reads after it moves no data). */
static double drain(qp_run *r)
{
    uint32_t rtt_us = 0;
    uint64_t queued = 0;
    double now = net_now(), limit, rate, quiet_s, deadline, acked_t = 0;

    for (int i = 0; i < r->n; i++) {
        qp_stream *s = &r->streams[i];

        if (s->ti.rtt_us > rtt_us)
            rtt_us = s->ti.rtt_us;
        queued += stream_sent(s) - s->acked;
        s->drain_wnd_bytes = s->ti.snd_wnd_bytes;
        s->drain_wnd_t = now;
    }
    /* Enough for what is queued at the rate seen so far, twice over, up to
     * run_drain_max_s. */
    rate = r->last_t > 0 ? (double)r->last_acked / r->last_t : 0;
    limit = fmax(0.3, 4.0 * rtt_us / 1e6);
    if (rate > 0)
        limit = fmax(limit, 2.0 * (double)queued / rate);
    limit = fmin(limit, run_drain_max_s(r->o));
    /* A quick answer is promised by its deadline: the window closed the drain's foreseen time
     * before it, and a drain that takes longer (a tail loss repaired by a timeout that backs
     * off) ends there, so the server's count falls short instead of the answer coming late;
     * a little early, for the last poll's reads and wake-up (DRAIN_DUE_MARGIN_S). */
    if (r->o->mode == MODE_QUICK && r->out.quick_answered)
        limit = fmin(limit, fmax(r->o->sample_ms / 1000.0,
                                 qw_due_t(&r->qw) - (now - r->t0) - DRAIN_DUE_MARGIN_S));
    deadline = now + limit;
    quiet_s = fmax(DRAIN_QUIET_MIN_S, rtt_us / 1e6);
    while ((now = net_now()) < deadline) {
        int clear = 1, acked = 1;

        for (int i = 0; i < r->n; i++)
            clear &= stream_drained(&r->streams[i], now, quiet_s, &acked);
        if (!acked)
            acked_t = 0;
        else if (acked_t == 0)
            acked_t = now;
        if (clear)
            break;
        /* never past the limit: a quick answer's drain ends at its deadline, not a poll after */
        nanosleep(&(struct timespec){ 0, (long)fmin(DRAIN_POLL_NS, (deadline - now) * 1e9) }, NULL);
    }
    return acked_t > 0 ? acked_t : now;
}

/* CPU use of this process since the start, as user / system percent of wall time. */
static void cpu_pct(const qp_run *r, double elapsed, double *user, double *sys)
{
    struct rusage ru;

    *user = *sys = 0;
    if (elapsed <= 0 || getrusage(RUSAGE_SELF, &ru) < 0)
        return;
    *user = 100.0 * ((double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 - r->cpu_user0)
            / elapsed;
    *sys = 100.0 * ((double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6 - r->cpu_sys0)
           / elapsed;
}

/* Exchange results with the iperf3 server and record its byte counts; 0 or -1. */
static int finish_iperf3(qp_run *r, qp_err *e)
{
    iperf3_own_stream own[QP_MAX_STREAMS];
    iperf3_results *srv = calloc(1, sizeof(*srv));
    double user, sys;
    char *json = NULL;
    int rc = -1;

    if (!srv) {
        QP_ERR(e, "io", "out of memory");
        return -1;
    }
    cpu_pct(r, r->out.elapsed_s, &user, &sys);
    for (int i = 0; i < r->n; i++) {
        own[i].id = r->streams[i].id;
        own[i].bytes = r->streams[i].sent;
        own[i].retransmits = r->streams[i].ti.total_retrans;
        own[i].end_time_s = r->out.elapsed_s;
    }
    json = iperf3_results_json(own, r->n, user, sys, r->congestion);
    if (!json) {
        QP_ERR(e, "io", "out of memory");
        goto fail;
    }
    if (iperf3_finish(r->ctrl, &r->rd, json, r->n, r->o->connect_timeout_s, srv, e) < 0)
        goto fail;
    r->out.server_bytes = (int64_t)srv->total_bytes;
    for (int i = 0; i < srv->nstreams; i++)
        for (int k = 0; k < r->n; k++)
            if (r->streams[k].id == srv->streams[i].id)
                r->streams[k].server_bytes = (int64_t)srv->streams[i].bytes;
    rc = 0;
fail:
    free(json);
    free(srv);
    return rc;
}

/* Stop the senders, drain, take the final counters and end the protocol; 0 or -1. */
static int finish(qp_run *r, qp_err *e)
{
    sigset_t block, old;
    char msg[256];
    int rc = 0;

    /* A signal now would throw away a finished measurement; every wait below has
     * its own deadline, so hold signals until the result is in. */
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    out_phase("finishing", net_now() - r->t0);
    sender_stop(r);
    /* The run's figure is over the time its bytes took: from the first write to the
     * last ACK, as the server sees them arrive; the quiet wait for its reads is not in. */
    r->out.elapsed_s = drain(r) - r->t0;
    measure_final(r);
    measure_last_interval(r);
    if (!r->o->iperf2)
        rc = finish_iperf3(r, e);
    else
        iperf2_finish(r, r->o->connect_timeout_s, msg, sizeof(msg));
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

/* Connect and run the whole test, printing events; 0 or -1 with e set. */
int run_test(qp_run *r, qp_err *e)
{
    struct rusage ru;
    int rc;

    if (setup(r, e) < 0) {
        if (e->code && strcmp(e->code, "interrupted") == 0)
            QP_ERR(e, "interrupted", "interrupted by a signal before any data was sent");
        return -1;
    }
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        r->cpu_user0 = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
        r->cpu_sys0 = (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    }
    measure_begin(r);
    if (sender_start(r, e) < 0)
        return -1;
    rc = measure_loop(r, e);
    if (rc < 0) {
        sender_stop(r);
        classify_send_failure(r, e);
        return -1;
    }
    if (r->out.interrupted && sender_written(r) == 0) {
        sender_stop(r);
        QP_ERR(e, "interrupted", "interrupted before any data was sent");
        return -1;
    }
    return finish(r, e);
}
