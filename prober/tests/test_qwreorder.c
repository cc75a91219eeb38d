/* test_qwreorder.c: a path whose reordering the kernel has learned: the lower side for its
 * first overflow (qw_reorder_overflow in src/qwfloor.c), and cuts that follow another
 * recovery, which the upper side does not take as random loss (qw_follows_recovery in
 * src/qwundo.c). */
#include "check.h"
#include "quickwin.h"
#include "qwint.h"

#include <math.h>
#include <string.h>

#define MSS 1448
#define RTT_US 90000
#define RATE_BPS 100e6

static qw_sample s[400];
static qw_window w;
static uint32_t rtt_us = RTT_US;   /* fill's path */

/* Samples every 20 ms for 6 s of a flow alone at RATE_BPS over a path of rtt_us with a
 * standing queue of 50 ms (the link full, so no growth term), no loss, cwnd growing a packet
 * a round from 800 packets; the kernel's reordering degree reord. */
static void fill(uint32_t reord)
{
    for (int k = 0; k < 300; k++) {
        double t = 0.02 * (k + 1);

        s[k] = (qw_sample){ .t_s = t, .rtt_us = rtt_us + 50000, .min_rtt_us = rtt_us,
                            .cwnd_bytes = (uint64_t)(800 + t / (rtt_us / 1e6)) * MSS,
                            .mss_bytes = MSS,
                            .reordering_segments = reord };
        s[k].delivered_bytes = (uint64_t)(RATE_BPS / 8 * t);
    }
}

/* Open a window (one stream, beta 0.7 CUBIC or 0.5 Reno, 4 s deadline) and feed every
 * sample until it closes; the prediction for a 20 s run. */
static qw_prediction feed(double beta)
{
    qw_params p = { .tolerance = 0.03, .min_s = 1.0, .max_s = 4.0, .sample_s = 0.02,
                    .beta = beta, .streams = 1, .full_s = 20 };

    qw_open(&w, &p, 0.0, 800 * MSS, 0);
    for (int i = 0; i < 300 && qw_feed(&w, &s[i]) == QW_OPEN; i++)
        ;
    qw_stop(&w);
    return qw_predict(&w, 20);
}

/* The floor written out: the counted part at the rate measured, then cwnd from 2 packets
 * grown by the law pkts(tau) at the 90 ms round trip, up to that rate (integrated finely). */
static double floor_by_hand(const qw_prediction *pr, int cubic)
{
    double rate = w.est.rate_bps / 8, done = w.s[w.n - 1].t1 - w.start_t;
    double to_go = pr->rest_s - done, sum = 0, dt = to_go / 100000, rtt = RTT_US / 1e6;

    for (int k = 0; k < 100000; k++) {
        double tau = (k + 0.5) * dt, pkts = 2 + (cubic ? 0.3 / 1.7 * 3 : 1) * tau / rtt;

        if (cubic)
            pkts = fmax(pkts, 2 + 0.4 * tau * tau * tau);
        sum += fmin(rate, pkts * MSS / rtt) * dt;
    }
    return (rate * done + sum) / pr->rest_s;
}

/* CUBIC with no cut on a path where the kernel learned reordering of 120 packets: the
 * window cannot close early, and the lower side is cwnd to the floor and back by CUBIC's
 * law for the rest of the run. */
static void test_cubic_first_overflow_may_cascade(void)
{
    qw_prediction pr;
    qw_bounds b;
    double want;

    fill(120);
    pr = feed(0.7);
    CHECK(w.state == QW_GAVE_UP);
    CHECK(qw_reorder_overflow(&w));
    want = floor_by_hand(&pr, 1);
    CHECK_NEAR(qw_reorder_overflow_floor(&w, &pr), want, want * 2e-3);
    b = qw_bound(&w, &pr);
    CHECK(b.by == QW_BOUND_REORDER_OVERFLOW);
    CHECK_NEAR(b.lo, want, want * 2e-3);
    /* well below the rate: 2 packets back to 1,080 takes CUBIC about 14 s; a window that
     * could stop then would answer wider than the tolerance, so it holds */
    CHECK(b.lo < 0.6 * b.steady);
    CHECK(qw_reorder_overflow_holds(&w));
    CHECK_STR(qw_bound_name(b.by), "reorder_overflow");
}

/* Reno grows back a packet a round: a lower floor than CUBIC's on the same samples. */
static void test_reno_grows_back_a_packet_a_round(void)
{
    qw_prediction pr;
    double want, cubic;

    fill(120);
    pr = feed(0.7);
    cubic = qw_reorder_overflow_floor(&w, &pr);
    pr = feed(0.5);
    want = floor_by_hand(&pr, 0);
    CHECK_NEAR(qw_reorder_overflow_floor(&w, &pr), want, want * 2e-3);
    CHECK(want < cubic);
}

/* The kernel's default degree (3) is no reordering learned, BBR ignores losses' causes, and
 * a window that kept a cut saw the kernel's loss response on this path: no such floor. */
static void test_no_floor_without_learned_reordering_or_after_a_kept_cut(void)
{
    qw_prediction pr;

    fill(3);
    pr = feed(0.7);
    CHECK(!qw_reorder_overflow(&w));
    CHECK(qw_reorder_overflow_floor(&w, &pr) == 0);
    CHECK(qw_hold_of(&w) != QW_HOLD_REORDER_OVERFLOW);
    CHECK(qw_bound(&w, &pr).by != QW_BOUND_REORDER_OVERFLOW);
    fill(120);
    pr = feed(0.7);
    w.events = 1;
    CHECK(!qw_reorder_overflow(&w));
    w.undone_events = 1;
    CHECK(qw_reorder_overflow(&w));
    w.p.bbr = 1;
    CHECK(!qw_reorder_overflow(&w));
    CHECK(qw_reorder_overflow_floor(&w, &pr) == 0);
}

/* Samples every 20 ms for 4 s at RATE_BPS with no queue, reordering degree reord: a recovery
 * from 1.00 to 1.20 s, another beginning at 1.24 s (two samples after the first ended) and
 * ending at 1.40 s, and a third from 3.00 to 3.10 s, far from any other. */
static void fill_recoveries(uint32_t reord)
{
    uint32_t retrans = 0;

    for (int k = 0; k < 200; k++) {
        double t = 0.02 * (k + 1);
        int rec = (t > 0.99 && t < 1.19) || (t > 1.23 && t < 1.39) || (t > 2.99 && t < 3.09);
        int begins = k > 0 && rec && !s[k - 1].in_recovery;

        retrans += begins;
        s[k] = (qw_sample){ .t_s = t, .rtt_us = RTT_US, .min_rtt_us = RTT_US,
                            .cwnd_bytes = 800 * MSS, .mss_bytes = MSS, .in_recovery = rec,
                            .retrans = retrans, .ssthresh_set = begins,
                            .stream_events = (uint32_t)begins,
                            .reordering_segments = reord };
        s[k].delivered_bytes = (uint64_t)(RATE_BPS / 8 * t);
    }
}

/* Every cut here may be random (no queue was ever seen), but on a path the kernel learned
 * reorders the one that began 40 ms after another recovery ended followed it: the upper
 * side does not take it as random loss. With the kernel's default degree it is one. */
static void test_cut_right_after_a_recovery_is_no_proof_of_random_loss(void)
{
    qw_params p = { .tolerance = 0.03, .min_s = 1.0, .max_s = 4.0, .sample_s = 0.02,
                    .beta = 0.5, .streams = 1, .full_s = 20 };

    fill_recoveries(120);
    qw_open(&w, &p, 0.0, 800 * MSS, 0);
    for (int i = 0; i < 200 && qw_feed(&w, &s[i]) == QW_OPEN; i++)
        ;
    CHECK_EQ(w.events, 3);
    CHECK_EQ(w.random_events, 3);
    CHECK_EQ(w.follow_events, 1);
    CHECK_EQ(w.follow_stream_events, 1);
    CHECK_EQ(qw_random_losses_shown(&w), 2);
    CHECK_EQ(qw_random_loss_events(&w), 3);     /* the floor still counts it */
    fill_recoveries(3);
    qw_open(&w, &p, 0.0, 800 * MSS, 0);
    for (int i = 0; i < 200 && qw_feed(&w, &s[i]) == QW_OPEN; i++)
        ;
    CHECK_EQ(w.follow_events, 0);
    CHECK_EQ(qw_random_losses_shown(&w), 3);
}

/* On an 8 ms path cwnd is back from the floor within a second or two: the floor is within
 * the tolerance of the rate, and does not hold the window. */
static void test_short_path_grows_back_within_the_tolerance(void)
{
    qw_prediction pr;
    double floor_rate;

    rtt_us = 8000;
    fill(120);
    rtt_us = RTT_US;
    pr = feed(0.7);
    CHECK(qw_reorder_overflow(&w));
    floor_rate = qw_reorder_overflow_floor(&w, &pr);
    CHECK(floor_rate > 0.97 * w.est.rate_bps / 8);
    CHECK(floor_rate < w.est.rate_bps / 8);
    CHECK(!qw_reorder_overflow_holds(&w));
    w.p.full_s = 0;     /* a run of unknown length: held */
    CHECK(qw_reorder_overflow_holds(&w));
}

/* A recovery that began as the window closed shows no more of the kernel's response than
 * none: whether cuts follow it is not seen, so the floor applies; one the window saw end
 * with its cut kept has been seen. */
static void test_cut_still_in_recovery_at_the_close_is_not_seen(void)
{
    fill(120);
    for (int k = 0; k < 300; k++) {
        s[k].in_recovery = s[k].t_s > 3.79;
        s[k].retrans = s[k].in_recovery;
        s[k].ssthresh_set = s[k].stream_events = k > 0 && s[k].in_recovery && !s[k - 1].in_recovery;
    }
    feed(0.7);
    CHECK_EQ(w.events, 1);
    CHECK(w.mark.pending);
    CHECK(qw_reorder_overflow(&w));
    fill(120);
    for (int k = 0; k < 300; k++) {
        s[k].in_recovery = s[k].t_s > 1.99 && s[k].t_s < 2.19;
        s[k].retrans = s[k].t_s > 1.99;
        s[k].ssthresh_set = s[k].stream_events = k > 0 && s[k].in_recovery && !s[k - 1].in_recovery;
    }
    feed(0.7);
    CHECK_EQ(w.events, 1);
    CHECK(!w.mark.pending);
    CHECK(!qw_reorder_overflow(&w));
}

/* The hold's name and words, for quick_held_by. */
static void test_hold_is_named(void)
{
    CHECK_STR(qw_hold_name(QW_HOLD_REORDER_OVERFLOW), "reorder_overflow");
    CHECK(qw_hold_text(QW_HOLD_REORDER_OVERFLOW) != NULL);
    CHECK(strlen(qw_bound_name(QW_BOUND_REORDER_OVERFLOW)) <= 16);
}

int main(void)
{
    test_cubic_first_overflow_may_cascade();
    test_reno_grows_back_a_packet_a_round();
    test_no_floor_without_learned_reordering_or_after_a_kept_cut();
    test_short_path_grows_back_within_the_tolerance();
    test_cut_right_after_a_recovery_is_no_proof_of_random_loss();
    test_cut_still_in_recovery_at_the_close_is_not_seen();
    test_hold_is_named();
    return check_done();
}
