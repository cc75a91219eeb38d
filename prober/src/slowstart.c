/* slowstart.c: end-of-slow-start detection (see slowstart.h).
 *
 * SS_ALGO_PAPER is Figure 2 of Tirumala, Cottrell, Dunigan (PAM 2003) as published.
 * SS_ALGO_AUTO adds the kernel's own verdicts (ssthresh for Reno / CUBIC and any other
 * loss-based cc; for BBR its startup state from TCP_CC_INFO when the caller has it, else
 * an emulation of BBR's full-bandwidth test on tcpi_delivery_rate) and guards the paper
 * rule where it fires too early (idle streams; BBR's flat-while-estimating cwnd).
 *
 * Choices where the paper is silent:
 * - Footnote 4 ("RTT does not change drastically between polls"): a jump is a change
 *   by more than 2x either way between the two polls' smoothed RTTs, and it only voids
 *   the comparison when the polls are less than 2 x the larger RTT apart, i.e. when the
 *   jump really shrank the interval below the "2 x RTT" the rule reasons about. When the
 *   sampling period, not the RTT, spaces the polls (loopback: 30 -> 80 us wobble under a
 *   20 ms poll) the comparison still spans many RTTs and stays valid.
 * - A poll is due when t - last_poll >= 2 x RTT of the previous poll (20 ms before the
 *   RTT is valid), with 5 % slack: samples come from a periodic timer that fires a bit
 *   late, and without slack a 20.3 ms / 19.7 ms pair would skip a whole sample period.
 * - A zero cwnd is not a reading (no socket info yet): it never decides.
 */
#include "slowstart.h"

#include <string.h>

#define SS_PRE_RTT_POLL_S 0.020   /* the paper's poll period until RTT is valid */
#define SS_POLL_SLACK 0.95        /* timer-jitter slack on "interval elapsed" */
#define SS_RTT_JUMP_FACTOR 2.0    /* footnote 4: "drastically" = more than 2x */
#define SS_BBR_GROWTH 1.25        /* BBR's full-bw threshold: 25 % growth */
#define SS_BBR_ROUNDS 3           /* ... not reached in 3 consecutive rounds */

/* Initialise a detector for one stream. */
void ss_init(ss_detector *d, ss_algo algo, ss_cc cc)
{
    memset(d, 0, sizeof *d);
    d->algo = algo;
    d->cc = cc;
    d->rule = SS_RULE_NONE;
    d->end_sample_index = -1;
}

/* Record the verdict of the sample being fed. */
static ss_rule ss_decide(ss_detector *d, const ss_sample *s, ss_rule r)
{
    d->done = 1;
    d->rule = r;
    d->end_t_s = s->t_s;
    d->end_cwnd_bytes = s->cwnd_bytes;
    d->end_sample_index = d->samples_fed;
    return r;
}

/* 1 while the kernel repairs losses (CWR, Recovery, Loss). A Reno / CUBIC verdict waits for
 * the reduction to end (see ss_ssthresh_test). A BBR one does not: BBR ignores loss, and a
 * BBR startup that overshoots a small buffer can have a recovery in every round for
 * seconds while its delivery rate is flat (a plateau all the same). The cumulative-ACK
 * jump a recovery causes when its holes fill is the quick window's business: it starts
 * measuring outside recoveries and counts SACKed bytes as delivered (quickwin.h). */
static int ss_in_recovery(const ss_sample *s)
{
    return s->ca_state >= 2;
}

/* 1 if this sample is one of the paper's polls (2 x previous RTT, or 20 ms, elapsed). */
static int ss_poll_due(const ss_detector *d, const ss_sample *s)
{
    double interval = d->poll_rtt_us > 0 ? 2.0 * d->poll_rtt_us / 1e6 : SS_PRE_RTT_POLL_S;
    double last = d->have_poll ? d->poll_t_s : 0.0;
    return s->t_s - last >= interval * SS_POLL_SLACK;
}

/* Footnote 4: 1 if the RTT changed so much between the polls that the comparison is void. */
static int ss_rtt_jumped(const ss_detector *d, const ss_sample *s)
{
    double lo, hi;
    if (d->poll_rtt_us == 0)   /* first valid RTT: nothing to compare against */
        return 0;
    lo = d->poll_rtt_us < s->rtt_us ? d->poll_rtt_us : s->rtt_us;
    hi = d->poll_rtt_us < s->rtt_us ? s->rtt_us : d->poll_rtt_us;
    if (hi <= SS_RTT_JUMP_FACTOR * lo)
        return 0;
    return s->t_s - d->poll_t_s < (2.0 * hi / 1e6) * SS_POLL_SLACK;
}

/* Figure 2's test on old_cwnd / new_cwnd: the rule that fires, or SS_RULE_NONE. */
static ss_rule ss_paper_test(uint64_t old_cwnd, uint64_t new_cwnd, uint32_t mss)
{
    uint64_t diff = new_cwnd > old_cwnd ? new_cwnd - old_cwnd : old_cwnd - new_cwnd;
    if (new_cwnd == 0 || mss == 0)
        return SS_RULE_NONE;
    if (old_cwnd >= 4ull * mss && diff < 3ull * mss)
        return SS_RULE_PAPER_CWND_STABLE;
    if (old_cwnd < 4ull * mss && diff == 0)
        return SS_RULE_PAPER_SMALL_CWND;
    return SS_RULE_NONE;
}

/* AUTO guards on a paper verdict; 1 if the flat cwnd may be believed. */
static int ss_paper_guards_pass(const ss_detector *d, const ss_sample *s)
{
    /* A cwnd only grows while it is used: an idle or application-limited stream
     * (loopback before the sender gets going) keeps a flat cwnd in slow-start. Over
     * 2 x RTT a window-limited stream gets about two windows acked; ask for half of one. */
    if (s->bytes_acked < d->poll_bytes_acked + d->poll_cwnd_bytes / 2)
        return 0;
    /* A cwnd held flat in the middle of a loss recovery (PRR pausing) is no plateau. */
    if (ss_in_recovery(s))
        return 0;
    /* BBR's cwnd is cwnd_gain x its bandwidth estimate x min RTT: it goes flat whenever
     * the estimate pauses for a round in mid-startup, so a flat BBR cwnd says little.
     * BBR's own plateau test (which also sees an rwnd-limited flat rate) decides while
     * the delivery rate is known; the paper rule stands in when it is not. */
    if (d->cc == SS_CC_BBR && (s->delivery_rate_bps > 0 || d->poll_rate_bps > 0))
        return 0;
    return 1;
}

/* One poll of Figure 2; updates the poll state and returns the rule that fired. */
static ss_rule ss_paper_poll(ss_detector *d, const ss_sample *s)
{
    ss_rule r = SS_RULE_NONE;
    if (s->rtt_us > 0 && !ss_rtt_jumped(d, s)) {
        r = ss_paper_test(d->poll_cwnd_bytes, s->cwnd_bytes, s->mss_bytes);
        if (r != SS_RULE_NONE && d->algo == SS_ALGO_AUTO && !ss_paper_guards_pass(d, s))
            r = SS_RULE_NONE;
    }
    d->have_poll = 1;
    d->poll_t_s = s->t_s;
    d->poll_cwnd_bytes = s->cwnd_bytes;
    d->poll_rtt_us = s->rtt_us;
    d->poll_bytes_acked = s->bytes_acked;
    d->poll_rate_bps = s->delivery_rate_bps;
    return r;
}

/* The kernel left slow-start itself: ssthresh set (loss, HyStart) and cwnd has reached it,
 * and no cwnd reduction is under way; or a retransmission timeout set it. */
static ss_rule ss_ssthresh_test(const ss_detector *d, const ss_sample *s)
{
    /* BBR never sets ssthresh; a value there comes from the tcp_metrics cache of an
     * earlier Reno / CUBIC connection to the same host and means nothing to BBR. */
    if (d->cc == SS_CC_BBR)
        return SS_RULE_NONE;
    if (s->ssthresh_bytes == 0 || s->cwnd_bytes == 0)
        return SS_RULE_NONE;
    /* A retransmission timeout (ca_state Loss) set ssthresh and restarted cwnd from one
     * packet: the climb back to ssthresh is its loss recovery, not slow-start, and a
     * stream starved into timeouts never finishes it (several streams sharing a path of
     * fewer than two packets each: one stream of eight CUBIC streams on 10 Mbit/s x 8 ms
     * stayed in Loss, cwnd 1 below an ssthresh of 7, for all 20 s, and no run entered quick
     * mode). The quick window waits out recoveries before it measures (quickwin.h). */
    if (s->ca_state == SS_CA_LOSS)
        return SS_RULE_SSTHRESH_SET;
    if (s->cwnd_bytes < s->ssthresh_bytes)
        return SS_RULE_NONE;
    /* Right after a loss PRR still holds cwnd above the new ssthresh and brings it down
     * over the recovery: a quick window opened then measures the recovery, not the path
     * (on the lab's caltech and dial-up paths that cost 13 and 23 %). Wait until the
     * reduction is over: the kernel's ca_state says so when the caller supplies it; a
     * retransmission or a fall of cwnd since the last sample say so always (the first
     * sample after a loss may even show cwnd still rising, but never a quiet repair). */
    if (ss_in_recovery(s) || s->cwnd_bytes < d->prev_cwnd_bytes ||
        s->total_retrans != d->prev_total_retrans)
        return SS_RULE_NONE;
    return SS_RULE_SSTHRESH_SET;
}

/* BBR's own verdict from TCP_CC_INFO: startup is the only state pacing at more than 2x. */
static ss_rule ss_bbr_kernel_test(const ss_sample *s)
{
    /* Startup paces at 2/ln2 (739/256); drain, probe_bw and probe_rtt at most 1.25. */
    return s->bbr_pacing_gain < 2u * 256u ? SS_RULE_BBR_PLATEAU : SS_RULE_NONE;
}

/* One round of BBR's full-pipe test (tcp_bbr.c, bbr_check_full_bw_reached): a rate 25 % over
 * the best so far becomes the best and restarts the count, any other round adds to it; 1
 * once SS_BBR_ROUNDS rounds in a row did not grow. Shared by one stream's test and
 * the streams' sum's. */
static int round_without_growth(double *best, int *rounds, double rate)
{
    if (rate >= SS_BBR_GROWTH * *best) {
        *best = rate;
        *rounds = 0;
        return 0;
    }
    return ++*rounds >= SS_BBR_ROUNDS;
}

/* BBR's full-bandwidth test, one round per RTT of sample time: the kernel's own verdict
 * when TCP_CC_INFO gives it, and in any case a delivery rate that stopped growing by 25 %
 * for three rounds, application-limited or not. The kernel skips rounds whose rate samples
 * are app-limited: for an application with less to send they understate the path. A bulk
 * sender is app-limited only when its socket buffer holds no unsent packet, every byte it
 * may queue in flight: tcp_wmem's top (4 MB on a stock host), or -w. That limit holds for
 * the whole run, so a flat rate under it is the run's plateau; the kernel, skipping those
 * rounds, can stay in STARTUP until PROBE_RTT at 10 s: 400 Mbit/s x 200 ms with a 2-BDP
 * buffer and a 32 MB tcp_wmem ran at the link's rate from 2.4 s and left STARTUP at 10 s,
 * and so did 100 Mbit/s x 200 ms with a stock 4 MB one. */
static ss_rule ss_bbr_test(ss_detector *d, const ss_sample *s)
{
    uint64_t rate;
    int full;

    if (d->cc != SS_CC_BBR)
        return SS_RULE_NONE;
    if (s->bbr_pacing_gain != 0 && ss_bbr_kernel_test(s) != SS_RULE_NONE)
        return SS_RULE_BBR_PLATEAU;
    /* Without an RTT there are no rounds, and a zero rate is "not measured yet" (the
     * kernel skips such rounds too), so neither may count as a round without growth. */
    if (s->rtt_us == 0 || s->delivery_rate_bps == 0)
        return SS_RULE_NONE;
    /* tcpi_delivery_rate is the latest single rate sample, not BBR's max filter: on a
     * long path several samples fall in one round and one of them may be an
     * application-limited dip, so a round is judged by its best sample. */
    if (s->delivery_rate_bps > d->round_max_rate_bps)
        d->round_max_rate_bps = s->delivery_rate_bps;
    if (d->best_rate_bps != 0 && s->t_s - d->round_t_s < SS_POLL_SLACK * s->rtt_us / 1e6)
        return SS_RULE_NONE;
    rate = d->round_max_rate_bps;
    d->round_t_s = s->t_s;
    d->round_max_rate_bps = 0;
    full = round_without_growth(&d->best_rate_bps, &d->rounds_without_growth, (double)rate);
    return full ? SS_RULE_BBR_PLATEAU : SS_RULE_NONE;
}

/* Feed the next sample; returns the rule that fired on it, or SS_RULE_NONE. */
ss_rule ss_feed(ss_detector *d, const ss_sample *s)
{
    ss_rule r = SS_RULE_NONE;
    if (d->done)
        return SS_RULE_NONE;
    if (d->algo == SS_ALGO_AUTO) {
        r = ss_ssthresh_test(d, s);
        if (r == SS_RULE_NONE)
            r = ss_bbr_test(d, s);
    }
    /* The poll state advances on every due sample even when another rule fired, so a
     * verdict does not depend on which rule was asked first. */
    if (ss_poll_due(d, s)) {
        ss_rule p = ss_paper_poll(d, s);
        if (r == SS_RULE_NONE)
            r = p;
    }
    if (r != SS_RULE_NONE)
        ss_decide(d, s, r);
    d->prev_cwnd_bytes = s->cwnd_bytes;
    d->prev_total_retrans = s->total_retrans;
    d->samples_fed++;
    return r;
}

/* Initialise the streams' sum. */
void ss_sum_init(ss_sum *m)
{
    memset(m, 0, sizeof *m);
}

/* BBR's full-pipe test on the streams' sum: a round is the largest smoothed RTT among them
 * (the queue's RTT, which slow-start's doubling runs on), its rate the bytes all of them
 * delivered in it. A stream's own exit says only that its share stopped growing; several
 * streams' slow-start ends when their sum stops growing. */
int ss_sum_feed(ss_sum *m, double t_s, uint64_t acked_bytes, uint32_t rtt_us)
{
    double rate;

    if (m->plateau)
        return 1;
    if (rtt_us == 0)
        return 0;
    if (!m->have_round) {
        m->have_round = 1;
        m->round_t_s = t_s;
        m->round_acked_bytes = acked_bytes;
        return 0;
    }
    if (t_s - m->round_t_s < SS_POLL_SLACK * rtt_us / 1e6)
        return 0;
    rate = acked_bytes > m->round_acked_bytes
               ? (double)(acked_bytes - m->round_acked_bytes) * 8.0 / (t_s - m->round_t_s) : 0.0;
    m->round_t_s = t_s;
    m->round_acked_bytes = acked_bytes;
    m->plateau = round_without_growth(&m->best_rate_bps, &m->rounds_without_growth, rate);
    return m->plateau;
}

/* Several streams are out of slow-start together when all are, or when their sum has filled
 * the pipe and every one but one has left: that one trades share with the others. Not when
 * several are still in it: a window that opens with streams in BBR's startup waits out
 * their loss recoveries and answers on what is left of it (a held-out draw, 8 streams on
 * 20 Mbit/s x 200 ms with on / off cross traffic, lost 2 of 2 runs opening at half out). */
int ss_streams_left(int streams, int done, int sum_plateau)
{
    if (streams < 1 || done < 1)
        return 0;
    return done >= streams || (sum_plateau && done >= streams - 1);
}

/* 1 if slow-start is over for this stream. */
int ss_done(const ss_detector *d)
{
    return d->done;
}

/* The rule that ended slow-start (SS_RULE_NONE while still in it). */
ss_rule ss_end_rule(const ss_detector *d)
{
    return d->rule;
}

/* Time of the deciding sample. */
double ss_end_t_s(const ss_detector *d)
{
    return d->end_t_s;
}

/* cwnd of the deciding sample. */
uint64_t ss_end_cwnd_bytes(const ss_detector *d)
{
    return d->end_cwnd_bytes;
}

/* Index of the deciding sample, -1 if none. */
long ss_end_sample_index(const ss_detector *d)
{
    return d->end_sample_index;
}

/* The rule's JSON name. */
const char *ss_rule_name(ss_rule r)
{
    switch (r) {
    case SS_RULE_PAPER_CWND_STABLE: return "paper_cwnd_stable";
    case SS_RULE_PAPER_SMALL_CWND: return "paper_small_cwnd";
    case SS_RULE_SSTHRESH_SET: return "ssthresh_set";
    case SS_RULE_BBR_PLATEAU: return "bbr_plateau";
    case SS_RULE_STREAMS_PLATEAU: return "streams_plateau";
    case SS_RULE_NONE: break;
    }
    return "none";
}

/* Map a TCP_CONGESTION name to its family. */
ss_cc ss_cc_from_name(const char *name)
{
    if (name == NULL)
        return SS_CC_OTHER;
    if (strcmp(name, "reno") == 0)
        return SS_CC_RENO;
    if (strcmp(name, "cubic") == 0)
        return SS_CC_CUBIC;
    if (strncmp(name, "bbr", 3) == 0)   /* bbr, bbr2, bbr3 share the startup test */
        return SS_CC_BBR;
    return SS_CC_OTHER;
}
