/* quickwin.h: the converging quick window, a pure function of aggregate samples.
 *
 * After slow-start ends the window opens; it starts measuring at the first sample that is
 * not in a loss recovery and (BBR) not in DRAIN or PROBE_RTT. It cuts the measurement
 * into RTT-aligned slices, groups the slices into batches that each hold whole cycles of
 * what the congestion control does in steady state, and stops at the first of its planned
 * checks (after min_s of measuring, then every quarter of min_s, the deadline last) where
 * the confidence interval of the mean rate (batch means, ratio estimator, Student t, at a
 * level that sums to 95 % over the plan) is within the tolerance and nothing says the rate
 * is still moving.
 * It never reads a clock or a socket: prober/tests/test_quickwin.c feeds it series. */
#ifndef QP_QUICKWIN_H
#define QP_QUICKWIN_H

#include <stdint.h>

/* BBR's state machine as its gains show it (tcp_bbr.c, bbr_update_gains). */
typedef enum {
    QW_BBR_NONE = 0,    /* not BBR, or TCP_CC_INFO not read */
    QW_BBR_STARTUP,     /* pacing gain 2/ln2 (739/256) */
    QW_BBR_DRAIN,       /* pacing gain ln2/2 (88/256), cwnd gain still the startup one */
    QW_BBR_PROBE_BW,    /* cwnd gain 2, pacing gain cycling 1.25, 0.75, 1 x 6 */
    QW_BBR_PROBE_RTT    /* pacing and cwnd gain both 1 */
} qw_bbr_mode;

/* What the caller asks of the window. */
typedef struct {
    int bbr;                /* the congestion control is BBR (cycles of 8 min RTTs) */
    double tolerance;       /* CI half-width allowed, as a fraction of the rate (0.03) */
    double min_s;           /* the window spans at least this long (--quick-ms) */
    double max_s;           /* ... and answers at the latest this long after it opened
                               (qw_open brings it forward: qw_due_s) */
    double deadline_rtts;   /* ... or this many smoothed RTTs after it opened, if later than
                               min_s of measuring (0: max_s alone) */
    double sample_s;        /* sampling period: no slice is shorter */
    double base_rtt_s;      /* the path's min RTT when slow-start ended (0: not known) */
    double beta;            /* loss-based cc's multiplicative decrease (CUBIC 0.7, Reno 0.5) */
    int streams;            /* parallel streams the samples sum over */
    double full_s;          /* the run's length (-t) that the answer predicts (0: not known;
                               the random-loss hold then takes the long run alone) */
    int rwnd_fixed;         /* the receiver's buffer is fixed (iperf3 -w: the server sets
                               SO_RCVBUF, which stops its autotuning): a window it limits
                               stays where it is */
    double drain_max_s;     /* the longest the run's end waits for its last bytes to be acked
                               (run.c's drain: --connect-timeout, at least 0.3 s; 0: not
                               known, and qw_timeouts_share is 0) */
} qw_params;

/* RFC 7323: the largest window a receiver with window scale `scale` can advertise (14 is
 * the largest scale) */
#define QW_WINDOW_TOP(scale) ((uint64_t)65535 << (scale))

#define QW_BUSY_QUEUE 0.25      /* a standing queue this deep (BDPs) is one, not the min
                                   RTT's bias: the smoothed RTT averages delay jitter that
                                   the min RTT takes at its lowest (the lab's normal 2 ms
                                   jitter on 70 ms read 0.07-0.10 BDP of "queue" in
                                   slow-start's first rounds, the link nearly idle) */

/* One sample, summed (or worst) over the streams. */
typedef struct {
    double t_s;
    uint64_t delivered_bytes;   /* bytes acked + bytes SACKed (what the kernel counts as
                                   delivered: no stall during a loss recovery) */
    uint64_t cwnd_bytes;
    uint32_t rtt_us;            /* largest smoothed RTT */
    uint32_t rtt_lo_us;         /* smallest smoothed RTT (0: take rtt_us): every stream
                                   sees the bottleneck's queue, so this one is the least
                                   it can be */
    uint32_t min_rtt_us;        /* smallest min RTT (BBR's own when known) */
    uint32_t retrans;           /* total retransmissions so far */
    int in_recovery;            /* some stream in CWR, Recovery or Loss (ca_state >= 2) */
    int in_timeout;             /* some stream in a retransmission timeout (ca_state Loss) */
    int ssthresh_set;           /* some stream's cc set its ssthresh anew since the sample
                                   before (qw_ssthresh_set): it answered a loss */
    uint32_t stream_events;     /* streams that began a congestion event since the sample
                                   before (qw_stream_event), each counted: the aggregate's
                                   in_recovery merges overlapping ones (0: not known) */
    uint32_t cuts_kept;         /* streams whose congestion event ended at this sample with
                                   cwnd still reduced (qw_cut_step) */
    uint32_t cuts_undone;       /* ... and with the reduction undone: the kernel found the
                                   loss spurious (0 and 0: not known, every cut kept) */
    int overshoot_recovery;     /* some stream is still in a recovery it entered in its
                                   slow-start (qw_overshoot_step) */
    qw_bbr_mode bbr_mode;       /* the least steady mode over the streams */
    uint64_t bw_bps;            /* BBR's bandwidth estimates summed (0: not BBR / unknown) */
    int bbr_cruising;           /* every stream in PROBE_BW pacing at gain 1 (qw_bbr_cruising) */
    uint64_t limited_us;        /* rwnd- plus sndbuf-limited time so far, per stream
                                   (tcpi_rwnd_limited + tcpi_sndbuf_limited, averaged) */
    uint64_t rwnd_limited_us;   /* ... the receiver's window's part (tcpi_rwnd_limited) */
    uint64_t rwnd_bytes;        /* the receivers' windows, summed (tcpi_snd_wnd) */
    uint64_t rwnd_top_bytes;    /* the largest windows the receivers can advertise, summed
                                   (65535 << tcpi_snd_wscale each; 0: not known) */
    uint32_t mss_bytes;         /* largest MSS: delivered bytes in packets */
    uint32_t reordering_segments; /* largest tcpi_reordering over the streams: how far out
                                   of order the kernel has learned the path delivers, in
                                   packets (3, the kernel's default, until it sees more; 0
                                   not known) */
    uint64_t backlog_bytes;     /* what the streams must drain at the end, in bytes at their
                                   summed rate (qw_drain_bytes: the bytes written and not
                                   yet acked, socket buffer and flight, of the stream that
                                   finishes last, over its share of the rate) */
} qw_sample;

/* Why the window is (not yet) closed. */
typedef enum {
    QW_OPEN = 0,        /* keep measuring */
    QW_CONVERGED,       /* the estimate is within the tolerance */
    QW_GAVE_UP          /* max_s passed without converging */
} qw_state;

/* What kept the window open at its latest slice (QW_HOLD_NONE once it converged): the
 * first of converged()'s conditions that failed, in the order it tests them. */
typedef enum {
    QW_HOLD_NONE = 0,
    QW_HOLD_NOT_STARTED,    /* still in a recovery, DRAIN or PROBE_RTT after slow-start */
    QW_HOLD_FEW_BATCHES,    /* too few cycles or slices for an interval yet */
    QW_HOLD_SHORT,          /* shorter than --quick-ms (twice that after a second drop) */
    QW_HOLD_INTERVAL,       /* the interval is wider than the tolerance */
    QW_HOLD_HALVES,         /* the halves' rates differ by more than the tolerance */
    QW_HOLD_VARYING,        /* the rate changed level with the link full: cross traffic */
    QW_HOLD_TAIL,           /* the part after the last cut runs faster than the cycles */
    QW_HOLD_HEAD,           /* the dropped head ran at another level at a full link */
    QW_HOLD_LAST_SLICE,     /* the latest slice ran at another level */
    QW_HOLD_RECOVERY,       /* a loss recovery is under way */
    QW_HOLD_CLIMBING,       /* cwnd is climbing back to slow-start's exit level */
    QW_HOLD_SAWTOOTH,       /* neither level loss cycles nor a link kept full by the queue */
    QW_HOLD_LOSS_FREE,      /* too few loss-free packets to rule out random loss */
    QW_HOLD_PROBE_RTT,      /* BBR is in PROBE_RTT */
    QW_HOLD_BW_RISING,      /* BBR's bandwidth estimate is still rising */
    QW_HOLD_RANDOM_LOSS,    /* random loss not yet ruled out could hold the long-run rate
                               further below the estimate than the tolerance */
    QW_HOLD_GROWING,        /* loss-based cc: cwnd still grows with no standing queue and no
                               cut from the buffer's top: the link is not full yet, and the
                               rate rises with cwnd (qwbound.c, qw_growing) */
    QW_HOLD_LT_BW,          /* BBR held its long-term bandwidth (qw_window.lt_bw) further
                               below its bandwidth estimate from before than the tolerance */
    QW_HOLD_RWND,           /* the receiver's window held the rate, and may open further
                               above it than the tolerance (qwbound.c, qw_rwnd_ceiling) */
    QW_HOLD_TIMEOUTS,       /* the streams share a pipe of fewer than two packets each: some
                               is always in a retransmission timeout, and the run's end may
                               wait for it (qwdue.c, qw_timeouts_share) */
    QW_HOLD_REORDER_OVERFLOW,   /* the kernel has learned that the path reorders and the
                                   window saw no cut it kept: the buffer's first overflow may
                                   cost cut after cut (qwfloor.c, qw_reorder_overflow) */
    QW_HOLD_SHARED              /* the standing queue was shared with other traffic: the rate
                                   is a share, which may move (qwshare.c, qw_shared_ceiling) */
} qw_hold;

/* How the batches were formed. */
typedef enum { QW_BASIS_NONE = 0, QW_BASIS_TIME, QW_BASIS_LOSS_CYCLES, QW_BASIS_BBR_CYCLES } qw_basis;

#define QW_MAX_SLICES 2048
#define QW_MAX_BATCHES 10
#define QW_MAX_PEAKS 256

typedef struct {
    double t0, t1;
    uint64_t bytes;
    uint32_t events;        /* congestion events counted since the window started, at t1 */
    int excluded;           /* PROBE_RTT (or the round right after it): not steady state */
    double q_min;           /* smallest standing queue in it, in BDPs */
    double q_lo_min;        /* ... from the smallest smoothed RTT over the streams */
    int probe_bw;           /* BBR in PROBE_BW (every stream) throughout it */
    uint64_t bw_bps;        /* BBR's bandwidth estimate (summed) at its end, 0 unknown */
    uint64_t cwnd0_bytes;   /* cwnd (summed) at its start ... */
    uint64_t cwnd_bytes;    /* ... and at its end */
} qw_slice;

/* The current estimate (also valid while still open). */
typedef struct {
    double rate_bps;        /* 0 when there is no estimate yet */
    double ci_frac;         /* 95 % half-width / rate; < 0 when not computable */
    int batches;
    qw_basis basis;
    double counted_s;       /* time inside the batches */
    double excluded_s;      /* PROBE_RTT time left out */
    uint64_t start_bytes;   /* delivered before the counted window began */
} qw_estimate;

/* What a full run of full_s seconds would report (quickwin.c, qw_predict). */
typedef struct {
    double rate_bps;
    double ci_frac;         /* < 0 when the estimate has no interval */
    double end_frac;        /* the run's end and BBR's visits, a fraction of rate_bps: on
                               the figure, not the steady rate (part of ci_frac when the
                               window had batches, and there without them too) */
    double probe_rtt_s;     /* steady-rate seconds such a run loses to PROBE_RTT (BBR):
                               its visits' time x the share of the BDP that 4 packets a
                               stream leave unfilled */
    double steady_share;    /* d rate_bps / d steady rate: the share of the run's time that
                               the steady rate fills */
    double rest_s;          /* from the counted part's start to the run's end: the steady
                               rate's time, PROBE_RTT visits included */
    double tail_frac;       /* a loss among the run's last bytes, and the part of BBR's
                               visits counted as filled, a fraction of rate_bps: below the
                               figure only (part of ci_frac, as end_frac is) */
    double probe_rtt_filled_s; /* visit seconds probe_rtt_s leaves out, as filled by the 4
                               packets a stream: a pipe of a few packets may lose them too */
    double sampling_frac;   /* the rest of the run's sampling part of ci_frac, a fraction of
                               rate_bps (0 when ci_frac < 0) */
} qw_prediction;

/* The evidence that set the wider side of the answer's interval (qwbound.c). */
typedef enum {
    QW_BOUND_STATISTICS = 0,    /* the batches' scatter */
    QW_BOUND_SHORT,             /* too few batches: the quarters' spread */
    QW_BOUND_LEVELS,            /* the rate changed level: the levels seen */
    QW_BOUND_SAWTOOTH,          /* no whole sawtooth cycle: what a cut leaves of the link */
    QW_BOUND_RANDOM_LOSS,       /* random loss not yet ruled out: TCP's loss response */
    QW_BOUND_GROWING,           /* the link's capacity not reached: cwnd's growth law */
    QW_BOUND_LT_BW,             /* BBR's long-term bandwidth: it may return to its estimate */
    QW_BOUND_BBR_CYCLE,         /* BBR, less than a gain cycle measured: up to its estimate */
    QW_BOUND_BW_RISING,         /* BBR's estimate still rose at the deadline: its line */
    QW_BOUND_STALLED,           /* nothing delivered in the window: from none to slow-start's */
    QW_BOUND_RWND,              /* the receiver's window held the rate: up to its largest */
    QW_BOUND_REORDERING,        /* the kernel undid a cut (reordering): cwnd's growth law */
    QW_BOUND_TIMEOUTS,          /* the streams starve each other into retransmission
                                   timeouts: the run's end may wait out the drain's limit */
    QW_BOUND_REORDER_OVERFLOW,  /* the path reorders and no cut was seen: the first overflow
                                   may cut cwnd again each round (qw_reorder_overflow) */
    QW_BOUND_SHARED             /* the standing queue was shared: the flow's share may grow
                                   to the link's rate as the queue drained (qw_shared_ceiling) */
} qw_bound_by;

/* The answer's 95 % interval: steady-rate sides in bytes/s, the run's figure's in bits/s. */
typedef struct {
    double steady, lo, hi, width;
    double lo_bps, hi_bps;
    qw_bound_by by;
} qw_bounds;

/* The window's event state from just before a congestion event, while whether the kernel
 * keeps its cwnd reduction is not yet known (qwundo.c). */
typedef struct {
    int pending;                /* an event counted, its outcome not yet known */
    uint32_t kept, undone;      /* its streams' outcomes so far (qw_sample.cuts_kept, ...) */
    uint32_t events, random_events, random_stream_events, stream_events;
    uint32_t follow_events, follow_stream_events;
    double event_t, loss_queue;
    uint64_t cwnd_low_bytes, top_cut_bytes, run_peak, clean_from_bytes;
    int npeaks;
    int n;                      /* slices closed before it: later ones count it */
} qw_event_mark;

/* A growth period of a loss-based flow (qwshare.c): its samples' cwnd (bytes) and smoothed
 * RTT (s), from the RTT's lowest after a congestion event on, as offsets from that first
 * sample's (the sums then stay small beside the values). */
typedef struct {
    uint32_t n;
    double t0, t1;
    uint64_t x0, x_lo, x_hi;
    double y0_s;
    double sx, sy, sxx, sxy, syy;
} qw_share_period;

/* The fit of the smoothed RTT against cwnd over the window's growth periods (qwshare.c):
 * each period's own sums about its means, pooled, so the periods' levels drop out; points
 * counts the samples, rounds the smoothed RTTs they span (the samples' independent part). */
typedef struct {
    qw_share_period open;
    uint32_t periods, points;
    double rounds;
    double sxx, sxy, syy;
} qw_share;

#define QW_SHARED 0.6           /* a flow alone at a full link reads a share of the queue's
                                   drain of about 1 (0.69-1.52 on the kept runs alone); one
                                   against a steady competitor its share of the link
                                   (0.07-0.44 against BBR or CUBIC): under this, the queue
                                   drained at least 1.67 x the flow's rate */

/* Window state; fields private to quickwin.c. */
typedef struct {
    qw_params p;
    qw_state state;
    qw_hold hold;               /* what kept it open at its latest slice */
    double open_t, start_t, end_t;
    double deadline_t;          /* the window answers by this time, converged or not */
    double plan_t;              /* the answer as planned when measuring began (deadline_rtts
                                   rounds after opening, at least min_s of measuring); the
                                   drain as it stands at each sample may bring it forward */
    double next_check_t;        /* the next planned check (qw_plan_checks() in qwdue.c) */
    double check_step_s;        /* ... and the time between checks */
    double check_alpha;         /* the statistics term's level at a check before the deadline */
    double due_alpha;           /* ... at the deadline */
    int started;
    uint64_t start_delivered;   /* delivered when measuring began */
    double began_t;             /* ... and when (start_t moves on when a head is dropped) */
    uint64_t backlog_max[2];    /* the largest backlog_bytes of this half second and the one
                                   before it (drain_s: the sender refills in bursts) */
    double backlog_t0;          /* when backlog_max[0]'s half second began */
    uint64_t delivered_bytes;   /* delivered at the latest sample */
    uint64_t exit_cwnd_bytes;   /* cwnd where slow-start ended: the window must not end
                                   while cwnd climbs back to it (CUBIC after HyStart) */
    int start_after_loss;       /* the counted part begins right after a cwnd reduction */
    int open_after_loss;        /* ... as it did when the window opened */
    double slice_t0;
    uint64_t slice_bytes0, slice_cwnd0;
    uint32_t slice_rtt_us;
    int slice_probe_rtt, after_probe_rtt;
    uint32_t events, prev_retrans;
    uint32_t random_events;     /* congestion events not at the top of the buffer seen */
    uint32_t random_stream_events;  /* ... counted stream by stream (qw_sample.stream_events):
                                   with several streams one's recovery overlaps another's,
                                   and the aggregate counts them as one */
    uint32_t stream_events;     /* every congestion event, stream by stream, random or not */
    uint32_t follow_events;     /* of random_events, those on a path whose reordering the
                                   kernel has learned that began in or just after another
                                   recovery (qw_follows_recovery) */
    uint32_t follow_stream_events;  /* ... of random_stream_events */
    int any_recovery;           /* the latest sample fed had some stream in a recovery */
    double recovery_end_t;      /* when the streams last all left a recovery (open_t for a
                                   window opened after a loss), -1 none */
    int prev_recovery;
    qw_event_mark mark;         /* the latest event, until its cut is known kept or undone */
    uint32_t undone_events;     /* events whose cut the kernel undid: taken back (qwundo.c) */
    uint32_t min_rtt_us;
    int climbing;
    int bw_rising;              /* BBR's bandwidth estimate rose through the counted part */
    uint64_t bw_max_bps;        /* BBR: the largest bandwidth estimate since the window opened */
    double cruise_t;            /* BBR: since when every stream paces at gain 1 (-1: not) */
    int lt_bw;                  /* BBR: pacing at gain 1 for QW_LT_ROUNDS rounds, no gain
                                   cycle: tcp_bbr.c's long-term bandwidth (its policer mode),
                                   held up to 48 rounds, then the max filter's estimate again */
    uint64_t limited_us0;       /* limited_us when measuring started */
    uint64_t limited_us;        /* ... at the latest sample */
    uint64_t rwnd_limited_us0;  /* rwnd_limited_us when measuring started */
    uint64_t rwnd_limited_us;   /* ... at the latest sample */
    uint64_t rwnd_min_bytes;    /* the smallest rwnd_bytes since measuring started */
    uint64_t rwnd_max_bytes;    /* ... and the largest */
    uint64_t rwnd_top_bytes;    /* the latest sample's rwnd_top_bytes */
    uint32_t reordering_segments;   /* the latest sample's reordering_segments */
    double max_queue;           /* largest standing queue seen, in BDPs */
    uint32_t samples;           /* samples since measuring began */
    uint32_t timeout_samples;   /* ... with some stream in a retransmission timeout */
    uint32_t seen_rtt_us;       /* largest smoothed RTT before the window opened (over
                                   the streams: slow-start's overshoot), 0 unknown */
    uint64_t ss_bdp_bytes;      /* slow-start's least bound on the BDP, bytes (qw_seen_bdp),
                                   0 none */
    double ss_rate;             /* BBR: delivery rate over STARTUP's last rounds, bytes/s
                                   (qw_seen_plateau), 0 none */
    double ss_peak_rate;        /* the fastest sampling period of slow-start's latest samples
                                   (qw_seen), bytes/s: a rate the path carried */
    double ss_rate_top;         /* ... the most it can have read low, bytes/s: ss_rate over
                                   the share of its span the streams were not held back;
                                   0 when it may have read the ramp before them, or no
                                   standing queue showed the link full (it then only bounds
                                   the path's rate from below) */
    int ss_level_differs;       /* BBR: the window's rate and ss_rate differ by a change of
                                   level (qw_plateau_differs() in qwlevel.c) */
    uint64_t queue_cwnd_bytes;  /* smallest cwnd (summed) that a standing queue of
                                   QW_BUSY_QUEUE BDP over the smoothed RTT's floor was seen
                                   with, in congestion avoidance a round or more after a cut
                                   (0: none) */
    uint64_t top_cut_bytes;     /* smallest cwnd (summed) a congestion event at the top of
                                   a buffer cut (slow-start's exit for one at the window's
                                   first sample), 0 none */
    uint32_t srtt_floor_us;     /* smallest smoothed RTT the connection showed (over the
                                   streams' least): the RTT with no queue, which under
                                   jitter the min RTT (a single low draw) reads below by up
                                   to the jitter's range (0: none yet) */
    double event_t;             /* when the latest congestion event came (open_t before one) */
    uint64_t cwnd_low_bytes;    /* smallest cwnd (summed) since then or since measuring began */
    double loss_queue;          /* smallest queue at a congestion event, in BDPs */
    qw_share share;             /* is the standing queue the flow's own? (qwshare.c) */
    uint64_t clean_from_bytes;  /* delivered when the last loss or recovery was seen */
    uint32_t mss_bytes;
    int drops;                  /* transients dropped from the window's start */
    int climb_drops;            /* ... of them the flow's own climb (own_climb) */
    int varying;                /* the rate changed level with the link full throughout */
    int stalled;                /* nothing was delivered over the counted time (qw_stop) */
    int halves_differ;          /* the last estimate's halves differ beyond their scatter */
    int tail_above;             /* loss cycles: the part after the last cut runs faster
                                   than a cycle's start can (see tail_above_cycles()) */
    int head_differs;           /* what no batch counts since measuring began ran at
                                   another level while the flow took the path's share
                                   (head_differs()) */
    int last_differs;           /* loss-based: the latest slice ran at another level
                                   without a congestion event (last_slice_differs()) */
    double slice_qmin;          /* smallest queue in the current slice, in BDPs */
    double slice_qlo_min;       /* ... from the smallest smoothed RTT */
    int slice_not_bw;           /* a sample of the current slice was not in PROBE_BW */
    uint64_t run_peak;          /* largest cwnd since the last congestion event */
    int npeaks;                 /* cwnd peaks that congestion events cut, and the slice */
    uint64_t peak[QW_MAX_PEAKS];    /* each fell in (the first counted cycle's: w->first) */
    int peak_slice[QW_MAX_PEAKS];
    int n, first;               /* slices so far; the first one still counted */
    qw_slice s[QW_MAX_SLICES];
    qw_estimate est;
} qw_window;

/* Seconds after slow-start's end at open_t (from the first byte) that the answer is due:
 * p->max_s, or less for a slow-start that ran past a second and ten RTTs (quickwin.c). */
double qw_due_s(const qw_params *p, double open_t);

/* Open the window at the end of slow-start (t_s, cwnd there, whether a loss ended it). */
void qw_open(qw_window *w, const qw_params *p, double t_s, uint64_t exit_cwnd_bytes,
             int after_loss);

/* Feed the next sample; returns the state after it (QW_OPEN while measuring). */
qw_state qw_feed(qw_window *w, const qw_sample *s);

/* Tell a window just opened the largest smoothed RTT (the largest over the streams) seen
 * before it opened: slow-start's overshoot filled the buffer, and the queue it showed is
 * a depth the buffer holds (see buffer_deep() in qwloss.c). */
void qw_seen_rtt(qw_window *w, uint32_t rtt_us);

/* An upper bound (bytes) on the BDP from sample s, taken in slow-start before any loss,
 * when it shows a queue of q >= QW_BUSY_QUEUE BDP (its largest smoothed RTT over the
 * smoothed RTT's floor so far, srtt_floor_us, or its min RTT if larger: qw_queue_over); 0
 * when it shows none. A queue stands only with more than a BDP in flight, but
 * slow-start sends two packets an ACK, a burst at twice the link's rate that queues up to
 * half of what is in flight, and the smoothed RTT leans to the burst's late packets: a
 * queue of q shows with min(1, 2 q) BDP or more in flight, so the BDP is at most
 * cwnd / min(1, 2 q). */
uint64_t qw_slow_start_bdp(const qw_sample *s, uint32_t srtt_floor_us);

/* The RTT with no queue (us): the smoothed RTT's floor srtt_floor_us, or the min RTT
 * min_rtt_us if larger (0 when neither is known). */
uint32_t qw_no_queue_rtt_us(uint32_t srtt_floor_us, uint32_t min_rtt_us);

/* The standing queue in BDPs that a smoothed RTT of srtt_us shows over the RTT with no
 * queue (qw_no_queue_rtt_us). Every queue reading rests on it, not on the min RTT alone: under
 * jitter the min RTT is the lowest draw, and every smoothed RTT reads the jitter's lower
 * range above it as a queue (0.25 BDP of it on a 40 ms path with +-5 ms each way). */
double qw_queue_over(uint32_t srtt_us, uint32_t srtt_floor_us, uint32_t min_rtt_us);

/* Tell a window just opened the least of qw_slow_start_bdp's bounds over the samples before
 * it (0: none showed a queue): the capacity is below it over the min RTT. */
void qw_seen_bdp(qw_window *w, uint64_t bdp_bytes);

#define QW_SS_RING 64        /* slow-start's latest samples kept for its plateau */

/* What the samples before the window opened witnessed, for qw_seen_rtt, qw_seen_bdp and
 * qw_seen_plateau. */
typedef struct {
    uint32_t peak_rtt_us;   /* the largest smoothed RTT (slow-start's overshoot) */
    uint64_t bdp_bytes;     /* the least of qw_slow_start_bdp's bounds, 0 none */
    int n;                  /* samples seen; the latest QW_SS_RING of them are kept: */
    double t_s[QW_SS_RING];
    uint64_t delivered_bytes[QW_SS_RING];
    uint64_t limited_us[QW_SS_RING];
    double queue[QW_SS_RING];  /* standing queue in BDPs (the smallest smoothed RTT over the
                                  streams, over their smallest min RTT) */
    uint32_t min_rtt_us;    /* the latest sample's */
    uint32_t srtt_floor_us; /* the smallest smoothed RTT (see qw_window), 0 none */
} qw_ss_seen;

/* Add sample s, taken before the window opened, to what slow-start witnessed. */
void qw_ss_see(qw_ss_seen *seen, const qw_sample *s);

/* BBR: tell a window just opened the rate its streams delivered together over slow-start's
 * last rounds (qw_ss_see's samples): STARTUP ends after three rounds whose bandwidth grew
 * less than a quarter, so those rounds ran at the rate the path gave the flow then. */
void qw_seen_plateau(qw_window *w, const qw_ss_seen *seen);

/* Tell a window just opened what slow-start's samples witnessed: qw_seen_rtt, qw_seen_bdp
 * and qw_seen_plateau in one (the prober and qwreplay open it the same way). */
void qw_seen(qw_window *w, const qw_ss_seen *seen);

/* Close a window still open (the run ends: -t or a signal) as not converged, with the
 * estimate of what it measured up to its last slice. */
void qw_stop(qw_window *w);

/* The latest estimate (rate 0 before the first batch). */
const qw_estimate *qw_result(const qw_window *w);

/* What kept the window open at its latest slice: for a window that gave up, why it did
 * not converge. */
qw_hold qw_hold_of(const qw_window *w);

/* "not_started", "few_batches", "short", "interval", ...; NULL for QW_HOLD_NONE. */
const char *qw_hold_name(qw_hold h);

/* What the hold means, in words; NULL for QW_HOLD_NONE. */
const char *qw_hold_text(qw_hold h);

/* When measuring began (after recovery / DRAIN / PROBE_RTT), -1 if it never did. */
double qw_start_t(const qw_window *w);

/* When the window closed (converged or gave up), -1 while open. */
double qw_end_t(const qw_window *w);

/* When the answer is due (from the first byte, like the samples' t_s). */
double qw_due_t(const qw_window *w);

/* The figure a full run of full_s seconds on this connection would report: what was
 * delivered before the window started, plus the window's steady rate for the rest of the
 * time (for BBR less what its PROBE_RTT visits cost: every 10 s, 4 packets a stream for the
 * whole rounds that cover 200 ms, and a round to refill the pipe). */
qw_prediction qw_predict(const qw_window *w, double full_s);

/* What the window answers for a run of full_s seconds: qw_predict's figure, kept within the
 * interval qw_bound gives it. */
typedef struct {
    double rate_bps;
    double lo_bps, hi_bps;
    double ci_frac;         /* the wider side / rate_bps, < 0 when there is no answer */
    qw_bound_by by;
} qw_answer;

/* The answer a window that closed (or stopped) gives for a run of full_s seconds. */
qw_answer qw_answer_of(const qw_window *w, double full_s);

/* The interval of the run's figure pr (from qw_predict) from the window's evidence: the
 * batches' scatter, and for a window that answered at its deadline what held it open
 * (levels seen, an incomplete sawtooth, random loss not ruled out), capped at the
 * capacity seen (qwbound.c). */
qw_bounds qw_bound(const qw_window *w, const qw_prediction *pr);

/* "statistics", "short", "levels", "sawtooth", "random_loss". */
const char *qw_bound_name(qw_bound_by by);

/* What that evidence means, in words. */
const char *qw_bound_text(qw_bound_by by);

/* Long-run share of the link a loss-based flow keeps with multiplicative decrease beta when
 * its cwnd peaks at top BDPs (1 when a cut from there leaves the link full). */
double qw_sawtooth_share(double beta, double top);

/* The average window (packets) one Reno (cubic 0) or CUBIC flow keeps at loss-event rate p
 * and RTT rtt_s (Mathis et al.; RFC 9438). */
double qw_loss_window_pkts(int cubic, double p, double rtt_s);

/* The capacity (bytes/s) the window saw: its rate while a standing queue stood, at least
 * the fastest quarter of what it counted. */
double qw_capacity_seen(const qw_window *w);

/* Reno / CUBIC: the flow's share of its standing queue's drain, its rate times the slope of
 * the smoothed RTT against cwnd between congestion events (qwshare.c): about 1 for a flow
 * alone at a full link, its share of the link with other traffic steady in the queue; NAN
 * when no growth period was long enough, or BBR. */
double qw_queue_share(const qw_window *w);

/* Loss-based cc: the lowest long-run rate (bytes/s) the sawtooth seen and the random loss
 * not yet ruled out allow at capacity cap (the window's rate when nothing lowers it), and
 * which of the two set it. */
double qw_loss_floor(const qw_window *w, double cap, qw_bound_by *by);

/* Loss-based cc: 1 if the cwnd peaks the window's cycles were cut at do not fall (a
 * sawtooth that settled, not slow-start's level coming down). */
int qw_peaks_level(const qw_window *w);

/* BBR's mode from TCP_CC_INFO's gains (x256); QW_BBR_NONE when both are 0. */
qw_bbr_mode qw_bbr_mode_from_gains(uint32_t pacing_gain, uint32_t cwnd_gain);

/* 1 if TCP_CC_INFO's gains (x256) are PROBE_BW's at pacing gain 1: cruising between probes,
 * or pinned there by the long-term bandwidth mode. */
int qw_bbr_cruising(uint32_t pacing_gain, uint32_t cwnd_gain);

/* "startup", "drain", "probe_bw", "probe_rtt"; NULL for QW_BBR_NONE. */
const char *qw_bbr_mode_name(qw_bbr_mode m);

/* One stream's overshoot_recovery at a sample, from the previous one: in a loss recovery
 * that began in its slow-start (and has not ended since). BBR's slow-start is STARTUP and
 * DRAIN (mode); a Reno or CUBIC stream (mode QW_BBR_NONE) was in it while its ssthresh at
 * the sample before, ssthresh_prev_bytes, was never set (0): its first loss ends it. */
int qw_overshoot_step(int prev, int in_recovery, qw_bbr_mode mode, uint64_t ssthresh_prev_bytes);

/* 1 if a stream's ssthresh (bytes, 0 never set) is set anew: now differs from prev. Reno
 * and CUBIC set it to beta x cwnd on every loss they answer, above the last one's when cwnd
 * grew past that cut's peak, so a change, not a fall, is the sign. An undo restores the old
 * value, and a loss answered and undone between two samples leaves none. A retransmission
 * with no new ssthresh outside a recovery (a tail-loss probe, or RACK's for packets only
 * reordered) is no congestion event: the cc did not respond. */
int qw_ssthresh_set(uint64_t prev, uint64_t now);

/* 1 if one stream began a congestion event between two samples, as the window counts one
 * (qw_count_events in qwundo.c): it entered a loss recovery (rec: ca_state >= 2 now, prev_rec
 * before), or outside one its retransmissions grew (prev_retrans -> retrans) and its cc
 * answered (ssthresh_set, see qw_ssthresh_set; any retransmission for BBR). */
int qw_stream_event(int prev_rec, int rec, uint32_t prev_retrans, uint32_t retrans,
                    int ssthresh_set, int bbr);

/* The backlog the sample's streams leave to drain when the sender stops, in bytes at the
 * summed rate (qw_sample.backlog_bytes), from each stream's bytes written and not yet acked
 * (backlog[i]) and its cwnd (cwnd[i]), n streams: see qwdue.c. */
uint64_t qw_drain_bytes(const uint64_t *backlog, const uint64_t *cwnd, int n);

/* One stream's open congestion event, followed to its end (qw_cut_step). */
typedef struct {
    int open;                   /* an event began and has not ended */
    uint64_t cwnd_bytes;        /* cwnd at the latest sample */
    double t_s;                 /* ... and that sample's time */
    uint64_t cwnd_before;       /* cwnd at the sample before the open event began */
    double t_before;            /* ... and that sample's time */
    double rec_from, rec_to;    /* the first and latest sample of the open event that showed
                                   it in recovery (0 before one did) */
} qw_cut_track;

/* What qw_cut_step reads of one stream's sample. */
typedef struct {
    double t_s;                 /* the sample's time */
    uint64_t cwnd_bytes;
    uint32_t rtt_us;            /* smoothed RTT */
    uint32_t mss_bytes;
    uint32_t reordering_segments;   /* tcpi_reordering: above its default, the kernel has
                                       seen this path reorder */
    double beta;                /* the cc's cut: 0.5 Reno, 717 / 1024 CUBIC */
} qw_cut_view;

typedef enum { QW_CUT_NONE = 0, QW_CUT_KEPT, QW_CUT_UNDONE } qw_cut;

/* Follow one stream's congestion events (began: qw_stream_event at this sample;
 * rec: ca_state >= 2 now; v: the sample) and say at the first sample out of recovery whether
 * the event's cwnd reduction was kept or undone. Linux undoes a reduction when DSACKs or
 * timestamps show that every retransmission of the recovery was spurious (RACK marking
 * reordered packets lost, an early RTO): tcp_undo_cwnd_reduction puts cwnd back to at
 * least where the recovery found it and ssthresh back to its old value, so the flow lost
 * nothing and no loss response follows. A kept one leaves cwnd at beta of that (0.5 Reno,
 * 0.7 CUBIC) when the recovery ends; QW_CUT_KEEP_FRAC divides the two, unless the cc's own
 * growth between the samples could have taken a kept cut back over it on a path the kernel
 * has not seen reorder: then the cut counts as kept (see qwundo.c). BBR restores cwnd after every
 * recovery, so the window ignores its streams' verdicts (qw_mark_event). */
qw_cut qw_cut_step(qw_cut_track *t, int began, int rec, const qw_cut_view *v);

/* "time", "loss_cycles", "bbr_cycles"; NULL for none. */
const char *qw_basis_name(qw_basis b);

/* Two-sided 95 % Student t quantile for dof degrees of freedom (dof >= 1). */
double qw_t95(int dof);

/* Two-sided Student t quantile: the t with P(|T| > t) = alpha for dof degrees of freedom. */
double qw_t_quantile(int dof, double alpha);

/* Ratio estimator over n batches (bytes, seconds): rate in bytes/s and the two-sided
 * 1 - alpha half-width as a fraction of it (-1 when n < 2 or the rate is 0). */
double qw_batch_ci(const double *bytes, const double *secs, int n, double alpha, double *ci_frac);

#endif
