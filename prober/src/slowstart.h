/* slowstart.h: end-of-slow-start detection, a pure function of TCP_INFO samples.
 *
 * The detector is fed every sample of one stream (every --sample-ms) and decides
 * for itself which samples are its "polls": the paper (Tirumala, Cottrell, Dunigan,
 * PAM 2003, Figure 2) polls smoothed RTT every 20 ms until valid, then cwnd every
 * 2 x RTT. It never reads a clock or a socket, so it is unit-tested on synthetic
 * series (prober/tests/test_slowstart.c). */
#ifndef QP_SLOWSTART_H
#define QP_SLOWSTART_H

#include <stdint.h>

/* One TCP_INFO reading of one stream, in the units the names say. */
typedef struct {
    double t_s;                 /* seconds since the test started */
    uint64_t cwnd_bytes;        /* tcpi_snd_cwnd * tcpi_snd_mss */
    uint64_t ssthresh_bytes;    /* 0 when the kernel reports "never set" */
    uint32_t rtt_us;            /* smoothed RTT; 0 = not valid yet */
    uint32_t rttvar_us;
    uint32_t mss_bytes;         /* tcpi_snd_mss */
    uint64_t delivery_rate_bps; /* tcpi_delivery_rate * 8 */
    uint64_t bytes_acked;
    uint32_t total_retrans;
    /* Optional (0 = unknown; added after the first version, so older callers that
     * initialise by field name keep working unchanged): */
    uint32_t bbr_pacing_gain;   /* TCP_CC_INFO tcp_bbr_info.bbr_pacing_gain (x256) */
    uint32_t ca_state;          /* tcpi_ca_state: 0 Open (or unknown), 1 Disorder, 2 CWR,
                                   3 Recovery, 4 Loss */
} ss_sample;

#define SS_CA_LOSS 4                /* tcpi_ca_state after a retransmission timeout */

/* Which rule ended slow-start. Names match the JSON "rule" strings. */
typedef enum {
    SS_RULE_NONE = 0,
    SS_RULE_PAPER_CWND_STABLE,  /* old >= 4 MSS and |new - old| < 3 MSS over 2 x RTT */
    SS_RULE_PAPER_SMALL_CWND,   /* old < 4 MSS and new == old */
    SS_RULE_SSTHRESH_SET,       /* kernel set ssthresh (loss, HyStart) and cwnd >= ssthresh,
                                   with no cwnd reduction (recovery) under way; or a
                                   retransmission timeout set it (ca_state Loss) */
    SS_RULE_BBR_PLATEAU,        /* BBR startup over: the kernel's own verdict when
                                   bbr_pacing_gain is known, or delivery rate grew < 25 %
                                   over 3 rounds, loss recoveries or not */
    SS_RULE_STREAMS_PLATEAU     /* several BBR streams (ss_sum_*, ss_streams_left): all but
                                   one have left slow-start and their summed delivery grew
                                   < 25 % over 3 rounds; the pipe is full, and the one still
                                   in startup takes share from the others, not more from
                                   the path */
} ss_rule;

/* Which rules the detector may use. */
typedef enum {
    SS_ALGO_PAPER = 0,  /* Figure 2 only, exactly as published */
    SS_ALGO_AUTO        /* Figure 2 plus the kernel-state rules suited to the cc in use */
} ss_algo;

/* Congestion control family of the stream (from TCP_CONGESTION). */
typedef enum { SS_CC_RENO = 0, SS_CC_CUBIC, SS_CC_BBR, SS_CC_OTHER } ss_cc;

/* Detector state for one stream; all fields private to slowstart.c. */
typedef struct {
    ss_algo algo;
    ss_cc cc;
    int done;
    ss_rule rule;
    double end_t_s;
    uint64_t end_cwnd_bytes;
    /* paper rule: the last poll (poll_cwnd_bytes is the paper's new_cwnd) */
    int have_poll;
    double poll_t_s;
    uint64_t poll_cwnd_bytes;
    uint32_t poll_rtt_us;
    uint64_t poll_bytes_acked;
    uint64_t poll_rate_bps;
    /* bbr rule: per round (one RTT of sample time) the highest rate seen in it */
    double round_t_s;
    uint64_t round_max_rate_bps;
    double best_rate_bps;
    int rounds_without_growth;
    uint64_t prev_cwnd_bytes;   /* cwnd and retransmission count of the previous sample */
    uint32_t prev_total_retrans;
    /* where the verdict came from, for tests and traces */
    long samples_fed;
    long end_sample_index;
} ss_detector;

/* The streams' summed delivery, for when several streams together left slow-start; all
 * fields private to slowstart.c. */
typedef struct {
    int have_round;
    double round_t_s;
    uint64_t round_acked_bytes;
    double best_rate_bps;
    int rounds_without_growth;
    int plateau;                /* 3 rounds without growth seen: final, as BBR's full pipe */
} ss_sum;

/* Initialise a detector for one stream. */
void ss_init(ss_detector *d, ss_algo algo, ss_cc cc);

/* Feed the next sample (t_s non-decreasing); returns the rule that fired on this
 * sample, or SS_RULE_NONE. Once a rule has fired, later samples return SS_RULE_NONE
 * and the detector's verdict stays as it was. */
ss_rule ss_feed(ss_detector *d, const ss_sample *s);

/* Initialise the streams' sum. */
void ss_sum_init(ss_sum *m);

/* Feed the streams' summed bytes_acked at t_s (non-decreasing) with the largest smoothed RTT
 * among them (0 = none valid yet); returns 1 once the summed delivery rate has grown by less
 * than 25 % for 3 rounds in a row (final, like BBR's full-pipe verdict). */
int ss_sum_feed(ss_sum *m, double t_s, uint64_t acked_bytes, uint32_t rtt_us);

/* 1 if streams streams, done of them out of slow-start, have left it together: every one
 * has, or (sum_plateau: their summed delivery stopped growing, ss_sum_feed) all but one. */
int ss_streams_left(int streams, int done, int sum_plateau);

/* 1 if slow-start is over for this stream. */
int ss_done(const ss_detector *d);

/* The rule that ended slow-start (SS_RULE_NONE while still in it). */
ss_rule ss_end_rule(const ss_detector *d);

/* t_s and cwnd of the sample on which the rule fired (0 while still in slow-start). */
double ss_end_t_s(const ss_detector *d);
uint64_t ss_end_cwnd_bytes(const ss_detector *d);

/* 0-based index (count of samples fed before it) of the deciding sample, -1 if none. */
long ss_end_sample_index(const ss_detector *d);

/* The rule's JSON name ("paper_cwnd_stable", ...), "none" for SS_RULE_NONE. */
const char *ss_rule_name(ss_rule r);

/* Map a TCP_CONGESTION name ("bbr", "cubic", "reno", ...) to its family. */
ss_cc ss_cc_from_name(const char *name);

#endif
