/* qwint.h: what the quick window's modules share (quickwin.c: the window, its slices,
 * batches and verdict; qwdue.c: when it answers; qwseen.c: what slow-start and BBR's gains
 * tell it; qwloss.c: a loss-based cc's sawtooth; qwbound.c: the answer's interval, qwfloor.c its
 * lower end for a loss-based cc, qwbbr.c
 * BBR's terms of it; qwlevel.c: changes of level and the flow's own transients; qwundo.c:
 * congestion events, counted and undone; qwshare.c: whether the standing queue is the
 * flow's own; qwspread.c: cwnd's spread under random loss; qwpredict.c: the run's figure;
 * qwstats.c: Student's t). Not for callers: they use quickwin.h. */
#ifndef QP_QWINT_H
#define QP_QWINT_H

#include "quickwin.h"

/* The stationarity thresholds, fixed shares of the rate and apart from --quick-tolerance (the
 * precision asked of the interval): a looser precision must not blind the window to a change
 * of level, nor a tighter one make it drop every wobble. 3 %: the default tolerance, at which
 * the window was tuned; a rate that moves less than that is read as one level. */
#define QW_STATIONARY 0.03      /* halves, a climb or BBR's estimate this far apart: a
                                   transient, dropped or waited out */
#define QW_BBR_GAIN_CYCLE 8     /* PROBE_BW: 8 phases, each about one min RTT (tcp_bbr.c) */
#define QW_BBR_PROBE_GAIN 1.25  /* ... the first paces at 1.25, one at 0.75, the rest at 1 */
#define QW_BBR_BW_ROUNDS 10     /* BBR's bandwidth filter: the largest delivery rate of this
                                   many rounds (tcp_bbr.c's bbr_bw_rtts, CYCLE_LEN + 2) */
#define QW_SLACK 0.95           /* timer-jitter slack on "one RTT elapsed" */
#define QW_ALPHA 0.05           /* the answer's interval: 95 % over its planned checks */
#define QW_CUBIC_C 0.4          /* RFC 9438: C, packets / s^3 */
#define QW_KERNEL_REORDERING 3  /* net.ipv4.tcp_reordering's default: tcpi_reordering until
                                   the kernel sees packets arrive further out of order */
#define QW_SSTHRESH_FLOOR 2     /* packets: the least ssthresh Reno and CUBIC set, and so the
                                   least cwnd outside a timeout (tcp_reno_ssthresh,
                                   cubictcp_recalc_ssthresh) */
#define QW_LEVEL_CHANGE 0.09    /* halves this far apart with the link full are the path
                                   changing (cross traffic), not noise: see
                                   level_changed_at_full_link() in qwlevel.c */

/* An MSS in bytes, or a 1500-byte frame's TCP payload with timestamps while no sample has
 * given one: packets are counted in it. */
static inline double qw_mss(uint32_t mss_bytes)
{
    return mss_bytes ? mss_bytes : 1448;
}

/* quickwin.c */
/* Sum the counted bytes and seconds of slices [b, e). */
void qw_unit_sum(const qw_window *w, int b, int e, double *bytes, double *secs);
/* 1 if slices [from, to) ran at a level the batches (rate r) do not. */
int qw_stretch_differs(const qw_window *w, int from, int to, const double *bytes,
                       const double *secs, int nb, double r);
/* 1 if BBR's bandwidth estimates, as the window reads them, carry the filter's memory. */
int qw_bw_filter_smooth(const qw_window *w);
/* qwseen.c: lower *floor_us to s's least smoothed RTT if that is smaller. */
void qw_srtt_floor(uint32_t *floor_us, const qw_sample *s);
/* The least smoothed RTT over the streams at s (0: none). */
uint32_t qw_srtt_lo(const qw_sample *s);
/* 1 if retransmissions between two samples (prev_retrans -> retrans) are a loss the cc
 * answered: inside a recovery (rec now, prev_rec before), with its ssthresh set anew, or any
 * for BBR (see qw_stream_event in quickwin.h). */
int qw_loss_answered(int prev_rec, int rec, uint32_t prev_retrans, uint32_t retrans,
                     int ssthresh_set, int bbr);
/* qwundo.c: keep the event state before a congestion event qw_count_events is about to
 * count (Reno, CUBIC), until its cut is known kept or undone. */
void qw_mark_event(qw_window *w);
/* Follow the streams' loss recoveries: when they last all left one (qw_window.recovery_end_t). */
void qw_track_recovery(qw_window *w, const qw_sample *s);
/* 1 if a congestion event at s, on a path whose reordering the kernel has learned, began in
 * or within two smoothed RTTs of another recovery. */
int qw_follows_recovery(const qw_window *w, const qw_sample *s);
/* Add s's streams' outcomes to the marked event; take it back once all undid their cut. */
void qw_settle_event(qw_window *w, const qw_sample *s);
/* 1 if the queue at a loss can tell a random loss from a full buffer's (qwundo.c). */
int qw_queue_tells_random(const qw_window *w);
/* Count a congestion event at its first sample and follow the queue it came at. */
void qw_count_events(qw_window *w, const qw_sample *s);
/* The standing queue in BDPs that a smoothed RTT of srtt_us shows. */
double qw_queue_at(const qw_window *w, uint32_t srtt_us);
/* The deepest standing queue seen in BDPs, slow-start's overshoot included. */
double qw_deepest_queue(const qw_window *w);
/* The standing queue in BDPs at s, from the largest smoothed RTT over the streams. */
double qw_queue_bdps(const qw_window *w, const qw_sample *s);
/* 1 if every counted slice kept a standing queue of 0.25 BDP at its lowest. */
int qw_link_busy(const qw_window *w);
/* Packets delivered since measuring began, in the largest MSS seen. */
double qw_packets_measured(const qw_window *w);
/* The window's parallel streams, at least 1. */
int qw_streams(const qw_window *w);

/* qwshare.c */
/* Follow s into the fit of the smoothed RTT against cwnd (before qw_count_events). */
void qw_track_share(qw_window *w, const qw_sample *s);
/* 1 if the queue was shown shared: the capacity seen is the flow's share, not the link's. */
int qw_queue_shared(const qw_window *w);
/* The share of a queue shown shared whose drain names a rate; 0 otherwise. */
double qw_drained_share(const qw_window *w);
/* The shared term's upper side (steady bytes/s over the run pr predicts); 0 if it does not
 * apply. */
double qw_shared_ceiling(const qw_window *w, const qw_prediction *pr);

/* qwspread.c */
/* The long-run share of the link that streams Reno / CUBIC flows (beta) keep at random loss
 * p per packet, a BDP of bdp_pkts, a buffer's top at top_bdps and a base round trip of
 * rtt_s: their cwnd played round by round (its spread, not its mean). */
double qw_spread_share(double beta, double p, double bdp_pkts, double top_bdps, int streams,
                       double rtt_s);

/* qwdue.c */
/* Keep the largest backlog of the last half to whole second (for the drain). */
void qw_track_backlog(qw_window *w, const qw_sample *s);
/* Bring the deadline forward to the latest time the window may close at s and still answer
 * by --quick-max-ms. */
void qw_update_deadline(qw_window *w, const qw_sample *s);
/* 1 if a loss among the bytes a run leaves in flight when its sender stops is likely. */
int qw_tail_loss_likely(const qw_window *w);
/* Plan the window's checks and the statistics term's level at each. */
void qw_plan_checks(qw_window *w);
/* Put the answer off to --quick-max-ms for a window whose rate changed level; 1 if it
 * is now due later than s. */
int qw_put_off(qw_window *w, const qw_sample *s);
/* 1 if the answer is due at t (the deadline, as it stands). */
int qw_past_deadline(const qw_window *w, double t);
/* 1 if a slice closing at t is a planned check (the deadline is one); moves the plan on. */
int qw_at_check(qw_window *w, double t);
/* The share of the run's figure its end may lose waiting for streams starved into
 * retransmission timeouts; 0 when the pipe holds two packets a stream. */
double qw_timeouts_share(const qw_window *w);

/* qwbound.c */
/* QW_HOLD_RANDOM_LOSS or QW_HOLD_SAWTOOTH while the lowest rate a loss-based cc's evidence
 * allows (qw_loss_floor) is further below the estimate than the tolerance, else
 * QW_HOLD_NONE. */
qw_hold qw_loss_floor_hold(const qw_window *w);
/* 1 if a loss-based cc's cwnd still grows towards a capacity the window has not seen
 * (qwbound.c's growth_ceiling applies). */
int qw_growing(const qw_window *w);
/* The largest rate (bytes/s) the receivers' windows allow when they held the rate; 0 if they
 * did not, or cannot open (qwbound.c). */
double qw_rwnd_ceiling(const qw_window *w);
/* The path's min RTT in seconds (the latest slice's smoothed RTT before one was seen). */
double qw_min_rtt_s(const qw_window *w);
/* The round trip with no queue in seconds (qw_no_queue_rtt_us; the latest slice's smoothed
 * RTT before it is known): what the lower ends and the answer divide cwnd by. */
double qw_no_queue_rtt_s(const qw_window *w);
/* 1 if the streams were mostly receiver- or send-buffer-limited since measuring began. */
int qw_mostly_limited(const qw_window *w);
/* Seconds from measuring's start to the latest slice's end; 0 before any slice. */
double qw_counted_s(const qw_window *w);

/* qwfloor.c */
/* Where cwnd peaks, in BDPs of bdp_bytes: the mean of the cuts' peaks, else 1 + the deepest
 * queue seen. */
double qw_peak_top(const qw_window *w, double bdp_bytes);
/* The random loss events the window saw, stream by stream or in the aggregate if more. */
uint32_t qw_random_loss_events(const qw_window *w);
/* The loss events the floor and the estimate's descent count: the random ones, or every one
 * where the queue cannot tell. */
uint32_t qw_floor_loss_events(const qw_window *w);
/* The random loss events less those that followed another recovery on a reordering path. */
uint32_t qw_random_losses_shown(const qw_window *w);
/* The loss-event rate per packet the floor's events leave open at 95 % (1 before a packet). */
double qw_random_loss_rate(const qw_window *w);
/* 1 if the floor is the spread's share of the rate the cycles measured: three or more whole
 * cycles at level peaks that did not all leave the link full. */
int qw_cycles_floor(const qw_window *w, double cap);
/* 1 if the kernel has learned that the path reorders and the window saw no cut it kept: the
 * buffer's first overflow may cut cwnd round after round. */
int qw_reorder_overflow(const qw_window *w);
/* The lowest steady rate (bytes/s) over the run pr predicts if that overflow comes as the
 * window closes: cwnd to the kernel's floor and back by the cc's law; 0 when it does not
 * apply. */
double qw_reorder_overflow_floor(const qw_window *w, const qw_prediction *pr);
/* 1 while that floor is further below the estimate than the tolerance (or the run's length
 * is not known): the window holds (QW_HOLD_REORDER_OVERFLOW). */
int qw_reorder_overflow_holds(const qw_window *w);

/* qwbbr.c */
/* 1 if a window of this many rounds (qw_bbr_rounds_counted) is shorter than a gain cycle. */
int qw_bbr_part_cycle(double rounds);
/* BBR: the min RTTs (rounds) the window counted; -1 when not BBR or no min RTT is known. */
double qw_bbr_rounds_counted(const qw_window *w);
/* BBR over part of a gain cycle: the least share of its rate the cycle's average may be. */
double qw_bbr_part_cycle_low(double rounds);
/* BBR at its deadline: the upper side if its bandwidth estimate still rose (0 if not). */
double qw_bbr_trend_ceiling(const qw_window *w, const qw_prediction *pr);

/* qwlevel.c */
/* Share of the counted slices [from, to) that held a standing queue; -1 for none. */
double qw_queued_share(const qw_window *w, int from, int to);
/* 1 if BBR was in PROBE_BW in every counted slice of [from, to) (PROBE_RTT left out). */
int qw_all_probe_bw(const qw_window *w, int from, int to);
/* 1 if BBR's bandwidth estimate rose over the counted part while not above its rate. */
int qw_bw_rising(const qw_window *w);
/* Count the slices from k on; after_loss: the counted part begins right after a cut. */
void qw_count_from(qw_window *w, int k, int after_loss);
/* 1 if every transient the window dropped was the flow's own climb. */
int qw_only_own_climbs(const qw_window *w);
/* BBR: keep the largest bandwidth estimate; mark the long-term bandwidth mode. */
void qw_track_cruise(qw_window *w, const qw_sample *s);
/* BBR: 1 if the counted slices ran a change of level away from STARTUP's plateau. */
int qw_plateau_differs(const qw_window *w);
/* After a slice whose gates held the window open: mark a change of level at a full link
 * (varying), or drop what was a transient. */
void qw_follow_level(qw_window *w, int full, double half_diff, int mid);

/* qwloss.c */
/* Whole sawtooth cycles of the window as [begin, end) slice pairs; returns the count. */
int qw_units_loss_cycles(const qw_window *w, int *ub, int *ue);
/* 1 if the slices after the last whole cycle (from on) ran faster than the cycles. */
int qw_tail_above_cycles(const qw_window *w, int from, double cycles_rate);
/* 1 if most counted slices of [from, to) held a queue that keeps the link full
 * through a cut. */
int qw_mostly_full(const qw_window *w, int from, int to);
/* 1 if the latest slice left the batches' level without a congestion event. */
int qw_last_slice_differs(const qw_window *w, const double *bytes, const double *secs,
                          int nb, double r);
/* 1 if the queue at s proves the link full now and through a cut. */
int qw_link_full(const qw_window *w, const qw_sample *s);
/* QW_HOLD_NONE if the window knows what the sawtooth does to the rate, else what it lacks. */
qw_hold qw_sawtooth_known(const qw_window *w, const qw_sample *s);

#endif
