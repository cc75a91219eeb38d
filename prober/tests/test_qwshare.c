/* test_qwshare.c: whether a loss-based flow's standing queue is its own (src/qwshare.c). */
#include "check.h"
#include "quickwin.h"
#include "qwint.h"

#include <math.h>
#include <string.h>

#define MSS 1448
#define BASE_RTT_S 0.040
#define MAX_SAMPLES 1000

static qw_sample s[MAX_SAMPLES];
static int ns;
static qw_window w;

/* The path: the link drains drain_Bps, other traffic keeps other_bytes queued or in flight
 * beside the flow (0: the flow is alone), and the flow's smoothed RTT is the base RTT plus
 * the queue both build. */
static double drain_Bps, other_bytes;

/* Delay jitter (s) each sample's smoothed RTT carries on top of the queue: up to this much,
 * drawn by a fixed LCG so that every run of the tests reads the same. */
static double jitter_s;
static uint32_t lcg;

/* The next jitter: uniform in [0, jitter_s). */
static double next_jitter(void)
{
    lcg = lcg * 1664525u + 1013904223u;
    return jitter_s * (lcg >> 8) / 16777216.0;
}

/* The smoothed RTT (s) with cwnd_bytes of the flow's in flight: the base RTT and the queue. */
static double rtt_with(double cwnd_bytes)
{
    double queue = cwnd_bytes + other_bytes - drain_Bps * BASE_RTT_S;

    return BASE_RTT_S + fmax(0, queue) / drain_Bps;
}

/* Append one sample 20 ms after the last: cwnd, smoothed RTT, recovery, the flow delivering
 * cwnd / RTT (Little's law) for the 20 ms. */
static void add(double cwnd_bytes, double rtt_s, int recovery, uint32_t retrans)
{
    const qw_sample *prev = ns ? &s[ns - 1] : NULL;

    if (ns >= MAX_SAMPLES)
        return;
    s[ns] = (qw_sample){ .t_s = prev ? prev->t_s + 0.02 : 0.02, .cwnd_bytes = (uint64_t)cwnd_bytes,
                         .rtt_us = (uint32_t)((rtt_s + next_jitter()) * 1e6 + 0.5),
                         .min_rtt_us = (uint32_t)(BASE_RTT_S * 1e6), .mss_bytes = MSS,
                         .in_recovery = recovery, .retrans = retrans, .ssthresh_set = recovery };
    s[ns].delivered_bytes = (prev ? prev->delivered_bytes : 0) +
                            (uint64_t)(cwnd_bytes / rtt_s * 0.02);
    ns++;
}

/* Sawtooth cycles of a CUBIC-like flow: a loss at top_bytes cuts cwnd to 0.7 of it; the
 * queue the larger flight built drains over drain_samples with cwnd flat (the smoothed RTT
 * falls), then cwnd grows back to the top over grow_samples, the RTT following the queue. */
static void cycles(int n, double top_bytes, int drain_samples, int grow_samples)
{
    double low = 0.7 * top_bytes, high_rtt = rtt_with(top_bytes), low_rtt = rtt_with(low);
    uint32_t retrans = 0;

    for (int c = 0; c < n; c++) {
        add(low, high_rtt, 1, ++retrans);
        for (int k = 1; k <= drain_samples; k++)
            add(low, high_rtt + (low_rtt - high_rtt) * k / drain_samples, 0, retrans);
        for (int k = 1; k <= grow_samples; k++) {
            double cwnd = low + (top_bytes - low) * k / grow_samples;

            add(cwnd, rtt_with(cwnd), 0, retrans);
        }
    }
}

/* Feed the samples built to a CUBIC window opened at 0 (slow-start's exit at exit_cwnd
 * bytes) with a 4 s deadline, and close it. */
static void feed_samples(double exit_cwnd)
{
    qw_params p = { .tolerance = 0.03, .min_s = 1.0, .max_s = 4.0, .sample_s = 0.02,
                    .base_rtt_s = BASE_RTT_S, .beta = 0.7, .streams = 1 };

    qw_open(&w, &p, 0.0, (uint64_t)exit_cwnd, 0);
    for (int i = 0; i < ns && qw_feed(&w, &s[i]) == QW_OPEN; i++)
        ;
    qw_stop(&w);
}

/* n sawtooth cycles (cycles()) on a link that drains drain bytes/s with other traffic
 * keeping other bytes in its queue, fed to a CUBIC window opened at 0 with a 4 s deadline. */
static void play(double drain, double other, int n, double top_bytes, int drain_samples,
                 int grow_samples)
{
    drain_Bps = drain;
    other_bytes = other;
    ns = 0;
    lcg = 1;
    cycles(n, top_bytes, drain_samples, grow_samples);
    feed_samples(0.7e6);
}

/* Alone at 100 Mbit/s x 40 ms: the RTT rises 1 / R a byte of cwnd, so the share reads the
 * window's rate over the link's, about 1, and the capacity seen stands. The queue's drain
 * after each cut (cwnd flat, the RTT falling) is left out: counted, it would read 0.80 here,
 * and a share of 0.22 with others in the queue below. */
static void test_alone_reads_its_own_queue(void)
{
    double share;

    play(12.5e6, 0, 3, 1.0e6, 15, 60);
    share = qw_queue_share(&w);
    CHECK(!isnan(share));
    CHECK_NEAR(share, w.est.rate_bps / 8 / drain_Bps, 0.002);
    CHECK(share > 0.9 && share < 1.1);
    CHECK(!qw_queue_shared(&w));
}

/* Other traffic keeps 2 MB in the same queue on a link four times the flow's rate: the RTT
 * rises only 1 / C a byte of the flow's cwnd, and the share reads its rate over C. */
static void test_others_in_the_queue_read_a_share(void)
{
    double share;

    play(50e6, 2e6, 3, 1.0e6, 15, 60);
    share = qw_queue_share(&w);
    CHECK_NEAR(share, w.est.rate_bps / 8 / drain_Bps, 0.002);
    CHECK(share > 0.25 && share < 0.35);
    CHECK(qw_queue_shared(&w));
}

/* Growth periods too short to read (under eight smoothed RTTs: the RTT trails the queue by
 * a few rounds) or grown by under eight packets, and BBR: no reading, and the capacity seen
 * stands. */
static void test_short_periods_and_bbr_read_nothing(void)
{
    /* 240 ms of growth at a 64-70 ms RTT: under 4 rounds */
    play(50e6, 2.5e6, 8, 1.0e6, 10, 12);
    CHECK(isnan(qw_queue_share(&w)));
    CHECK(!qw_queue_shared(&w));
    play(50e6, 2.5e6, 3, 40.0 * MSS, 15, 60);  /* from 28 to 40 packets: 12 of growth */
    CHECK(!isnan(qw_queue_share(&w)));
    play(50e6, 2.5e6, 3, 20.0 * MSS, 15, 60);  /* from 14 to 20: 6 */
    CHECK(isnan(qw_queue_share(&w)));
    play(50e6, 2.5e6, 3, 1.0e6, 15, 60);
    CHECK(qw_queue_shared(&w));
    w.p.bbr = 1;
    CHECK(isnan(qw_queue_share(&w)));
    CHECK(!qw_queue_shared(&w));
}

/* The shared term over a 20 s run: the counted part at the rate measured, then the rest at
 * the link's rate as the queue drained (the rate over the share: drain_Bps here), which
 * sets the upper end; alone, the term does not apply and the capacity seen stands. */
static void test_a_shared_queue_reaches_the_drain(void)
{
    qw_prediction pr;
    qw_bounds b;
    double rate, done, want;

    play(50e6, 2e6, 3, 1.0e6, 15, 60);
    pr = qw_predict(&w, 20.0);
    rate = w.est.rate_bps / 8;
    done = w.s[w.n - 1].t1 - w.start_t;
    want = (rate * done + drain_Bps * (pr.rest_s - done)) / pr.rest_s;
    CHECK(pr.rest_s > done && rate < 0.35 * drain_Bps);
    CHECK_NEAR(qw_shared_ceiling(&w, &pr) / want, 1.0, 0.003);
    b = qw_bound(&w, &pr);
    CHECK(b.by == QW_BOUND_SHARED);
    CHECK_NEAR(b.hi / want, 1.0, 0.003);
    CHECK(b.hi_bps > 2.5 * pr.rate_bps);
    CHECK(strcmp(qw_bound_name(b.by), "shared") == 0);
    play(12.5e6, 0, 3, 1.0e6, 15, 60);
    pr = qw_predict(&w, 20.0);
    CHECK(qw_shared_ceiling(&w, &pr) == 0);
    b = qw_bound(&w, &pr);
    CHECK(b.by != QW_BOUND_SHARED);
    CHECK(b.hi < 1.05 * drain_Bps);
}

/* Jitter of up to 30 ms on the smoothed RTT of the shared queue above (its cwnd's growth
 * raises the RTT 6 ms a period): the fit's slope stays above 0 and reads a share under
 * QW_SHARED, but within the RTT's scatter, so it names no rate: no shared term, and no hold
 * for it. With 1 ms of jitter the same queue's slope rose, and names the drain as before. */
static void test_a_slope_within_the_jitter_names_no_rate(void)
{
    qw_prediction pr;
    double share;

    jitter_s = 0.030;
    play(50e6, 2e6, 3, 1.0e6, 15, 60);
    share = qw_queue_share(&w);
    CHECK(share > 0 && share < QW_SHARED);
    CHECK(qw_queue_shared(&w));
    CHECK(qw_drained_share(&w) == 0);
    pr = qw_predict(&w, 20.0);
    CHECK(qw_shared_ceiling(&w, &pr) == 0);
    CHECK(qw_bound(&w, &pr).by != QW_BOUND_SHARED);
    jitter_s = 0.001;
    play(50e6, 2e6, 3, 1.0e6, 15, 60);
    share = qw_queue_share(&w);
    CHECK(share > 0.25 && share < 0.35);
    CHECK_NEAR(qw_drained_share(&w), share, 1e-12);
    pr = qw_predict(&w, 20.0);
    CHECK(qw_shared_ceiling(&w, &pr) > 2.5 * w.est.rate_bps / 8);
    jitter_s = 0;
}

/* cwnd climbing with no loss from from_bytes to to_bytes over n samples (20 ms apart) on a
 * link that drains drain bytes/s with other traffic keeping other bytes beside the flow, fed
 * to a CUBIC window (feed_samples). */
static void play_climb(double drain, double other, double from_bytes, double to_bytes, int n)
{
    drain_Bps = drain;
    other_bytes = other;
    ns = 0;
    for (int k = 0; k < n; k++) {
        double cwnd = from_bytes + (to_bytes - from_bytes) * k / (n - 1);

        add(cwnd, rtt_with(cwnd), 0, 0);
    }
    feed_samples(from_bytes);
}

/* A climb with no loss in a queue other traffic shares: the flow's rate is its share, cwnd
 * over all in flight, and grows with cwnd, so the growing term applies though a queue stands
 * (qw_growing) and its upper side, cwnd's growth over the rest of the run, sets the upper end
 * above the rate the queue drained. Alone, the same climb stands a queue of its own: the link
 * is full, and the term does not apply. */
static void test_a_climb_in_a_shared_queue_is_growing(void)
{
    qw_prediction pr;
    qw_bounds b;

    play_climb(50e6, 2e6, 0.6e6, 1.2e6, 200);
    CHECK(qw_queue_shared(&w));
    CHECK(w.s[w.n - 1].q_lo_min >= QW_BUSY_QUEUE);
    CHECK(qw_growing(&w));
    pr = qw_predict(&w, 20.0);
    b = qw_bound(&w, &pr);
    CHECK(b.by == QW_BOUND_GROWING);
    CHECK(b.hi > 1.2 * qw_shared_ceiling(&w, &pr));
    CHECK(strcmp(qw_bound_name(b.by), "growing") == 0);
    play_climb(12.5e6, 0, 0.6e6, 1.2e6, 200);
    CHECK(!qw_queue_shared(&w));
    CHECK(w.s[w.n - 1].q_lo_min >= QW_BUSY_QUEUE);
    CHECK(!qw_growing(&w));
}

int main(void)
{
    test_alone_reads_its_own_queue();
    test_others_in_the_queue_read_a_share();
    test_short_periods_and_bbr_read_nothing();
    test_a_shared_queue_reaches_the_drain();
    test_a_slope_within_the_jitter_names_no_rate();
    test_a_climb_in_a_shared_queue_is_growing();
    return check_done();
}
