/* test_quickwin.c: the converging quick window on synthetic and recorded series. */
#include "check.h"
#include "quickwin.h"

#include <stdlib.h>
#include <string.h>

#define MSS 1448
#define MAXN 20000

typedef struct {
    int n;
    qw_sample s[MAXN];
    int ss[MAXN];       /* in slow-start (recorded traces) */
} series;

static series z;
static qw_window w;
static uint32_t g_min_rtt_us;   /* min RTT push() reports; 0: the RTT itself (no queue) */

/* Window parameters as the prober's defaults give them. */
static qw_params defaults(int bbr)
{
    return (qw_params){ .bbr = bbr, .tolerance = 0.03, .min_s = 1.0, .max_s = 5.0,
                        .sample_s = 0.02, .beta = 0.7 };
}

/* Append a sample every 20 ms from t0 with rate_bps for dt, cwnd, rtt, recovery, mode. */
static void push(double rate_bps, uint64_t cwnd, uint32_t rtt_us, int rec, qw_bbr_mode m)
{
    qw_sample *prev = z.n ? &z.s[z.n - 1] : NULL;
    qw_sample *s = &z.s[z.n++];

    *s = (qw_sample){ .t_s = prev ? prev->t_s + 0.02 : 0.02, .cwnd_bytes = cwnd, .rtt_us = rtt_us,
                      .min_rtt_us = g_min_rtt_us ? g_min_rtt_us : rtt_us,
                      .in_recovery = rec, .bbr_mode = m, .mss_bytes = MSS,
                      .retrans = prev ? prev->retrans + (rec && !prev->in_recovery) : 0 };
    s->delivered_bytes = (prev ? prev->delivered_bytes : 0) + (uint64_t)(rate_bps / 8 * 0.02);
}

/* Make sample i the first of a one-sample cut that ends a climb in congestion avoidance:
 * the queue before it (from sample 0) was half what it is at the cut. */
static void cut_at(int i)
{
    for (int k = 0; k < i; k++)
        z.s[k].rtt_us = z.s[k].min_rtt_us + (z.s[i].rtt_us - z.s[i].min_rtt_us) / 2;
    z.s[i].in_recovery = 1;
    for (int k = i; k < z.n; k++)
        z.s[k].retrans++;
}

/* Feed z from index from; returns the index of the sample that closed the window or -1. */
static int feed_from(int from)
{
    for (int i = from; i < z.n; i++)
        if (qw_feed(&w, &z.s[i]) != QW_OPEN)
            return i;
    return -1;
}

/* Feed z from index from until the window closes or is held by random loss alone (every
 * other condition met: without that evidence it would have converged there); returns that
 * sample's index, or -1. */
static int feed_until_random_loss(int from)
{
    for (int i = from; i < z.n; i++)
        if (qw_feed(&w, &z.s[i]) != QW_OPEN || qw_hold_of(&w) == QW_HOLD_RANDOM_LOSS)
            return i;
    return -1;
}

/* Known values: Student t, the ratio estimator and its interval. */
static void test_batch_ci_exact(void)
{
    double b[] = { 10, 12, 8, 10 }, t[] = { 1, 1, 1, 1 }, ci;

    CHECK_NEAR(qw_t95(1), 12.706, 1e-9);
    CHECK_NEAR(qw_t95(4), 2.776, 1e-9);
    CHECK_NEAR(qw_t95(9), 2.262, 1e-9);
    /* the exact quantiles (tables to 4 places) */
    CHECK_NEAR(qw_t_quantile(1, 0.05), 12.7062, 1e-4);
    CHECK_NEAR(qw_t_quantile(2, 0.05), 4.3027, 1e-4);
    CHECK_NEAR(qw_t_quantile(3, 0.05), 3.1824, 1e-4);
    CHECK_NEAR(qw_t_quantile(4, 0.05), 2.7764, 1e-4);
    CHECK_NEAR(qw_t_quantile(4, 0.01), 4.6041, 1e-4);
    CHECK_NEAR(qw_t_quantile(9, 0.01), 3.2498, 1e-4);
    CHECK_NEAR(qw_t_quantile(9, 0.005), 3.6897, 1e-4);
    CHECK_NEAR(qw_t_quantile(2, 0.01), 9.9248, 1e-4);
    CHECK_NEAR(qw_t_quantile(5000, 0.05), 1.9623, 1e-4);   /* 1000 dof: near the normal's */
    CHECK_NEAR(qw_batch_ci(b, t, 4, 0.05, &ci), 10.0, 1e-12);
    /* residuals 0, 2, -2, 0: s^2 = 8/3, se = sqrt(8/3/4) / 1 */
    CHECK_NEAR(ci, 3.1824 * sqrt(8.0 / 3.0 / 4.0) / 10.0, 1e-5);
    CHECK_NEAR(qw_batch_ci(b, t, 4, 0.01, &ci), 10.0, 1e-12);
    CHECK_NEAR(ci, 5.8409 * sqrt(8.0 / 3.0 / 4.0) / 10.0, 1e-5);
    CHECK_NEAR(qw_batch_ci(b, t, 1, 0.05, &ci), 10.0, 1e-12);
    CHECK_NEAR(ci, -1, 0);
}

/* The answer is due --quick-max-ms after slow-start, brought forward for a slow-start that
 * ran past a second and ten RTTs, keeping 9/10 of it, and never below --quick-ms. */
static void test_due_after_a_late_slow_start(void)
{
    qw_params p = { .min_s = 1.0, .max_s = 4.0, .sample_s = 0.02 };
    qw_window w;

    CHECK_NEAR(qw_due_s(&p, 0.3), 4.0, 1e-12);
    CHECK_NEAR(qw_due_s(&p, 1.0), 4.0, 1e-12);
    CHECK_NEAR(qw_due_s(&p, 1.24), 3.76, 1e-12);
    CHECK_NEAR(qw_due_s(&p, 1.3), 3.7, 1e-12);
    CHECK_NEAR(qw_due_s(&p, 1.5), 3.6, 1e-12);
    CHECK_NEAR(qw_due_s(&p, 3.1), 3.6, 1e-12);
    p.max_s = 1.05;             /* 9/10 of it is below --quick-ms */
    CHECK_NEAR(qw_due_s(&p, 3.0), 1.0, 1e-12);
    p.max_s = 4.0;
    p.base_rtt_s = 0.2;         /* ten rounds are 2 s: a slow-start of 1.9 s was not late */
    CHECK_NEAR(qw_due_s(&p, 1.9), 4.0, 1e-12);
    CHECK_NEAR(qw_due_s(&p, 2.3), 3.7, 1e-12);
    p.base_rtt_s = 0.07;
    qw_open(&w, &p, 1.2, 100000, 0);
    CHECK_NEAR(qw_due_t(&w), 5.0, 1e-12);
    CHECK_NEAR(w.p.max_s, 3.8, 1e-12);
}

/* BBR's mode from the gains bbr_update_gains sets in each state. */
static void test_bbr_modes_from_gains(void)
{
    CHECK(qw_bbr_mode_from_gains(739, 739) == QW_BBR_STARTUP);
    CHECK(qw_bbr_mode_from_gains(88, 739) == QW_BBR_DRAIN);
    CHECK(qw_bbr_mode_from_gains(320, 512) == QW_BBR_PROBE_BW);
    CHECK(qw_bbr_mode_from_gains(192, 512) == QW_BBR_PROBE_BW);
    CHECK(qw_bbr_mode_from_gains(256, 512) == QW_BBR_PROBE_BW);
    CHECK(qw_bbr_mode_from_gains(256, 256) == QW_BBR_PROBE_RTT);
    CHECK(qw_bbr_mode_from_gains(0, 0) == QW_BBR_NONE);
    CHECK_STR(qw_bbr_mode_name(QW_BBR_PROBE_RTT), "probe_rtt");
    CHECK_STR(qw_bbr_mode_name(QW_BBR_DRAIN), "drain");
    CHECK(qw_bbr_mode_name(QW_BBR_NONE) == NULL);
}

/* A flat rate has what it needs as soon as the window spans --quick-ms, with an exact
 * figure (after a cut at 0.1 s, a standing queue of 0.6 BDP shows the link stays full
 * through CUBIC's next cut), but for random loss: at 100 Mbit/s x 31 ms a window of 270
 * packets a stream outlives only random loss below 2e-5, and one second's 8,600 packets
 * rule out no less than 3.5e-4. So it holds there (random_loss), and the answer at its
 * deadline carries that floor. */
static void test_flat_rate_converges_at_min(void)
{
    qw_params p = defaults(0);
    qw_prediction pr;
    qw_bounds b;
    int k;

    z.n = 0;
    g_min_rtt_us = 31250;
    for (int i = 0; i < 400; i++)
        push(100e6, 600 * MSS, 50000, 0, QW_BBR_NONE);
    cut_at(30);
    qw_open(&w, &p, 0.5, 600 * MSS, 1);
    k = feed_until_random_loss(25);
    CHECK(k > 0);
    CHECK(w.state == QW_OPEN && qw_hold_of(&w) == QW_HOLD_RANDOM_LOSS);
    CHECK_NEAR(qw_start_t(&w), z.s[25].t_s, 1e-12);
    CHECK(z.s[k].t_s - qw_start_t(&w) >= 0.95);
    CHECK(z.s[k].t_s - qw_start_t(&w) < 1.2);
    CHECK_NEAR(qw_result(&w)->rate_bps, 100e6, 100e6 * 1e-3);
    CHECK(qw_result(&w)->ci_frac < 0.01);
    CHECK(qw_result(&w)->basis == QW_BASIS_TIME);
    CHECK(qw_result(&w)->batches >= 5);
    feed_from(k + 1);
    CHECK(w.state == QW_GAVE_UP && qw_hold_of(&w) == QW_HOLD_RANDOM_LOSS);
    CHECK_NEAR(qw_end_t(&w), 0.5 + p.max_s, 0.021);
    pr = qw_predict(&w, 20);
    b = qw_bound(&w, &pr);
    CHECK(b.by == QW_BOUND_RANDOM_LOSS);
    CHECK(b.lo_bps < 0.9 * pr.rate_bps && b.lo_bps > 0);
    CHECK_NEAR(b.hi_bps, pr.rate_bps, pr.rate_bps * 0.01);
    g_min_rtt_us = 0;
}

/* A smoothed RTT longer than the time to the deadline (6 s through a deep buffer on a slow
 * uplink) makes the first slice, a whole round, outlast the window: it closes short at the
 * deadline and the window answers with the rate it measured, an interval as wide as a
 * window too short for batches gets, instead of running to -t. */
static void test_first_slice_longer_than_the_window_still_answers(void)
{
    qw_params p = defaults(0);
    qw_answer a;

    z.n = 0;
    for (int i = 0; i < 400; i++)
        push(2e6, 1500 * MSS, 6000000, 0, QW_BBR_NONE);
    qw_open(&w, &p, 0.02, 1500 * MSS, 0);
    CHECK(feed_from(0) > 0);
    CHECK(w.state == QW_GAVE_UP);
    CHECK(qw_end_t(&w) >= 0.02 + p.max_s && qw_end_t(&w) < 0.02 + p.max_s + 0.021);
    CHECK_NEAR(qw_result(&w)->rate_bps, 2e6, 1e-6);
    CHECK(qw_result(&w)->ci_frac < 0);
    a = qw_answer_of(&w, 10);
    CHECK(a.rate_bps > 0 && a.ci_frac > 0);
    CHECK(a.lo_bps <= a.rate_bps && a.hi_bps >= a.rate_bps);
    CHECK(a.by == QW_BOUND_SHORT);
}

/* The window stops only at its planned checks (after --quick-ms of measuring, then every
 * quarter of it; the deadline last), with the statistics term at levels that sum to 5 % over
 * the plan: 2.5 % at the deadline, 2.5 % shared by the 16 checks before it (measuring began
 * at 0.02, due at 5.0). BBR at a scattered 100 Mbit/s (+-10 % a sample) with a standing
 * queue: its interval narrows as the batches lengthen, and the gates first pass at a slice
 * between two checks; the window answers at the next check, not there. */
static void test_window_stops_only_at_planned_checks(void)
{
    qw_params p = defaults(1);
    uint32_t seed = 12345;
    double met_t = -1, k_checks;

    z.n = 0;
    g_min_rtt_us = 20000;
    for (int i = 0; i < 300; i++) {
        seed = seed * 1103515245u + 12345u;
        push(100e6 * (0.9 + 0.2 * (seed >> 16 & 0x7fff) / 32767.0), 400 * MSS, 30000, 0,
             QW_BBR_PROBE_BW);
    }
    qw_open(&w, &p, 0.0, 400 * MSS, 0);
    for (int i = 0; i < z.n && qw_feed(&w, &z.s[i]) == QW_OPEN; i++)
        if (met_t < 0 && w.started && qw_hold_of(&w) == QW_HOLD_NONE)
            met_t = z.s[i].t_s;
    CHECK_NEAR(w.due_alpha, 0.025, 1e-12);
    CHECK_NEAR(w.check_alpha, 0.025 / 16, 1e-12);
    CHECK(w.state == QW_CONVERGED);
    CHECK(qw_result(&w)->ci_frac <= p.tolerance);
    /* the gates passed first between two checks, at least a slice before the next one */
    k_checks = (met_t - 1.02) / 0.25;
    CHECK(met_t > 1.02 && k_checks - floor(k_checks) > 0.1);
    CHECK_NEAR(qw_end_t(&w), 1.02 + 0.25 * ceil(k_checks), 0.021);
    g_min_rtt_us = 0;
}

/* The same flat rate with a queue of only 0.1 BDP and no cut yet (a shallow buffer): what
 * the next cut does to the rate is unknown (cwnd 0.7 x W_max may fall below the BDP), so
 * the window holds out, and gives up at max_s. The same, limited by the receiver's window
 * for the whole time, has no sawtooth to wait for (cwnd does not grow), but a loss still
 * cuts cwnd below the window: held by the random loss its loss-free packets do not rule
 * out, it gives up too (before, it converged at 1.2 s). */
static void test_shallow_queue_waits_for_a_cut(void)
{
    qw_params p = defaults(0);

    z.n = 0;
    g_min_rtt_us = 45455;
    for (int i = 0; i < 400; i++)
        push(100e6, 600 * MSS, 50000, 0, QW_BBR_NONE);
    qw_open(&w, &p, 0.0, 600 * MSS, 0);
    feed_from(0);
    CHECK(w.state == QW_GAVE_UP);
    CHECK(qw_result(&w)->ci_frac < 0.01);
    for (int i = 0; i < z.n; i++)
        z.s[i].limited_us = (uint64_t)(z.s[i].t_s * 0.9e6);
    qw_open(&w, &p, 0.0, 600 * MSS, 0);
    feed_from(0);
    CHECK(w.state == QW_GAVE_UP);
    CHECK_STR(qw_hold_name(w.hold), "random_loss");
    /* Reno (beta 0.5) needs a queue of a whole BDP: 0.6 BDP does not prove it */
    g_min_rtt_us = 31250;
    z.n = 0;
    for (int i = 0; i < 400; i++)
        push(100e6, 600 * MSS, 50000, 0, QW_BBR_NONE);
    p.beta = 0.5;
    qw_open(&w, &p, 0.0, 600 * MSS, 0);
    feed_from(0);
    CHECK(w.state == QW_GAVE_UP);
    g_min_rtt_us = 0;
}

/* A rate still rising does not converge until it has been flat for a while: the halves
 * of the window must agree (after which only random loss, which 100 Mbit/s x 31 ms cannot
 * rule out in seconds, holds it: see test_flat_rate_converges_at_min). */
static void test_rising_rate_waits(void)
{
    qw_params p = defaults(0);
    int k;

    z.n = 0;
    g_min_rtt_us = 31250;
    for (int i = 0; i < 100; i++)      /* 2 s rising from 60 to 100 Mbit/s, no queue yet */
        push(60e6 + 40e6 * i / 100.0, 600 * MSS, 31250, 0, QW_BBR_NONE);
    for (int i = 0; i < 250; i++)
        push(100e6, 600 * MSS, 50000, 0, QW_BBR_NONE);
    qw_open(&w, &p, 0.0, 600 * MSS, 0);
    k = feed_until_random_loss(0);
    CHECK(w.state == QW_OPEN && qw_hold_of(&w) == QW_HOLD_RANDOM_LOSS);
    CHECK(k > 100);
    /* what it reports is within its own interval of the flat rate it is heading for */
    CHECK(fabs(qw_result(&w)->rate_bps - 100e6) / 100e6 <= 0.03 + qw_result(&w)->ci_frac);
    g_min_rtt_us = 0;
}

/* cwnd climbing back to where slow-start left it (CUBIC after HyStart and a cut), on a
 * 100 Mbit/s path with a 50 ms min RTT (BDP 432 MSS): HyStart left cwnd at 700 MSS, a full
 * buffer (0.62 BDP of queue) cut it at 0.1 s to 300, and it climbs back to 700 over 4 s.
 * The rate is cwnd / RTT until cwnd fills the pipe (432 MSS, at 1.4 s), then a queue
 * builds. The window does not end while cwnd climbs and the rate with it; it may once the
 * standing queue proves the link full through CUBIC's next cut (0.43 BDP = 186 MSS of
 * queue: cwnd 618, sample 164, 3.3 s), not before; from there only random loss holds it. */
static void test_cwnd_climb_back_holds_window(void)
{
    qw_params p = defaults(0);
    const double bdp = 100e6 / 8 * 0.05 / MSS;
    int k;

    z.n = 0;
    for (int i = 0; i < 305; i++) {
        double cwnd = i <= 5 ? 700 : i < 205 ? 300 + 400 * (i - 5) / 200.0 : 700;
        double queue = cwnd > bdp ? cwnd - bdp : 0;

        push(fmin(100e6, cwnd * MSS * 8 / 0.05), (uint64_t)cwnd * MSS,
             (uint32_t)(50000 * (1 + queue / bdp)), i == 5, QW_BBR_NONE);
        z.s[i].min_rtt_us = 50000;
    }
    cut_at(5);
    qw_open(&w, &p, 0.0, 700 * MSS, 0);
    k = feed_until_random_loss(0);
    CHECK(w.state == QW_OPEN && qw_hold_of(&w) == QW_HOLD_RANDOM_LOSS);
    CHECK(k >= 164);
    CHECK_NEAR(qw_result(&w)->rate_bps, 100e6, 100e6 * 0.005);
}

/* A loss at a queue of 0.2 BDP after the buffer has held 0.8 BDP was not a full buffer: a
 * random loss, which may cut again at any cwnd. The queue no longer proves the link full,
 * and with one cut (no whole cycles) the window gives up; with a cut at the full queue
 * instead it has all it needs but the packets that rule out random loss. */
static void test_random_loss_voids_queue_proof(void)
{
    qw_params p = defaults(0);

    z.n = 0;
    g_min_rtt_us = 50000;
    for (int i = 0; i < 400; i++) {
        int dip = i >= 50 && i < 55;

        push(100e6, 600 * MSS, dip ? 60000 : 90000, dip && i == 50, QW_BBR_NONE);
    }
    qw_open(&w, &p, 0.0, 600 * MSS, 0);
    feed_from(0);
    CHECK(w.state == QW_GAVE_UP);
    z.s[50].in_recovery = 0;
    for (int i = 50; i < z.n; i++)
        z.s[i].retrans = 0;
    cut_at(10);
    qw_open(&w, &p, 0.0, 600 * MSS, 1);
    CHECK(feed_until_random_loss(0) > 0);
    CHECK(w.state == QW_OPEN && qw_hold_of(&w) == QW_HOLD_RANDOM_LOSS);
    g_min_rtt_us = 0;
}

/* Fill z with 6 s of a sawtooth: a congestion event every 0.5 s at the top of each cycle
 * (rate 70 -> 100 Mbit/s, cwnd 300 -> 600 MSS, the queue growing over the cycle), every
 * cycle's peak fall x the one before (1.0: level). */
static void push_sawtooth(double fall)
{
    z.n = 0;
    g_min_rtt_us = 50000;
    for (int i = 0; i < 300; i++) {
        int ph = (i + 7) % 25, cyc = (i + 7) / 25;
        double top = pow(fall, cyc);

        push((70e6 + 30e6 * ph / 24.0) * top, (uint64_t)((300 + 300 * ph / 24.0) * top) * MSS,
             (uint32_t)(50000 * (1.0 + 0.5 * (ph < 2 ? 1.0 : (ph - 2) / 22.0))), ph < 2,
             QW_BBR_NONE);
    }
    g_min_rtt_us = 0;
}

/* A sawtooth with a congestion event every 0.5 s: batches are whole cycles and the
 * estimate is the cycle average, whatever the phase the window started in. */
static void test_sawtooth_uses_whole_cycles(void)
{
    qw_params p = defaults(0);
    int k;

    push_sawtooth(1.0);
    qw_open(&w, &p, 0.0, 600 * MSS, 0);
    k = feed_from(0);
    CHECK(w.state == QW_CONVERGED);
    CHECK(k > 0);
    CHECK(qw_result(&w)->basis == QW_BASIS_LOSS_CYCLES);
    CHECK(qw_result(&w)->batches >= 3);
    CHECK_NEAR(qw_result(&w)->rate_bps, 85e6, 85e6 * 0.01);
    /* the same sum from two streams: a cycle of the sum is two reductions (1 s), and three
     * of them take until 3 s at the earliest (one stream's cuts alone come every 0.5 s) */
    p.streams = 2;
    qw_open(&w, &p, 0.0, 600 * MSS, 0);
    k = feed_from(0);
    CHECK(w.state == QW_CONVERGED);
    CHECK(qw_end_t(&w) >= 3.0);
    CHECK(qw_result(&w)->basis == QW_BASIS_LOSS_CYCLES);
    CHECK_NEAR(qw_result(&w)->rate_bps, 85e6, 85e6 * 0.01);
}

/* The same sawtooth with its peaks falling cycle after cycle (1.0, 0.85, 0.72, ... of the
 * first: a flow still on its way down from slow-start's level to where random loss holds
 * it) never converges on its cycles; with level peaks it does (above). */
static void test_falling_peaks_are_a_transient(void)
{
    qw_params p = defaults(0);

    push_sawtooth(0.85);
    qw_open(&w, &p, 0.0, 600 * MSS, 0);
    feed_from(0);
    CHECK(w.state == QW_GAVE_UP);
}

/* Fill z with 6 s of a sawtooth at a full link (100 Mbit/s throughout) whose cuts come at
 * scattered peaks, as random loss cuts at any point of a cycle: cycle c peaks at
 * scatter[c % 6] x trend^c of 600 MSS, a cut every 0.5 s. */
static void push_scattered_peaks(double trend)
{
    static const double scatter[] = { 1.0, 0.72, 0.97, 0.8, 0.7, 0.95 };

    z.n = 0;
    g_min_rtt_us = 50000;
    for (int i = 0; i < 300; i++) {
        int ph = (i + 7) % 25, cyc = (i + 7) / 25;
        double top = 600 * scatter[cyc % 6] * pow(trend, cyc);

        push(100e6, (uint64_t)((0.7 + 0.3 * ph / 24.0) * top) * MSS,
             (uint32_t)(50000 * (1.0 + 0.5 * ph / 24.0)), ph < 2, QW_BBR_NONE);
    }
    g_min_rtt_us = 0;
}

/* Peaks that scatter over 0.7-1.0 of the largest without falling (random loss on a
 * sawtooth, the link full): once five cycles have ended, their trend is flat, and the
 * sawtooth holds the window no longer. Ten random cuts in 6 s (one in 4,300 packets) leave
 * open a loss rate at which TCP's window peaks near 100 packets, not 420-600: the cycles
 * are cwnd above where those losses hold it, so the random-loss floor holds the window to
 * its deadline. The same scatter falling 8 % a cycle (0.66 of the first peak's line by the
 * fifth) is a transient the sawtooth holds. A cycle that began before the window (its cut
 * at the window's first sample) has no known peak: it is not counted as a peak of 0, which
 * no later peak is level with. */
static void test_scattered_peaks_are_level(void)
{
    qw_params p = defaults(0);

    push_scattered_peaks(1.0);
    qw_open(&w, &p, 0.0, 600 * MSS, 0);
    feed_from(0);
    CHECK(w.state == QW_GAVE_UP);
    CHECK(qw_hold_of(&w) == QW_HOLD_RANDOM_LOSS);
    CHECK(qw_result(&w)->basis == QW_BASIS_LOSS_CYCLES);
    CHECK_NEAR(qw_result(&w)->rate_bps, 100e6, 100e6 * 1e-3);
    CHECK(w.npeaks >= 5);
    push_scattered_peaks(0.92);
    qw_open(&w, &p, 0.0, 600 * MSS, 0);
    feed_from(0);
    CHECK(w.state == QW_GAVE_UP);
    CHECK(qw_hold_of(&w) == QW_HOLD_SAWTOOTH);
    /* open the window on a cut's first sample */
    push_scattered_peaks(1.0);
    qw_open(&w, &p, 0.0, 600 * MSS, 0);
    CHECK(z.s[18].in_recovery && !z.s[17].in_recovery);
    feed_from(17);
    CHECK(w.npeaks > 0);
    for (int i = 0; i < w.npeaks; i++)
        CHECK(w.peak[i] > 0);
    CHECK(w.state == QW_GAVE_UP);
    CHECK(qw_hold_of(&w) == QW_HOLD_RANDOM_LOSS);
}

/* A full link (queue 0.6 BDP, CUBIC) and no loss at 20 Mbit/s, 1448-byte MSS (1,727
 * packets a second, a window of 60): the queue proves a full buffer's cut harmless, but
 * the window waits for 5,000 loss-free packets (2.9 s; 10 / 3 W^2 would be 12,000) to rule
 * out random loss of 0.1 %; a loss at 2.5 s (a retransmission and CUBIC's new ssthresh)
 * starts the count again, and then 5 s is not enough. A retransmission with none outside
 * a recovery (a tail-loss probe, or RACK's for a packet only reordered) does not. */
static void test_loss_free_packets_before_the_queue_proof(void)
{
    qw_params p = defaults(0);
    double n_floor, check_t;
    int k;

    z.n = 0;
    g_min_rtt_us = 31250;
    for (int i = 0; i < 300; i++)
        push(20e6, 60 * MSS, 50000, 0, QW_BBR_NONE);
    qw_open(&w, &p, 0.0, 60 * MSS, 0);
    k = feed_from(0);
    CHECK(w.state == QW_CONVERGED);
    CHECK(qw_end_t(&w) >= 0.02 + 5000.0 * MSS * 8 / 20e6);
    /* ... and for the random-loss floor (qw_loss_floor) to come within the tolerance: the
     * loss rate 3 / n packets rules out must hold CUBIC's peak (2 / 1.7 x its average
     * window) at or above the depth where a cut's share of the link is 97 % (the queue is
     * 0.6 BDP, so the buffer's top is 1.6) */
    n_floor = 1;
    while (qw_sawtooth_share(0.7, fmin(1.6, 2.0 / 1.7 * qw_loss_window_pkts(1, 3.0 / n_floor, 0.05) *
                                            MSS / (20e6 / 8 * 0.03125))) < 0.97)
        n_floor++;
    CHECK(n_floor > 5000);
    CHECK(qw_end_t(&w) >= 0.02 + n_floor * MSS * 8 / 20e6);
    /* ... at the first planned check after it (measuring began at 0.02: checks at 1.02, then
     * every quarter second) */
    check_t = 1.02 + 0.25 * ceil((0.02 + n_floor * MSS * 8 / 20e6 - 1.02) / 0.25);
    CHECK(qw_end_t(&w) >= check_t - 0.011);
    CHECK(qw_end_t(&w) < check_t + 0.1);
    CHECK_NEAR(qw_result(&w)->rate_bps, 20e6, 20e6 * 1e-3);
    CHECK(k > 0);
    for (int i = 125; i < z.n; i++)
        z.s[i].retrans = 1;
    qw_open(&w, &p, 0.0, 60 * MSS, 0);
    CHECK(feed_from(0) == k);
    CHECK_NEAR(qw_result(&w)->rate_bps, 20e6, 20e6 * 1e-3);
    z.s[125].ssthresh_set = 1;
    qw_open(&w, &p, 0.0, 60 * MSS, 0);
    feed_from(0);
    CHECK(w.state == QW_GAVE_UP);
    CHECK(qw_hold_of(&w) == QW_HOLD_LOSS_FREE);
    CHECK_STR(qw_hold_name(qw_hold_of(&w)), "loss_free");
    g_min_rtt_us = 0;
}

/* A stream's ssthresh set anew (qw_ssthresh_set): for the first time, lowered, or raised
 * (a cut from a cwnd that grew past the last cut's peak); not a value unchanged or never
 * set. */
static void test_ssthresh_set_is_a_new_value(void)
{
    CHECK(qw_ssthresh_set(0, 0) == 0);
    CHECK(qw_ssthresh_set(0, 1000) == 1);
    CHECK(qw_ssthresh_set(2000, 1400) == 1);
    CHECK(qw_ssthresh_set(1400, 2100) == 1);
    CHECK(qw_ssthresh_set(1400, 1400) == 0);
    CHECK(qw_ssthresh_set(1400, 0) == 0);
}

/* Open the window at 0 on z (Reno, after a loss), tell it the overshoot's srtt, feed it. */
static void open_seen(const qw_params *p, uint64_t exit_cwnd, uint32_t seen_rtt_us)
{
    qw_open(&w, p, 0.0, exit_cwnd, 1);
    qw_seen_rtt(&w, seen_rtt_us);
    feed_from(0);
}

/* Reno (beta 0.5) on a 2-BDP buffer after slow-start's overshoot, 100 Mbit/s, min RTT 50
 * ms: cut to 1.5 BDP, cwnd climbs back (a packet a sample) with a queue of 0.5-0.62
 * BDP, far from the whole BDP that qw_link_full asks of the queue now, and no cut in 6 s.
 * Without more the window gives up. An overshoot that showed 150 ms of srtt (2 BDP) proves
 * the buffer: a cut from it leaves 1.5 BDP. The window then has all it needs at min_s but
 * the packets that rule out random loss (a 650-packet window: see
 * test_flat_rate_converges_at_min). An overshoot of 0.8 BDP proves
 * nothing for Reno; nor does a deep one when a slice's queue fell to 0.1 BDP, where the
 * climb may have moved the rate (held: climbing). */
static void test_overshoot_proves_a_deep_buffer(void)
{
    qw_params p = defaults(0);
    int k;
    const double bdp = 100e6 / 8 * 0.05 / MSS;
    const uint64_t exit_cwnd = (uint64_t)(3 * bdp) * MSS;

    p.beta = 0.5;
    z.n = 0;
    g_min_rtt_us = 50000;
    for (int i = 0; i < 300; i++)
        push(100e6, (uint64_t)(1.5 * bdp + i) * MSS, 75000 + 20 * i, 0, QW_BBR_NONE);
    open_seen(&p, exit_cwnd, 0);
    CHECK(w.state == QW_GAVE_UP);
    CHECK_EQ(qw_hold_of(&w), QW_HOLD_SAWTOOTH);
    qw_open(&w, &p, 0.0, exit_cwnd, 1);
    qw_seen_rtt(&w, 150000);
    k = feed_until_random_loss(0);
    CHECK(w.state == QW_OPEN && qw_hold_of(&w) == QW_HOLD_RANDOM_LOSS);
    CHECK(z.s[k].t_s >= 0.95);
    CHECK(z.s[k].t_s < 1.1);
    CHECK_NEAR(qw_result(&w)->rate_bps, 100e6, 100e6 * 1e-3);
    open_seen(&p, exit_cwnd, 90000);
    CHECK(w.state == QW_GAVE_UP);
    CHECK_EQ(qw_hold_of(&w), QW_HOLD_SAWTOOTH);
    for (int i = 20; i < 25; i++)
        z.s[i].rtt_us = 55000;
    open_seen(&p, exit_cwnd, 150000);
    CHECK(w.state == QW_GAVE_UP);
    CHECK_EQ(qw_hold_of(&w), QW_HOLD_CLIMBING);
    g_min_rtt_us = 0;
}

/* On / off cross traffic (1 s at 100 Mbit/s, 1 s at 70 from 0.4 s on, cwnd and queue
 * unchanged): the window drops changes of level as transients, but after the second it
 * has to span twice min_s and sees the next change: it never reports one phase as the rate
 * (it gives up, or converges on the mean of both). */
static void test_level_changes_are_not_dropped_twice(void)
{
    qw_params p = defaults(0);

    z.n = 0;
    g_min_rtt_us = 31250;
    for (int i = 0; i < 300; i++)
        push((i + 30) / 50 % 2 ? 70e6 : 100e6, 600 * MSS, 31250, 0, QW_BBR_NONE);
    qw_open(&w, &p, 0.0, 600 * MSS, 0);
    feed_from(0);
    CHECK(w.drops >= 1);
    CHECK(w.state == QW_GAVE_UP ||
          fabs(qw_result(&w)->rate_bps - 85e6) / 85e6 <= 0.03 + qw_result(&w)->ci_frac);
    /* with a standing queue (0.6 BDP, more than CUBIC's 0.43) throughout, the link was full
     * in both levels: the change is the path's (cross traffic), and the window never
     * converges (it cannot know when the level changes back) */
    for (int i = 0; i < z.n; i++)
        z.s[i].rtt_us = 50000;
    qw_open(&w, &p, 0.0, 600 * MSS, 0);
    feed_from(0);
    CHECK(w.varying);
    CHECK(w.state == QW_GAVE_UP);
    CHECK(qw_hold_of(&w) == QW_HOLD_VARYING);
    /* the same with the queue gone for a sample at each change (the cross traffic's share
     * drains before the flow's cwnd refills it): the link is still full in most slices of
     * each half, and the change is still the path's */
    for (int i = 20; i < z.n; i += 50)
        z.s[i].rtt_us = z.s[i + 1].rtt_us = 31250;
    qw_open(&w, &p, 0.0, 600 * MSS, 0);
    feed_from(0);
    CHECK(w.varying);
    CHECK(w.state == QW_GAVE_UP);
    g_min_rtt_us = 0;
}

/* Three whole loss cycles at 60 Mbit/s (a cut every 0.3 s, the link full), then from
 * 1.26 s 100 Mbit/s and no cut: the part after the last cut runs far faster than any
 * cycle's start can, so the window does not converge on the cycles; without the jump it
 * converges on them at min_s. */
static void test_tail_faster_than_cycles_holds_window(void)
{
    qw_params p = defaults(0);

    p.min_s = 1.5;
    for (int jump = 1; jump >= 0; jump--) {
        z.n = 0;
        g_min_rtt_us = 31250;
        for (int i = 0; i < 300; i++)
            push(jump && i >= 62 ? 100e6 : 60e6, 600 * MSS, 50000, i <= 60 && i % 15 == 0,
                 QW_BBR_NONE);
        qw_open(&w, &p, 0.0, 600 * MSS, 0);
        feed_from(0);
        if (jump) {
            CHECK(w.state == QW_GAVE_UP);
            continue;
        }
        CHECK(w.state == QW_CONVERGED);
        CHECK(qw_result(&w)->basis == QW_BASIS_LOSS_CYCLES);
        CHECK_NEAR(qw_result(&w)->rate_bps, 60e6, 60e6 * 0.01);
        CHECK(qw_end_t(&w) < 1.6);
    }
    g_min_rtt_us = 0;
}

/* BBR: no start in DRAIN; PROBE_RTT and the slice after it are left out. */
static void test_bbr_probe_rtt_excluded(void)
{
    qw_params p = defaults(1);
    int k;

    z.n = 0;
    for (int i = 0; i < 10; i++)
        push(80e6, 300 * MSS, 20000, 0, QW_BBR_DRAIN);
    for (int i = 0; i < 300; i++) {
        int prt = i >= 40 && i < 50;    /* 200 ms of PROBE_RTT */
        push(prt ? 2e6 : 100e6, (prt ? 4 : 400) * MSS, 20000, 0,
             prt ? QW_BBR_PROBE_RTT : QW_BBR_PROBE_BW);
    }
    qw_open(&w, &p, 0.2, 300 * MSS, 0);
    k = feed_from(0);
    CHECK(w.state == QW_CONVERGED);
    CHECK_NEAR(qw_start_t(&w), z.s[10].t_s, 1e-12);
    CHECK(qw_result(&w)->basis == QW_BASIS_BBR_CYCLES);
    CHECK(qw_result(&w)->excluded_s >= 0.2);
    CHECK_NEAR(qw_result(&w)->rate_bps, 100e6, 100e6 * 0.005);
    CHECK(k > 50);
}

/* Open the window and feed z up to sample k, each leaving it open; the hold it has then. */
static qw_hold open_through(const qw_params *p, int k)
{
    qw_open(&w, p, 0.0, 400 * MSS, 0);
    for (int i = 0; i <= k; i++)
        CHECK(qw_feed(&w, &z.s[i]) == QW_OPEN);
    return qw_hold_of(&w);
}

/* BBR on a 200 ms path, PROBE_BW at a flat 100 Mbit/s: three whole gain cycles take
 * 4.8 s. With a standing queue of half a BDP in every slice (smoothed RTT 300 ms) the
 * bottleneck never idled, so RTT slices batched by time measure the rate: the window
 * converges on the time basis after 10 slices of 300 ms, long before three cycles. The
 * same series without a queue, with one slice whose queue drained to 0.05 BDP, or with
 * a second stream whose smoothed RTT shows no queue, still waits for whole cycles: at
 * that moment it is open, held by too few batches. */
static void test_bbr_busy_link_needs_no_whole_cycles(void)
{
    qw_params p = defaults(1);
    double end_t;
    int k;

    z.n = 0;
    g_min_rtt_us = 200000;
    for (int i = 0; i < 300; i++)
        push(100e6, 400 * MSS, 300000, 0, QW_BBR_PROBE_BW);
    qw_open(&w, &p, 0.0, 400 * MSS, 0);
    k = feed_from(0);
    CHECK(w.state == QW_CONVERGED);
    CHECK(qw_result(&w)->basis == QW_BASIS_TIME);
    CHECK(qw_result(&w)->batches == 5);
    CHECK_NEAR(qw_result(&w)->rate_bps, 100e6, 100e6 * 1e-3);
    end_t = qw_end_t(&w);
    CHECK(end_t > 2.8 && end_t < 3.1);
    for (int i = 0; i < z.n; i++)
        z.s[i].min_rtt_us = z.s[i].rtt_us;
    CHECK(open_through(&p, k) == QW_HOLD_FEW_BATCHES);
    CHECK(feed_from(k + 1) > k);
    CHECK(qw_end_t(&w) > end_t + 1.0);
    for (int i = 0; i < z.n; i++)
        z.s[i].min_rtt_us = 200000;
    z.s[60].rtt_us = 210000;
    CHECK(open_through(&p, k) == QW_HOLD_FEW_BATCHES);
    /* two streams, the largest smoothed RTT showing the queue throughout, the smallest
     * only at the start of the window: the queue at its least is what proves the link busy */
    z.s[60].rtt_us = 300000;
    for (int i = 0; i < z.n; i++)
        z.s[i].rtt_lo_us = i < 40 ? 300000 : 205000;
    CHECK(open_through(&p, k) == QW_HOLD_FEW_BATCHES);
    g_min_rtt_us = 0;
}

/* BBR in PROBE_BW throughout, 150 Mbit/s for the window's first 0.5 s and 250 after (cross
 * traffic left): the level change is the path's, not a transient of BBR's own, and may come
 * back at any time: the window does not converge (dropping the low part as a transient
 * read +23 % on such a path). The same rise inside BBR's STARTUP, before PROBE_BW, is
 * BBR's own ramp: dropped, and the window converges on 250. */
static void test_bbr_level_change_is_the_path(void)
{
    qw_params p = defaults(1);

    z.n = 0;
    for (int i = 0; i < 300; i++)
        push(i < 25 ? 150e6 : 250e6, 400 * MSS, 60000, 0, QW_BBR_PROBE_BW);
    qw_open(&w, &p, 0.0, 400 * MSS, 0);
    feed_from(0);
    CHECK(w.varying);
    CHECK(w.state == QW_GAVE_UP);
    for (int i = 0; i < 25; i++)
        z.s[i].bbr_mode = QW_BBR_STARTUP;
    qw_open(&w, &p, 0.0, 400 * MSS, 0);
    feed_from(0);
    CHECK(!w.varying);
    CHECK(w.state == QW_CONVERGED);
    CHECK_NEAR(qw_result(&w)->rate_bps, 250e6, 250e6 * 0.01);
}

/* A change of level puts the answer off from 100 rounds to --quick-max-ms: BBR on a 10 ms
 * path (due 1 s after opening) at 200 Mbit/s, 250 from 0.5 s and 150 from 3 s (cross
 * traffic, the host's CPU). The window that saw the first change measures to 5 s less the
 * drain and one sampling period (closing at the first sample past that), and its interval
 * spans the level that came at 3 s; before qw_put_off it answered at 1 s, with the first two. A flat 250 Mbit/s
 * still answers at its 100 rounds. */
static void test_level_change_puts_the_answer_off(void)
{
    qw_params p = defaults(1);
    qw_answer a;

    p.deadline_rtts = 100;
    z.n = 0;
    for (int i = 0; i < 300; i++)
        push(i < 25 ? 200e6 : i < 150 ? 250e6 : 150e6, 400 * MSS, 10000, 0, QW_BBR_PROBE_BW);
    qw_open(&w, &p, 0.0, 400 * MSS, 0);
    feed_from(0);
    CHECK(w.varying);
    CHECK_NEAR(w.plan_t, 5.0, 1e-9);
    CHECK(w.state == QW_GAVE_UP);
    CHECK_NEAR(w.deadline_t, 5.0 - 0.02 - 0.01, 1e-6);
    CHECK(qw_end_t(&w) > 4.9 && qw_end_t(&w) <= w.deadline_t + 0.02);
    a = qw_answer_of(&w, 20);
    CHECK(a.lo_bps <= 151e6 && a.hi_bps >= 245e6);
    z.n = 0;
    for (int i = 0; i < 300; i++)
        push(250e6, 400 * MSS, 10000, 0, QW_BBR_PROBE_BW);
    qw_open(&w, &p, 0.0, 400 * MSS, 0);
    feed_from(0);
    CHECK(!w.varying && w.plan_t < 1.1);
    CHECK(w.state == QW_CONVERGED);
    CHECK(qw_end_t(&w) < 1.1);
}

/* The prediction's PROBE_RTT cost: one visit (200 ms and a min RTT) in a 20 s run, of
 * which only the share of the BDP that 4 packets a stream leave unfilled is lost. One
 * stream of 1448-byte packets on 100 Mbit/s x 20 ms (BDP 250,000 bytes) loses 97.7 % of
 * it; eight streams of 8948-byte packets keep 286,336 bytes in flight, more than the BDP:
 * nothing is lost. */
static void test_bbr_probe_rtt_cost(void)
{
    qw_params p = defaults(1);
    double one, eight, r, sf;

    z.n = 0;
    for (int i = 0; i < 200; i++)
        push(100e6, 400 * MSS, 20000, 0, QW_BBR_PROBE_BW);
    qw_open(&w, &p, 0.0, 400 * MSS, 0);
    feed_from(0);
    CHECK(w.state == QW_CONVERGED);
    r = qw_result(&w)->rate_bps;
    one = qw_predict(&w, 20).rate_bps;
    sf = 1 - 4.0 * MSS / (r / 8 * 0.02);
    CHECK_NEAR(sf, 0.9768, 1e-3);
    CHECK_NEAR(qw_predict(&w, 20).probe_rtt_s, 0.22 * sf, 1e-9);
    for (int i = 0; i < z.n; i++)
        z.s[i].mss_bytes = 8948;
    p.streams = 8;
    qw_open(&w, &p, 0.0, 400 * MSS, 0);
    feed_from(0);
    eight = qw_predict(&w, 20).rate_bps;
    CHECK_NEAR(qw_predict(&w, 20).probe_rtt_s, 0, 0);
    CHECK_NEAR(eight - one, r * 0.22 * sf / 20.02, 1e-3);
}

/* The prediction's interval holds what the window cannot see. A steady series has no
 * scatter, so it is exactly one RTT of the steady rate at the end (100 Mbit/s x 20 ms over
 * a 20.02 s run) and the visit's part the 4 packets are counted as filling (below only);
 * with 8 streams, two RTTs (they finish unevenly), half the PROBE_RTT cost and the filled
 * part, in quadrature. */
static void test_prediction_interval_parts(void)
{
    qw_params p = defaults(1);
    qw_prediction pr;
    double r, end, visits, filled, sf;

    z.n = 0;
    for (int i = 0; i < 200; i++)
        push(100e6, 400 * MSS, 20000, 0, QW_BBR_PROBE_BW);
    qw_open(&w, &p, 0.0, 400 * MSS, 0);
    feed_from(0);
    CHECK(w.state == QW_CONVERGED);
    CHECK_NEAR(qw_result(&w)->ci_frac, 0, 1e-9);
    r = qw_result(&w)->rate_bps;
    pr = qw_predict(&w, 20);
    sf = 1 - 4.0 * MSS / (r / 8 * 0.02);
    CHECK_NEAR(pr.probe_rtt_filled_s, 0.22 * (1 - sf), 1e-9);
    end = r * 0.02 / (pr.rate_bps * 20.02);
    filled = r * 0.22 * (1 - sf) / (pr.rate_bps * 20.02);
    CHECK_NEAR(pr.tail_frac, filled, 1e-9);
    CHECK_NEAR(pr.end_frac, end, 1e-9);
    CHECK_NEAR(pr.ci_frac, sqrt(end * end + filled * filled), 1e-7);
    CHECK_NEAR(pr.ci_frac, 0.001, 1e-4);
    p.streams = 8;
    qw_open(&w, &p, 0.0, 400 * MSS, 0);
    feed_from(0);
    pr = qw_predict(&w, 20);
    CHECK(pr.probe_rtt_s > 0.17);
    CHECK_NEAR(pr.probe_rtt_s + pr.probe_rtt_filled_s, 0.22, 1e-9);
    end = 2 * r * 0.02 / (pr.rate_bps * 20.02);
    visits = 0.5 * r * pr.probe_rtt_s / (pr.rate_bps * 20.02);
    filled = r * pr.probe_rtt_filled_s / (pr.rate_bps * 20.02);
    CHECK_NEAR(pr.ci_frac, sqrt(end * end + visits * visits + filled * filled), 1e-7);
}

/* A PROBE_RTT visit holds 4 packets for whole rounds: BBR looks for its end only on an ACK,
 * and at 4 packets in flight those come once a round. At 180 ms the hold is 2 rounds (the
 * first ACK after 200 ms), 360 ms, plus the round that refills the pipe: 0.54 s, not the
 * 0.38 of 200 ms + a round. At 250 ms one round is more than 200 ms: 0.25 + 0.25 s. */
static void test_bbr_probe_rtt_whole_rounds(void)
{
    const double rtt_s[] = { 0.18, 0.25 }, visit_s[] = { 0.54, 0.50 };

    for (int k = 0; k < 2; k++) {
        qw_params p = defaults(1);
        double r, sf;

        p.max_s = 8;
        z.n = 0;
        for (int i = 0; i < 400; i++)
            push(150e6, 8000 * MSS, (uint32_t)(rtt_s[k] * 1e6), 0, QW_BBR_PROBE_BW);
        qw_open(&w, &p, 0.0, 8000 * MSS, 0);
        feed_from(0);
        CHECK(w.state == QW_CONVERGED);
        r = qw_result(&w)->rate_bps;
        sf = 1 - 4.0 * MSS / (r / 8 * rtt_s[k]);
        CHECK_NEAR(qw_predict(&w, 20).probe_rtt_s, visit_s[k] * sf, 1e-9);
    }
}

/* A rate that swings by up to +-40 % at random, holding each level for 0.4 s (slow
 * swings: neighbouring slices are strongly correlated, so a per-slice interval would be far
 * too narrow), never converges: the window gives up at max_s and still reports what it
 * measured, with its (wide) interval. */
static void test_noisy_rate_gives_up(void)
{
    qw_params p = defaults(0);
    uint32_t st = 7;

    z.n = 0;
    for (int i = 0; i < 400; i++) {
        if (i % 20 == 0)
            st = st * 1664525u + 1013904223u;
        push(100e6 * (0.6 + 0.8 * (st >> 8) / 16777216.0), 600 * MSS, 100000, 0, QW_BBR_NONE);
    }
    qw_open(&w, &p, 0.0, 600 * MSS, 0);
    feed_from(0);
    CHECK(w.state == QW_GAVE_UP);
    CHECK_NEAR(qw_end_t(&w), 5.0, 0.11);
    CHECK(qw_result(&w)->rate_bps > 80e6 && qw_result(&w)->rate_bps < 120e6);
    CHECK(qw_result(&w)->ci_frac > 0.03);
}

/* The answer is due --quick-max-ms after the window opened: the window closes the drain's
 * time and one sampling period (20 ms) before it. The drain is a smoothed RTT as it stands at
 * each sample (two with several streams), or longer when the streams' backlog (socket buffer
 * and flight) takes longer to leave at the rate measured. A noisy rate that never converges,
 * its queue filling from 100 to 400 ms of RTT from 2 to 3 s (measuring began at 2.66 s, at
 * 300 ms): it closes at 5 - 0.4 - 0.02 s, not 5 - 0.3, so the drain still ends by 5 s; with 4
 * streams at 5 - 0.8 - 0.02 s. A backlog of 0.9 s at the rate closes it at about
 * 5 - 0.9 - 0.02 s; with 4 equal streams, each with a backlog of 0.3 s at the whole rate
 * (1.2 s at its share of it: qw_drain_bytes) at about 5 - 1.2 - 0.02 s. (qw_end_t is the
 * last whole slice's end, at or before the deadline.) */
static void test_deadline_leaves_the_current_drain(void)
{
    qw_params p = defaults(0);
    uint32_t st = 7;

    p.deadline_rtts = 100;
    z.n = 0;
    for (int i = 0; i < 400; i++) {
        if (i % 20 == 0)
            st = st * 1664525u + 1013904223u;
        push(100e6 * (0.6 + 0.8 * (st >> 8) / 16777216.0), 600 * MSS,
             i < 100 ? 100000 : i < 150 ? 100000 + 6000 * (i - 100) : 400000, 0, QW_BBR_NONE);
    }
    qw_open(&w, &p, 0.0, 600 * MSS, 0);
    feed_from(0);
    CHECK(w.state == QW_GAVE_UP);
    CHECK_NEAR(w.deadline_t, 4.58, 1e-6);
    CHECK(qw_end_t(&w) <= 4.58);
    p.streams = 4;
    qw_open(&w, &p, 0.0, 600 * MSS, 0);
    feed_from(0);
    CHECK_NEAR(w.deadline_t, 4.18, 1e-6);
    CHECK(qw_end_t(&w) <= 4.18);
    for (int i = 0; i < z.n; i++)
        z.s[i].backlog_bytes = (uint64_t)(100e6 / 8 * 0.9);
    p.streams = 1;
    qw_open(&w, &p, 0.0, 600 * MSS, 0);
    feed_from(0);
    CHECK_NEAR(w.deadline_t, 4.08, 0.03);     /* the noisy rate measured: 100 Mbit/s +- 3 % */
    CHECK(w.deadline_t < 4.58 - 0.3 && qw_end_t(&w) <= w.deadline_t);
    uint64_t b4[4] = { 3750000, 3750000, 3750000, 3750000 }, c4[4] = { 1, 1, 1, 1 };

    CHECK(qw_drain_bytes(b4, c4, 4) == 4 * 3750000);
    for (int i = 0; i < z.n; i++)
        z.s[i].backlog_bytes = qw_drain_bytes(b4, c4, 4);   /* 0.3 s each at 100 Mbit/s */
    p.streams = 4;
    qw_open(&w, &p, 0.0, 600 * MSS, 0);
    feed_from(0);
    CHECK_NEAR(w.deadline_t, 3.78, 0.03);
    CHECK(w.deadline_t < 4.18 - 0.25 && qw_end_t(&w) <= w.deadline_t);
}

/* The backlog the streams leave to drain, in bytes at their summed rate: each stream's at
 * its share of the summed cwnd, never below an n-th (with a small share a stream takes more
 * once the others are done), and all of them at no more than the summed rate. 4 CUBIC
 * streams on 100 Mbit/s x 180 ms (kB): one held 8,500 with 3,900 of cwnd, the others 240,
 * 560 and 500 with 100, 280 and 250: the busiest at 3,900 / 4,530 of the rate drains
 * 8,500 x 4,530 / 3,900 = 9,873 kB's worth, not 4 x 8,500. */
static void test_drain_bytes_follow_each_streams_share(void)
{
    uint64_t b[4] = { 8500000, 240000, 560000, 500000 }, c[4] = { 3900000, 100000, 280000, 250000 };
    uint64_t eq[3] = { 1000, 1000, 1000 }, ceq[3] = { 50, 50, 50 }, one[1] = { 7000 };
    uint64_t none[2] = { 1000, 3000 }, cnone[2] = { 0, 100 };

    CHECK(qw_drain_bytes(b, c, 4) == 9873076);      /* 8.5e6 x 4.53e6 / 3.9e6 */
    CHECK(qw_drain_bytes(eq, ceq, 3) == 3000);       /* equal streams: n x each */
    CHECK(qw_drain_bytes(one, ceq, 1) == 7000);
    /* a stream with no cwnd read drains at an n-th of the rate: 2 x 1000; the other, all
     * the cwnd, 3000: all 4000 bytes at the summed rate is the most */
    CHECK(qw_drain_bytes(none, cnone, 2) == 4000);
    /* a small share never counts beyond an n-th of the rate: 2 x 3000, not 3000 x 101 */
    cnone[0] = 100;
    cnone[1] = 1;
    CHECK(qw_drain_bytes(none, cnone, 2) == 6000);
    CHECK(qw_drain_bytes(none, cnone, 0) == 0);
}

/* The sender refills the socket buffer in bursts: a backlog that falls from 0.8 s of the
 * rate to 0.4 s over 0.4 s, then jumps back. The drain counts the most of the last second
 * (0.8 s), so the window closes by 5 - 0.02 - 0.8 s, before the refill due at 4.30 s; read
 * at its lowest the backlog would have held it open into that refill, whose 0.8 s then
 * drain past the deadline. */
static void test_drain_counts_the_refilled_backlog(void)
{
    qw_params p = defaults(0);
    double top = 100e6 / 8 * 0.8;

    p.deadline_rtts = 100;
    z.n = 0;
    for (int i = 0; i < 300; i++) {
        push(100e6, 600 * MSS, 50000, 0, QW_BBR_NONE);
        /* refills at 0.30, 0.70, ... 4.30 s */
        z.s[i].backlog_bytes = (uint64_t)(top * (1 - 0.5 * fmod(z.s[i].t_s + 0.1 + 1e-9, 0.4) / 0.4));
    }
    qw_open(&w, &p, 0.0, 600 * MSS, 0);
    feed_from(0);
    CHECK(w.state == QW_GAVE_UP);
    CHECK_NEAR(w.deadline_t, 4.18, 0.01);
    CHECK(qw_end_t(&w) <= 4.2);
}

/* A drain longer than the time left (a backlog of 10 s at the rate) still leaves two round
 * trips of measuring and the first slice: the window answers with what it measured, a
 * little late, instead of closing with nothing, which would run the full test. */
static void test_long_drain_still_answers(void)
{
    qw_params p = defaults(0);

    p.deadline_rtts = 100;
    z.n = 0;
    for (int i = 0; i < 300; i++)
        push(100e6, 600 * MSS, 50000, 0, QW_BBR_NONE);
    for (int i = 0; i < z.n; i++)
        z.s[i].backlog_bytes = (uint64_t)(100e6 / 8 * 10);
    qw_open(&w, &p, 0.0, 600 * MSS, 0);
    feed_from(0);
    CHECK(w.state == QW_GAVE_UP);
    CHECK(w.n >= 1);
    CHECK(qw_end_t(&w) > qw_start_t(&w) && qw_end_t(&w) < 0.3);  /* its first slice, 60 ms */
    CHECK_NEAR(qw_result(&w)->rate_bps, 100e6, 1e6);
}

/* BBR on a lossy path (or with several streams): some stream is in a loss recovery in 3 of
 * every 4 samples, none lasting 100 ms, while the delivery rate stays at the link's. BBR's
 * rate in PROBE_BW is its model's, which losses do not lower: the window starts at the
 * first PROBE_BW sample, recovery or not, and converges on the link's rate (and may stop
 * in a recovery). The same series from a loss-based cc, or from BBR still in STARTUP,
 * starts only between recoveries. */
static void test_bbr_recovery_is_steady_state(void)
{
    qw_params p = defaults(1);
    int k;

    z.n = 0;
    for (int i = 0; i < 5; i++)
        push(80e6, 300 * MSS, 20000, 1, QW_BBR_DRAIN);
    for (int i = 0; i < 300; i++)
        push(100e6, 400 * MSS, 20000, i % 4 != 3, QW_BBR_PROBE_BW);
    qw_open(&w, &p, 0.1, 300 * MSS, 1);
    k = feed_from(0);
    CHECK(w.state == QW_CONVERGED);
    CHECK_NEAR(qw_start_t(&w), z.s[5].t_s, 1e-12);
    CHECK(z.s[5].in_recovery);
    CHECK(qw_result(&w)->basis == QW_BASIS_BBR_CYCLES);
    CHECK(qw_result(&w)->batches >= 3);
    CHECK_NEAR(qw_result(&w)->rate_bps, 100e6, 100e6 * 0.01);
    /* 3 cycles of 8 x 20 ms do not make --quick-ms: it ends at the first slice past 1 s */
    CHECK(qw_end_t(&w) - qw_start_t(&w) >= 0.95 && qw_end_t(&w) - qw_start_t(&w) < 1.1);
    CHECK(k > 0 && z.s[k].in_recovery);
    p = defaults(0);
    qw_open(&w, &p, 0.1, 300 * MSS, 1);
    feed_from(0);
    CHECK_NEAR(qw_start_t(&w), z.s[8].t_s, 1e-12);
    /* in STARTUP a recovery is the buffer's overshoot: BBR too waits it out */
    for (int i = 5; i < z.n; i++)
        z.s[i].bbr_mode = QW_BBR_STARTUP;
    p = defaults(1);
    qw_open(&w, &p, 0.1, 300 * MSS, 1);
    feed_from(0);
    CHECK_NEAR(qw_start_t(&w), z.s[8].t_s, 1e-12);
}

/* The recovery that STARTUP's overshoot began can run on into PROBE_BW, with the pipe short
 * of what was lost (packet conservation): the window waits for its end, as it waits out
 * one in STARTUP, and then takes PROBE_BW's own recoveries as steady state. The callers'
 * per-stream flag (qw_overshoot_step) tells the two apart. */
static void test_bbr_overshoot_recovery_waits(void)
{
    qw_params p = defaults(1);
    int over = 0, end;

    CHECK(qw_overshoot_step(0, 1, QW_BBR_STARTUP, 0) == 1);
    CHECK(qw_overshoot_step(0, 1, QW_BBR_DRAIN, 0) == 1);
    CHECK(qw_overshoot_step(1, 1, QW_BBR_PROBE_BW, 0) == 1);
    CHECK(qw_overshoot_step(1, 0, QW_BBR_PROBE_BW, 0) == 0);
    /* BBR never sets ssthresh: its mode, not that, says where its slow-start is */
    CHECK(qw_overshoot_step(0, 1, QW_BBR_PROBE_BW, 0) == 0);
    CHECK(qw_overshoot_step(0, 1, QW_BBR_PROBE_RTT, 0) == 0);
    /* Reno / CUBIC: the first loss (ssthresh never set before it) is slow-start's overshoot */
    CHECK(qw_overshoot_step(0, 1, QW_BBR_NONE, 0) == 1);
    CHECK(qw_overshoot_step(1, 1, QW_BBR_NONE, 40 * MSS) == 1);
    CHECK(qw_overshoot_step(1, 0, QW_BBR_NONE, 40 * MSS) == 0);
    CHECK(qw_overshoot_step(0, 1, QW_BBR_NONE, 40 * MSS) == 0);
    z.n = 0;
    for (int i = 0; i < 5; i++)
        push(100e6, 300 * MSS, 20000, 1, QW_BBR_STARTUP);
    for (int i = 0; i < 5; i++)     /* the repair: the pipe short of the lost packets */
        push(40e6, 300 * MSS, 20000, 1, QW_BBR_PROBE_BW);
    for (int i = 0; i < 300; i++)
        push(100e6, 400 * MSS, 20000, i % 4 != 0, QW_BBR_PROBE_BW);
    for (int i = 0; i < z.n; i++) {
        over = qw_overshoot_step(over, z.s[i].in_recovery, z.s[i].bbr_mode, 0);
        z.s[i].overshoot_recovery = over;
    }
    CHECK(z.s[9].overshoot_recovery && !z.s[10].overshoot_recovery);
    CHECK(z.s[11].in_recovery && !z.s[11].overshoot_recovery);
    qw_open(&w, &p, 0.1, 300 * MSS, 1);
    end = feed_from(0);
    CHECK(w.state == QW_CONVERGED);
    CHECK_NEAR(qw_start_t(&w), z.s[10].t_s, 1e-12);
    CHECK(w.drops == 0);
    CHECK_NEAR(qw_result(&w)->rate_bps, 100e6, 100e6 * 0.01);
    /* without the flag (a recovery begun in PROBE_BW) it starts in the repair, whose low
     * rate the halves then show: the window drops it, and as BBR was in PROBE_BW
     * throughout, it reads the drop as the path changing level (varying) and does not
     * converge: its answer at the deadline counts the repair again, from where measuring
     * began, and its interval spans the levels */
    for (int i = 0; i < z.n; i++)
        z.s[i].overshoot_recovery = 0;
    qw_open(&w, &p, 0.1, 300 * MSS, 1);
    CHECK(feed_from(0) > end);
    CHECK(w.drops == 1);
    CHECK(w.state == QW_GAVE_UP && w.varying);
    CHECK_NEAR(qw_start_t(&w), z.s[5].t_s, 1e-12);
    /* a stream that never leaves a recovery (more packets a round than one random loss
     * needs) is waited for one gain cycle, 8 x 20 ms after the window opened, no longer */
    for (int i = 0; i < z.n; i++)
        z.s[i].in_recovery = z.s[i].overshoot_recovery = 1;
    qw_open(&w, &p, 0.1, 300 * MSS, 1);
    feed_from(0);
    CHECK(qw_start_t(&w) >= 0.1 + 0.16 - 1e-9 && qw_start_t(&w) < 0.1 + 0.16 + 0.02);
}

/* Several Reno streams with a few packets of path each: some stream is in a recovery at
 * every sample, and that is the aggregate's steady state. The window waits out only the
 * recovery their slow-starts' overshoot began (overshoot_recovery), for at most 8 min RTTs,
 * where it used to wait until half of --quick-max-ms; one stream's recovery, the whole
 * flow's cut, still blocks. */
static void test_reno_streams_recoveries_after_the_overshoot_do_not_block(void)
{
    qw_params p = defaults(0);

    p.beta = 0.5;
    p.streams = 16;
    z.n = 0;
    for (int i = 0; i < 6; i++)     /* the overshoot's recovery */
        push(5e6, 40 * MSS, 30000, 1, QW_BBR_NONE);
    for (int i = 0; i < 300; i++)   /* one stream or another always in a recovery */
        push(5e6, 40 * MSS, 30000, 1, QW_BBR_NONE);
    for (int i = 0; i < z.n; i++)
        z.s[i].overshoot_recovery = i < 6;
    qw_open(&w, &p, 0.0, 40 * MSS, 1);
    feed_from(0);
    CHECK_NEAR(qw_start_t(&w), z.s[6].t_s, 1e-12);
    CHECK_NEAR(qw_result(&w)->rate_bps, 5e6, 5e6 * 0.01);
    /* an overshoot recovery that never ends is waited for 8 x 30 ms after the window opened */
    for (int i = 0; i < z.n; i++)
        z.s[i].overshoot_recovery = 1;
    qw_open(&w, &p, 0.0, 40 * MSS, 1);
    feed_from(0);
    CHECK(qw_start_t(&w) >= 0.24 - 1e-9 && qw_start_t(&w) < 0.24 + 0.02);
    /* one stream: every recovery is the flow's cut, and half of --quick-max-ms is waited */
    p.streams = 1;
    for (int i = 0; i < z.n; i++)
        z.s[i].overshoot_recovery = i < 6;
    qw_open(&w, &p, 0.0, 40 * MSS, 1);
    feed_from(0);
    CHECK(qw_start_t(&w) >= 2.5 - 1e-9 && qw_start_t(&w) < 2.5 + 0.02);
}

/* BBR whose STARTUP ended below the link's rate climbs towards it one probe at a time, its
 * bandwidth estimate and its rate together: too slowly for the halves to differ by the
 * tolerance, so only the estimate's rise shows the window is still in a transient. The
 * window holds (bw_rising), drops the climb and converges on the rate after it; without
 * the estimate it converged on the climb, low. */
static void test_bbr_rising_bandwidth_estimate_holds(void)
{
    qw_params p = defaults(1);
    double bw;

    z.n = 0;
    for (int i = 0; i < 300; i++) {
        bw = i < 75 ? 95e6 + 5e6 * i / 75 : 100e6;   /* +5 % over 1.5 s, then flat */
        push(bw, 400 * MSS, 20000, 0, QW_BBR_PROBE_BW);
        z.s[z.n - 1].bw_bps = (uint64_t)bw;
    }
    qw_open(&w, &p, 0.0, 400 * MSS, 0);
    feed_from(0);
    CHECK(w.state == QW_CONVERGED);
    CHECK(w.drops >= 1);
    CHECK(qw_start_t(&w) > 0.6);
    CHECK_NEAR(qw_result(&w)->rate_bps, 100e6, 100e6 * 0.015);
    for (int i = 0; i < z.n; i++)
        z.s[i].bw_bps = 0;
    qw_open(&w, &p, 0.0, 400 * MSS, 0);
    feed_from(0);
    CHECK(w.state == QW_CONVERGED);
    CHECK(w.drops == 0);
    CHECK(qw_result(&w)->rate_bps < 98.5e6);
    /* a step of the estimate (at sample 45) with the rate flat: the window drops exactly
     * what came before the estimate's new level, once */
    z.n = 0;
    for (int i = 0; i < 300; i++) {
        push(100e6, 400 * MSS, 20000, 0, QW_BBR_PROBE_BW);
        z.s[z.n - 1].bw_bps = (uint64_t)(i < 45 ? 95e6 : 100e6);
    }
    qw_open(&w, &p, 0.0, 400 * MSS, 0);
    feed_from(0);
    CHECK(w.state == QW_CONVERGED && w.drops == 1);
    CHECK_NEAR(qw_start_t(&w), z.s[44].t_s, 1e-9);
    CHECK(strcmp(qw_hold_name(QW_HOLD_BW_RISING), "bw_rising") == 0);
}

/* Several flows' estimates summed sit above the rate the link delivers and drift as the
 * flows trade share: a rise there is not the rate climbing, and nothing is dropped. */
static void test_bbr_summed_estimates_above_rate_do_not_hold(void)
{
    qw_params p = defaults(1);

    z.n = 0;
    for (int i = 0; i < 300; i++) {
        push(100e6, 400 * MSS, 20000, 0, QW_BBR_PROBE_BW);
        z.s[z.n - 1].bw_bps = (uint64_t)(112e6 + 10e6 * (i < 60 ? i : 60) / 60); /* +12-22 % */
    }
    qw_open(&w, &p, 0.0, 400 * MSS, 0);
    feed_from(0);
    CHECK(w.state == QW_CONVERGED);
    CHECK(w.drops == 0);
    CHECK_NEAR(qw_start_t(&w), z.s[0].t_s, 0.05);
    CHECK_NEAR(qw_result(&w)->rate_bps, 100e6, 100e6 * 0.005);
    /* the same climb starting at the rate: it is taken as the rate's, and dropped */
    for (int i = 0; i < z.n; i++)
        z.s[i].bw_bps = (uint64_t)(100e6 + 10e6 * (i < 60 ? i : 60) / 60);
    qw_open(&w, &p, 0.0, 400 * MSS, 0);
    feed_from(0);
    CHECK(w.drops >= 1);
}

#define PLATEAU_LIMITED 1    /* run_after_plateau: the receive window held STARTUP back */
#define PLATEAU_NO_QUEUE 2   /* ... STARTUP showed no standing queue */
#define PLATEAU_HELD_TENTH 4 /* ... the socket buffer held it back a tenth of the time */

/* Run a BBR window whose STARTUP delivered at ss_bps for 0.4 s (qw_ss_see) with a standing
 * queue of half a BDP (flags: PLATEAU_*), and whose PROBE_BW runs at rate_bps, on a min RTT
 * of rtt_us; returns the window's state. */
static qw_state run_after_plateau(double ss_bps, double rate_bps, uint32_t rtt_us, int flags)
{
    qw_params p = defaults(1);
    qw_ss_seen seen;
    int from;

    memset(&seen, 0, sizeof seen);
    z.n = 0;
    /* the connection's first rounds, before a queue built: the smoothed RTT's floor */
    for (int i = 0; i < 20; i++) {
        int early = i < 2 && !(flags & PLATEAU_NO_QUEUE);

        push(ss_bps, (early ? 40 : 400) * MSS, early ? rtt_us : rtt_us * 3 / 2, 0,
             QW_BBR_STARTUP);
        z.s[i].min_rtt_us = flags & PLATEAU_NO_QUEUE ? rtt_us * 3 / 2 : rtt_us;
        z.s[i].limited_us = flags & PLATEAU_LIMITED      ? 20000u * (uint64_t)i
                            : flags & PLATEAU_HELD_TENTH ? 2000u * (uint64_t)i
                                                         : 0;
    }
    for (int i = 0; i < z.n; i++)
        qw_ss_see(&seen, &z.s[i]);
    from = z.n;
    for (int i = 0; i < 300; i++) {
        push(rate_bps, 400 * MSS, rtt_us, 0, QW_BBR_PROBE_BW);
        z.s[z.n - 1].limited_us = z.s[from - 1].limited_us;
    }
    qw_open(&w, &p, z.s[from - 1].t_s, 400 * MSS, 0);
    qw_seen_plateau(&w, &seen);
    feed_from(from);
    return w.state;
}

/* BBR: STARTUP's plateau is a level the path gave. A window in PROBE_BW at 70 % of it
 * (other traffic took the rest since) does not converge there, and its interval reaches up
 * to the plateau, past the capacity the window saw; one at 130 % of it (traffic left) reaches
 * down to it. At the plateau's own rate the window converges. */
static void test_bbr_plateau_is_a_level(void)
{
    qw_prediction pr;
    qw_bounds b;

    CHECK(run_after_plateau(100e6, 100e6, 40000, 0) == QW_CONVERGED);
    CHECK_NEAR(w.ss_rate, 100e6 / 8, 1e-6);    /* 4 samples of 20 ms: 2 min RTTs */
    CHECK_NEAR(w.ss_rate_top, w.ss_rate, 1e-6);
    CHECK(!w.ss_level_differs);

    CHECK(run_after_plateau(100e6, 70e6, 40000, 0) == QW_GAVE_UP);
    CHECK(qw_hold_of(&w) == QW_HOLD_VARYING && w.ss_level_differs);
    pr = qw_predict(&w, 20.0);
    b = qw_bound(&w, &pr);
    CHECK(b.by == QW_BOUND_LEVELS);
    CHECK_NEAR(b.steady, 70e6 / 8, 70e6 / 8 * 1e-3);
    CHECK_NEAR(b.hi, 100e6 / 8, 1e-6);

    CHECK(run_after_plateau(100e6, 130e6, 40000, 0) == QW_GAVE_UP);
    pr = qw_predict(&w, 20.0);
    b = qw_bound(&w, &pr);
    CHECK(b.by == QW_BOUND_LEVELS);
    CHECK_NEAR(b.lo, 100e6 / 8, 1e-6);
}

/* With 20 ms samples and a 10 ms min RTT the plateau's span (60 ms) reaches back into
 * STARTUP's ramp, so it may read the path's rate low: a window above it still converges,
 * and one a change of level below it does not. So too for a plateau the receive window
 * held back throughout, or one that no standing queue showed at the link's rate. Held back
 * a tenth of its span, it read at most a tenth low: a window above that converges, one a
 * change of level above it does not. */
static void test_bbr_plateau_read_low_bounds_from_below(void)
{
    CHECK(run_after_plateau(70e6, 100e6, 10000, 0) == QW_CONVERGED);
    CHECK(w.ss_rate_top == 0 && !w.ss_level_differs);
    CHECK(run_after_plateau(100e6, 70e6, 10000, 0) == QW_GAVE_UP);
    CHECK(w.ss_level_differs);
    CHECK(run_after_plateau(70e6, 100e6, 40000, PLATEAU_LIMITED) == QW_CONVERGED);
    CHECK(w.ss_rate_top == 0 && !w.ss_level_differs);
    CHECK(run_after_plateau(70e6, 100e6, 40000, PLATEAU_NO_QUEUE) == QW_CONVERGED);
    CHECK(w.ss_rate_top == 0 && !w.ss_level_differs);
    CHECK(run_after_plateau(100e6, 70e6, 40000, PLATEAU_NO_QUEUE) == QW_GAVE_UP);
    CHECK(w.ss_level_differs);
    CHECK(run_after_plateau(85e6, 100e6, 40000, PLATEAU_HELD_TENTH) == QW_CONVERGED);
    CHECK_NEAR(w.ss_rate_top, 85e6 / 8 / 0.9, 1e-3);
    CHECK(!w.ss_level_differs);
    CHECK(run_after_plateau(70e6, 100e6, 40000, PLATEAU_HELD_TENTH) == QW_GAVE_UP);
    CHECK(qw_hold_of(&w) == QW_HOLD_VARYING && w.ss_level_differs);
}

/* A window that never finds a steady moment (recovery throughout: a lossy path's steady
 * state) starts measuring all the same once half of max_s went by, so that it answers by its
 * deadline with what the second half showed. */
static void test_never_started(void)
{
    qw_params p = defaults(0);

    z.n = 0;
    for (int i = 0; i < 300; i++)
        push(1e6, 10 * MSS, 200000, 1, QW_BBR_NONE);
    qw_open(&w, &p, 0.0, 10 * MSS, 1);
    feed_from(0);
    CHECK(w.state == QW_GAVE_UP);
    CHECK(qw_start_t(&w) >= p.max_s / 2 && qw_start_t(&w) < p.max_s / 2 + 0.021);
    CHECK_NEAR(qw_result(&w)->rate_bps, 1e6, 1e6 * 0.01);
}

/* Load a recorded trace (tests/traces/qw-*.csv, written from quickprobe --json):
 * t_s,delivered,cwnd,rtt,min_rtt,retrans,in_recovery,bbr_mode,in_slow_start,limited_us. */
static int load(const char *name)
{
    char path[256], line[512];
    FILE *f;

    snprintf(path, sizeof path, "tests/traces/%s", name);
    f = fopen(path, "r");
    check_record(f != NULL, __FILE__, __LINE__, path);
    z.n = 0;
    if (!f)
        return 0;
    while (z.n < MAXN && fgets(line, sizeof line, f)) {
        qw_sample *s = &z.s[z.n];
        unsigned long long d, c, lim;
        unsigned rtt, mr, rt;
        int rec, mode, ss;

        if (line[0] == '#' || sscanf(line, "%lf,%llu,%llu,%u,%u,%u,%d,%d,%d,%llu", &s->t_s, &d,
                                     &c, &rtt, &mr, &rt, &rec, &mode, &ss, &lim) != 10)
            continue;
        /* the recorded qw-* traces are from the lab's 9000-byte MTU */
        *s = (qw_sample){ .t_s = s->t_s, .delivered_bytes = d, .cwnd_bytes = c, .rtt_us = rtt,
                          .min_rtt_us = mr, .retrans = rt, .in_recovery = rec,
                          .bbr_mode = (qw_bbr_mode)mode, .limited_us = lim, .mss_bytes = 8948 };
        z.ss[z.n++] = ss;
    }
    fclose(f);
    return z.n;
}

/* Open w on the loaded trace as the prober does, at the first sample out of slow-start;
 * returns that index, or -1 if slow-start never ended. */
static int open_at_ss_end(const qw_params *p)
{
    int k = 0;

    while (k < z.n && z.ss[k])
        k++;
    if (k == z.n)
        return -1;
    qw_open(&w, p, z.s[k].t_s, z.s[k].cwnd_bytes, z.s[k].retrans > 0);
    return k;
}

/* Feed z from index k while its samples are before t_s, the window staying open on each;
 * returns the index of the first sample not fed. */
static int feed_open_until(int k, double t_s)
{
    while (k < z.n && z.s[k].t_s < t_s)
        CHECK(qw_feed(&w, &z.s[k++]) == QW_OPEN);
    return k;
}

/* Load trace name (more than min_n samples) and open w on it at slow-start's end with p;
 * returns the index of that sample. */
static int load_open(const char *name, int min_n, const qw_params *p)
{
    int k;

    CHECK(load(name) > min_n);
    k = open_at_ss_end(p);
    CHECK(k > 0);
    return k;
}

/* Replay a loaded trace as the prober does: open at the first sample out of slow-start.
 * Returns that index; the window's verdict is in w. */
static int replay(int bbr)
{
    qw_params p = defaults(bbr);
    int k = open_at_ss_end(&p);

    if (k < 0)
        return -1;
    feed_from(k);
    if (getenv("QW_DEBUG"))
        fprintf(stderr, "replay: open %.3f start %.3f end %.3f state %d rate %.4g ci %.4f b %d "
                "basis %s excl %.2f pred20 %.5g\n", z.s[k].t_s, qw_start_t(&w), qw_end_t(&w), w.state,
                qw_result(&w)->rate_bps, qw_result(&w)->ci_frac, qw_result(&w)->batches,
                qw_basis_name(qw_result(&w)->basis), qw_result(&w)->excluded_s,
                qw_predict(&w, 20).rate_bps);
    return k;
}

/* Replay trace name and return the window's prediction of the 20 s run, in bit/s. */
static double replay_predict(const char *name, int bbr)
{
    CHECK(load(name) > 500);
    CHECK(replay(bbr) > 0);
    return qw_predict(&w, 20).rate_bps;
}

/* Recorded on the path lab, paired with the same connection's 20 s figure (validate -t 20,
 * in each trace's header). Converged runs must predict it; runs where the window cannot
 * know what the sawtooth will do must give up (the full run is then the result). */
static void test_recorded_quick_windows(void)
{
    double pred, q;
    int cut = -1, full_at = -1;

    /* CUBIC, one-BDP buffer: HyStart at 0.54 s, a cut at 1.78 s; the queue (RTT 111 of
     * 70 ms min) proves the link full, and 5,000 loss-free packets (9000-byte MTU) after
     * the recovery rule out random loss of 0.1 %; a 140-packet window outlives only random
     * loss below 1e-4, which the packets of 5 s cannot rule out: the window answers at its
     * deadline, held by that (random_loss), 20 s predicted within 0.3 %, and its interval,
     * whose lower end that random loss sets, holds the 20 s figure. */
    pred = replay_predict("qw-cubic-1bdp.csv", 0);
    CHECK(w.state == QW_GAVE_UP && qw_hold_of(&w) == QW_HOLD_RANDOM_LOSS);
    CHECK(fabs(pred - 141480412.8) / 141480412.8 < 0.003);
    {
        qw_prediction pr = qw_predict(&w, 20);
        qw_bounds b = qw_bound(&w, &pr);

        CHECK(b.by == QW_BOUND_RANDOM_LOSS);
        CHECK(b.lo_bps < 141480412.8 && b.hi_bps > 141480412.8);
    }
    /* the same with +-2 ms jitter: slow-start ends at 0.66 s (cwnd 2.95 MB); the overshoot's
     * cut leaves cwnd below that and climbing back. The window does not end before the
     * standing queue shows a full link (0.43 BDP); here the 5,000 clean packets do not come
     * by 5 s and it gives up, with an estimate within 0.2 %. */
    pred = replay_predict("qw-cubic-1bdp-jitter.csv", 0);
    CHECK(w.state == QW_GAVE_UP);
    for (int i = 0; i < z.n && full_at < 0; i++) {
        if (cut < 0 && z.s[i].in_recovery && z.s[i].t_s > 0.66)
            cut = i;
        if (cut >= 0 && !z.s[i].in_recovery &&
            (double)(z.s[i].rtt_us - z.s[i].min_rtt_us) / z.s[i].min_rtt_us >= 0.3 / 0.7)
            full_at = i;
    }
    CHECK(cut > 0 && z.s[cut + 10].cwnd_bytes < 2945232);
    CHECK(full_at > cut);
    CHECK(qw_end_t(&w) >= z.s[full_at].t_s);
    CHECK(fabs(pred - 141236063.8) / 141236063.8 < 0.002);
    /* 0.25-BDP buffer: no queue to speak of and no cut until 4.7 s, when the first cut
     * collapses cwnd and the rate to 40-60 Mbit/s for the rest of the run (20 s: 61.3). The
     * window's rate (145 until then) says nothing about that: it gives up. */
    pred = replay_predict("qw-cubic-quarter-bdp.csv", 0);
    CHECK(w.state == QW_GAVE_UP);
    CHECK(pred > 1.5 * 61306077.93);
    /* lossy (0.1 % random loss): cwnd falls from slow-start's level over many cuts; no
     * whole cycles agree within 3 % by 5 s: gives up (20 s: 47.0 Mbit/s). */
    replay_predict("qw-cubic-lossy.csv", 0);
    CHECK(w.state == QW_GAVE_UP);
    /* lossy again: slow-start's overshoot leaves the buffer full (cuts at 0.88 s with the
     * queue still at 0.98 BDP: not a climb in congestion avoidance), the first random loss
     * comes at 2.0 s (queue 0.58 BDP, below the 0.98 seen), then cwnd falls for seconds: the
     * 0.1-2.3 s rate (99 Mbit/s) is twice the 20 s figure (46.7), and the window gives up. */
    replay_predict("qw-cubic-lossy-overshoot.csv", 0);
    CHECK(w.state == QW_GAVE_UP);
    /* BBR with jitter: plateau at 1.10 s, DRAIN until 1.32 s (the window starts after it),
     * three gain cycles of 8 min RTTs; 20 s predicted within 0.2 % (one PROBE_RTT counted). */
    q = replay_predict("qw-bbr-1bdp-jitter.csv", 1);
    CHECK(w.state == QW_CONVERGED);
    CHECK(qw_result(&w)->basis == QW_BASIS_BBR_CYCLES);
    CHECK(qw_start_t(&w) > 1.2);
    for (int i = 0; i < z.n && z.s[i].t_s < qw_start_t(&w); i++)
        CHECK(z.s[i].bbr_mode != QW_BBR_PROBE_BW || z.ss[i]);
    CHECK(fabs(q - 139195482.3) / 139195482.3 < 0.002);
}

/* Recorded off the bench's matrix: Reno at 5 Mbit/s x 30 ms, a 2.5 BDP buffer (the queue
 * stays above 1 BDP: the link is full throughout), 2 Mbit/s cross traffic 2 s on / 3 s off
 * from before the run began. The on phase (2.9 Mbit/s) is dropped as transients and
 * whole loss cycles are counted from 1.5 s on, all in the off phase (4.8); that head ran
 * at another level with the link full, so the path's share changed and the window gives
 * up (20 s: 4.13 Mbit/s; it had converged at 3.86 s on 4.84, +17 %). Without the standing
 * queue the head could be the flow's own transient, and it does not hold the window. */
static void test_recorded_head_at_full_link_is_the_path(void)
{
    qw_params p = defaults(0);
    int k;

    p.beta = 0.5;
    k = load_open("qw-reno-cross-on-off.csv", 250, &p);
    /* at 3.9 s, where it converged before, the head holds it (the level change back comes
     * at 4.3 s, and then the halves say so too) */
    k = feed_open_until(k, 3.9);
    CHECK(w.head_differs);
    CHECK(qw_hold_of(&w) == QW_HOLD_HEAD);
    CHECK(!w.varying);
    CHECK(w.est.basis == QW_BASIS_LOSS_CYCLES && w.est.ci_frac < p.tolerance);
    feed_from(k);
    CHECK(w.state == QW_GAVE_UP);
    for (int i = 0; i < z.n; i++)
        z.s[i].rtt_us = z.s[i].min_rtt_us;
    feed_from(open_at_ss_end(&p));
    CHECK(!w.head_differs);
}

/* Recorded on the bench's 8-stream BBR row with 75 Mbit/s cross traffic 500 ms on /
 * 1500 ms off (300 Mbit/s x 50 ms, 1 BDP buffer). The window's first second held an on
 * phase (about 222 Mbit/s from 1.88 to 2.38 s against 298 off it); its halves were 3-9 %
 * apart, so it was dropped as a transient at 2.88 s, and the window converged at 3.58 s
 * on the off phase after it, 297 Mbit/s: +6.2 % from the row's 20 s mean. All of it in
 * PROBE_BW: the head's level is the path's, and the window holds. */
static void test_recorded_bbr_head_in_probe_bw_is_the_path(void)
{
    qw_params p = defaults(1);
    int k, k0;
    double t0, rate = 297e6 / 8;

    p.streams = 8;
    k0 = k = load_open("qw-bbr-cross-on-off.csv", 150, &p);
    k = feed_open_until(k, 3.0);
    CHECK(w.drops == 1 && !w.varying && !w.head_differs);
    k = feed_open_until(k, 3.6);
    CHECK(k == z.n);
    CHECK(w.state == QW_OPEN);
    CHECK(w.head_differs);
    /* A standing queue kept the link busy, so before three whole gain cycles the batches
     * are RTT slices (qw_link_busy), four of them at the recording's end: too few. With
     * the off phase going on at its rate for 2 s more (a second transient dropped on the
     * way holds the window for twice --quick-ms), seven whole cycles are the batches,
     * their interval is within the tolerance, and the head alone holds the window. */
    for (int i = 0; i < 100; i++) {
        z.s[z.n] = z.s[z.n - 1];
        z.s[z.n].t_s += 0.02;
        z.s[z.n].delivered_bytes += (uint64_t)(rate * 0.02);
        z.n++;
    }
    feed_from(k);
    CHECK(w.state == QW_OPEN);
    CHECK(w.head_differs);
    CHECK(qw_hold_of(&w) == QW_HOLD_HEAD);
    CHECK(w.est.ci_frac < p.tolerance);
    CHECK(!w.varying);
    /* the same samples delivering at the off phase's rate throughout: no head to hold it */
    t0 = z.s[k0].t_s;
    for (int i = k0 + 1; i < z.n; i++)
        z.s[i].delivered_bytes = z.s[k0].delivered_bytes + (uint64_t)((z.s[i].t_s - t0) * rate);
    feed_from(open_at_ss_end(&p));
    CHECK(w.state == QW_CONVERGED);
    CHECK(!w.head_differs);
}

/* Recorded off the bench's matrix: CUBIC, 2 streams, 400 Mbit/s x 60 ms, 0.6 BDP buffer,
 * 160 Mbit/s cross traffic 2 s on / 3 s off. The window counts the off phase (397 Mbit/s,
 * the queue under 0.2 BDP); at 4.74 s the cross traffic returns, its queue (0.5 BDP)
 * proves the link full, and the window had converged on that very slice (288 Mbit/s, no
 * cut in it) on +22.9 % (20 s: 306.6). It must not stop on a slice that left the
 * batches' level without a cut of the flow's own: it gives up. (At a 5 % tolerance: at 3 %
 * the interval at the plan's early-check level, 3.6 %, holds it there first.) */
static void test_recorded_last_slice_change_holds_window(void)
{
    qw_params p = defaults(0);
    int k;

    p.streams = 2;
    p.tolerance = 0.05;
    k = load_open("qw-cubic-cross-on-off.csv", 250, &p);
    k = feed_open_until(k, 4.745);
    CHECK(w.last_differs);
    CHECK(qw_hold_of(&w) == QW_HOLD_LAST_SLICE);
    CHECK(w.s[w.n - 1].t1 > 4.7 && w.s[w.n - 1].bytes * 8 / (w.s[w.n - 1].t1 - w.s[w.n - 1].t0) < 300e6);
    feed_from(k);
    CHECK(w.state == QW_GAVE_UP);
}

/* Run every test; the exit status says whether all passed. */
/* The standing queue over the smoothed RTT's floor: the floor is the base when above the
 * min RTT, the min RTT otherwise; no base, or an RTT at or below it, reads no queue. */
static void test_queue_over_floor_exact(void)
{
    CHECK_NEAR(qw_queue_over(40000, 37900, 30400), 2100.0 / 37900, 1e-12);
    CHECK_NEAR(qw_queue_over(40000, 0, 30400), 9600.0 / 30400, 1e-12);
    CHECK_NEAR(qw_queue_over(40000, 20000, 30400), 9600.0 / 30400, 1e-12);
    CHECK(qw_queue_over(37000, 37900, 30400) == 0);
    CHECK(qw_queue_over(37900, 37900, 30400) == 0);
    CHECK(qw_queue_over(40000, 0, 0) == 0);
}

/* Reno on a jittered path: the min RTT is the lowest draw (30 ms), the smoothed RTT sits at
 * its no-queue level (40 ms) while cwnd grows through a third of the BDP. Over the min RTT
 * that reads a standing queue of 0.33 BDP, and cwnd's smallest value with one bounded the
 * capacity below the rate the flow reached later. With slow-start's first rounds seeding
 * the smoothed RTT's floor at 40 ms there is no queue, and no capacity ceiling; without
 * them (no floor) the min RTT is the base, as before. */
static void run_jittered_climb(int seed_floor)
{
    qw_params p = defaults(0);
    qw_ss_seen seen;
    int from;

    p.beta = 0.5;
    memset(&seen, 0, sizeof seen);
    z.n = 0;
    g_min_rtt_us = 30000;
    for (int i = 0; i < 5; i++)
        push(2e6 * (i + 1), (uint64_t)(10 << i) * MSS, 40000, 0, QW_BBR_NONE);
    if (seed_floor)
        for (int i = 0; i < z.n; i++)
            qw_ss_see(&seen, &z.s[i]);
    from = z.n;
    for (int i = 0; i < 150; i++)
        push(10e6 + 1e5 * i, (uint64_t)(35 + i / 2) * MSS, 40000, 0, QW_BBR_NONE);
    g_min_rtt_us = 0;
    qw_open(&w, &p, z.s[from - 1].t_s, 160 * MSS, 0);
    qw_seen(&w, &seen);
    feed_from(from);
}

static void test_jitter_floor_is_no_queue(void)
{
    run_jittered_climb(1);
    CHECK(w.srtt_floor_us == 40000);
    CHECK(w.queue_cwnd_bytes == 0);
    CHECK(w.max_queue == 0);

    run_jittered_climb(0);
    CHECK(w.srtt_floor_us == 0);
    CHECK(w.queue_cwnd_bytes > 0);
    CHECK_NEAR(w.max_queue, 10000.0 / 30000, 1e-9);
}

/* A stream begins an event on entering a recovery, or on a retransmission outside one that
 * its cc answered (any for BBR); not while it stays in one. */
static void test_stream_event_exact(void)
{
    CHECK(qw_stream_event(0, 1, 5, 5, 0, 0) == 1);
    CHECK(qw_stream_event(1, 1, 5, 9, 1, 0) == 0);
    CHECK(qw_stream_event(1, 0, 5, 6, 1, 0) == 0);
    CHECK(qw_stream_event(0, 0, 5, 6, 1, 0) == 1);
    CHECK(qw_stream_event(0, 0, 5, 6, 0, 0) == 0);
    CHECK(qw_stream_event(0, 0, 5, 6, 0, 1) == 1);
    CHECK(qw_stream_event(0, 0, 5, 5, 1, 0) == 0);
}

/* Eight CUBIC streams on a lossy path with no queue: some stream is always in a recovery,
 * so the aggregate sees one event; the streams began eleven. The random-loss floor counts
 * the streams' eleven, and sits lower than the aggregate's one would put it. */
static void run_overlapping_recoveries(int per_stream)
{
    qw_params p = defaults(0);

    p.streams = 8;
    z.n = 0;
    for (int i = 0; i < 150; i++) {
        push(100e6, 700 * MSS, 50000, i >= 10 && i <= 60, QW_BBR_NONE);
        z.s[i].stream_events = per_stream && i >= 10 && i <= 60 && i % 5 == 0;
    }
    qw_open(&w, &p, 0.0, 700 * MSS, 0);
    feed_from(0);
}

static void test_overlapping_recoveries_count_per_stream(void)
{
    qw_bound_by by1, by11;
    double one, eleven;

    run_overlapping_recoveries(0);
    CHECK(w.random_events == 1 && w.random_stream_events == 0);
    one = qw_loss_floor(&w, 100e6 / 8, &by1);
    run_overlapping_recoveries(1);
    CHECK(w.random_events == 1 && w.random_stream_events == 11);
    eleven = qw_loss_floor(&w, 100e6 / 8, &by11);
    CHECK(by11 == QW_BOUND_RANDOM_LOSS);
    CHECK(eleven < one);
}

int main(int argc, char **argv)
{
    if (argc == 3) {    /* debugging aid: test_quickwin TRACE bbr(0|1) */
        load(argv[1]);
        replay(atoi(argv[2]));
        return 0;
    }
    test_batch_ci_exact();
    test_queue_over_floor_exact();
    test_jitter_floor_is_no_queue();
    test_due_after_a_late_slow_start();
    test_bbr_modes_from_gains();
    test_flat_rate_converges_at_min();
    test_first_slice_longer_than_the_window_still_answers();
    test_window_stops_only_at_planned_checks();
    test_shallow_queue_waits_for_a_cut();
    test_rising_rate_waits();
    test_cwnd_climb_back_holds_window();
    test_sawtooth_uses_whole_cycles();
    test_falling_peaks_are_a_transient();
    test_scattered_peaks_are_level();
    test_loss_free_packets_before_the_queue_proof();
    test_ssthresh_set_is_a_new_value();
    test_stream_event_exact();
    test_overlapping_recoveries_count_per_stream();
    test_overshoot_proves_a_deep_buffer();
    test_level_changes_are_not_dropped_twice();
    test_random_loss_voids_queue_proof();
    test_bbr_probe_rtt_excluded();
    test_bbr_recovery_is_steady_state();
    test_bbr_overshoot_recovery_waits();
    test_reno_streams_recoveries_after_the_overshoot_do_not_block();
    test_bbr_rising_bandwidth_estimate_holds();
    test_bbr_summed_estimates_above_rate_do_not_hold();
    test_bbr_plateau_is_a_level();
    test_bbr_plateau_read_low_bounds_from_below();
    test_bbr_probe_rtt_cost();
    test_bbr_probe_rtt_whole_rounds();
    test_prediction_interval_parts();
    test_tail_faster_than_cycles_holds_window();
    test_bbr_level_change_is_the_path();
    test_level_change_puts_the_answer_off();
    test_bbr_busy_link_needs_no_whole_cycles();
    test_noisy_rate_gives_up();
    test_drain_bytes_follow_each_streams_share();
    test_deadline_leaves_the_current_drain();
    test_long_drain_still_answers();
    test_drain_counts_the_refilled_backlog();
    test_never_started();
    test_recorded_quick_windows();
    test_recorded_head_at_full_link_is_the_path();
    test_recorded_bbr_head_in_probe_bw_is_the_path();
    test_recorded_last_slice_change_holds_window();
    return check_done();
}
