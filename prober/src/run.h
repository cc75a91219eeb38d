/* run.h: one test run: the sender thread, the sampler, quick/full/validate logic. */
#ifndef QP_RUN_H
#define QP_RUN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "iperf3.h"
#include "net.h"
#include "opts.h"
#include "qperr.h"
#include "quickwin.h"
#include "slowstart.h"
#include "tcpinfo.h"

/* One data connection. */
typedef struct {
    int fd;
    int id;                         /* iperf3 stream id, or 1..N for iperf 2 */
    uint64_t preamble_bytes;        /* cookie / flags sent before the data */
    _Atomic uint64_t written;       /* data bytes handed to the kernel */
    atomic_int send_errno;          /* set by the sender when a write fails */
    qp_tcpinfo ti;                  /* latest sample */
    uint64_t acked;                 /* data bytes acked at the latest sample */
    uint64_t sent;                  /* data bytes written, read at the same sample: every
                                       figure of one event comes from one snapshot */
    uint32_t max_snd_wnd_bytes;     /* largest window the receiver advertised */
    uint64_t lowat_bytes;           /* TCP_NOTSENT_LOWAT set, 0 = kernel default */
    uint32_t drain_wnd_bytes;       /* window at the last change seen while draining */
    double drain_wnd_t;             /* when it last changed */
    int overshoot_recovery;         /* in a recovery begun in its slow-start */
    int ssthresh_set;               /* ssthresh set anew since the sample before */
    int began_event;                /* began a congestion event since it (qw_stream_event) */
    qw_cut_track cut_track;         /* its open congestion event */
    qw_cut cut;                     /* ... ended at this sample: kept or undone (qw_cut_step) */
    ss_detector det;
    ss_rule rule;                   /* rule that fired, SS_RULE_NONE until then */
    double ss_t;
    uint64_t ss_cwnd_bytes;
    int64_t server_bytes;           /* -1 = unknown */
    uint64_t iv_acked0;             /* acked / retransmits when the human interval began */
    uint32_t iv_retr0;
} qp_stream;

/* A stream's cwnd where the streams left slow-start: at its own exit, or now for one still in
 * it when their sum's plateau ended it (SS_RULE_STREAMS_PLATEAU). */
static inline uint64_t ss_exit_cwnd(const qp_stream *s)
{
    return s->rule != SS_RULE_NONE ? s->ss_cwnd_bytes : s->ti.cwnd_bytes;
}

/* Data bytes this stream wrote: the sender counts after send() returns, and loopback can
 * ack a block before that, so acked bytes are a floor. */
static inline uint64_t stream_sent(const qp_stream *s)
{
    uint64_t w = atomic_load_explicit(&((qp_stream *)s)->written, memory_order_relaxed);

    return w > s->acked ? w : s->acked;
}

/* A point of the aggregate acked-bytes history. */
typedef struct {
    double t;
    uint64_t acked;
} qp_point;

/* What the run found, everything the result event needs. */
typedef struct {
    int interrupted;
    double elapsed_s;
    uint64_t bytes_sent, bytes_acked;
    int64_t server_bytes;           /* -1 = unknown */
    int ss_ended;
    double ss_t;
    ss_rule ss_rule;
    int quick_entered;              /* the quick window has a measured length */
    int quick_converged;            /* ... and its estimate met --quick-tolerance */
    int quick_answered;             /* ... and quick_bps is the answer: it converged, or
                                       answered at its deadline (no --until-converged) */
    double quick_bps, quick_window_s;
    double quick_ci_frac;           /* 95 % half-width / quick_bps (the wider side of
                                       [quick_lo_bps, quick_hi_bps]), < 0 unknown */
    double quick_lo_bps, quick_hi_bps;  /* the answer's 95 % interval (qw_bound) */
    qw_bound_by quick_bound;        /* the evidence that set its wider side */
    double quick_steady_bps;        /* the window's own steady rate, and its interval */
    double quick_steady_ci_frac;
    int quick_batches;
    qw_basis quick_basis;
    double quick_excluded_s;        /* BBR PROBE_RTT time left out of the estimate */
    qw_hold quick_hold;             /* what kept the window open (QW_HOLD_NONE: converged) */
    double quick_end_t;             /* when the quick window closed */
    uint64_t quick_bytes_sent;      /* bytes written when it closed */
    uint32_t retransmits;
    uint32_t rtt_us, min_rtt_us;
} qp_outcome;

/* The whole run. */
typedef struct {
    const qp_opts *o;
    net_addr addr;
    char cookie[IPERF3_COOKIE_LEN];
    int ctrl;                       /* iperf3 control socket, -1 for iperf 2 */
    net_reader rd;
    int n;
    qp_stream *streams;
    char congestion[32];
    uint32_t mss_bytes;
    int window_given_bytes;
    double t0;                      /* monotonic time of the first data byte */
    int started;                    /* data phase reached */
    int start_printed;
    double cpu_user0, cpu_sys0;     /* rusage at the first data byte */
    double last_t;                  /* the latest sample */
    uint64_t last_acked, last_sent;
    atomic_int stop;                /* the sender's stop flag (sender.h) */
    pthread_t send_thread;          /* the one sender thread (sender.c) */
    int send_started;
    int send_ep, send_wake;         /* its epoll set and stop eventfd, -1 = none */
    char *send_buf;                 /* the 128 KiB block every stream writes */
    qp_point *ring;                 /* last 500 ms of aggregate acked bytes */
    int ring_cap, ring_len, ring_head;
    int quick_open, quick_closed;
    ss_sum ss_sum;                  /* the streams' summed delivery (several streams) */
    qw_ss_seen ss_seen;             /* what the samples before the quick window opened
                                       witnessed (qw_ss_see) */
    qw_window qw;                   /* the converging quick window (quickwin.h) */
    double next_interval_t, interval_t0;
    qp_outcome out;
} qp_run;

/* Prepare r for options o (no I/O); 0 or -1 with e set. */
int run_init(qp_run *r, const qp_opts *o, qp_err *e);

/* Connect and run the whole test, printing events; 0 or -1 with e set. */
int run_test(qp_run *r, qp_err *e);

/* The longest the end of a run waits for its written bytes to be acked, seconds. */
static inline double run_drain_max_s(const qp_opts *o)
{
    /* a receiver that stopped reading costs at most --connect-timeout */
    return o->connect_timeout_s > 0.3 ? o->connect_timeout_s : 0.3;
}

/* Close every socket and free r. */
void run_free(qp_run *r);

#endif
