/* test_quickwin.c: the converging quick window on synthetic and recorded series. */
#include "check.h"
#include "quickwin.h"

#include <stdlib.h>

#define MSS 1448
#define MAXN 20000

typedef struct {
    int n;
    qw_sample s[MAXN];
    int ss[MAXN];       /* in slow-start (recorded traces) */
} series;

static series z;
static qw_window w;

/* Window parameters as the prober's defaults give them. */
static qw_params defaults(int bbr)
{
    return (qw_params){ .bbr = bbr, .tolerance = 0.03, .min_s = 1.0, .max_s = 5.0,
                        .sample_s = 0.02 };
}

/* Append a sample every 20 ms from t0 with rate_bps for dt, cwnd, rtt, recovery, mode. */
static void push(double rate_bps, uint64_t cwnd, uint32_t rtt_us, int rec, qw_bbr_mode m)
{
    qw_sample *prev = z.n ? &z.s[z.n - 1] : NULL;
    qw_sample *s = &z.s[z.n++];

    *s = (qw_sample){ .t_s = prev ? prev->t_s + 0.02 : 0.02, .cwnd_bytes = cwnd, .rtt_us = rtt_us,
                      .min_rtt_us = rtt_us, .in_recovery = rec, .bbr_mode = m,
                      .retrans = prev ? prev->retrans + (rec && !prev->in_recovery) : 0 };
    s->delivered_bytes = (prev ? prev->delivered_bytes : 0) + (uint64_t)(rate_bps / 8 * 0.02);
}

/* Feed z from index from; returns the index of the sample that closed the window or -1. */
static int feed_from(int from)
{
    for (int i = from; i < z.n; i++)
        if (qw_feed(&w, &z.s[i]) != QW_OPEN)
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
    CHECK_NEAR(qw_batch_ci(b, t, 4, &ci), 10.0, 1e-12);
    /* residuals 0, 2, -2, 0: s^2 = 8/3, se = sqrt(8/3/4) / 1 */
    CHECK_NEAR(ci, 3.182 * sqrt(8.0 / 3.0 / 4.0) / 10.0, 1e-9);
    CHECK_NEAR(qw_batch_ci(b, t, 1, &ci), 10.0, 1e-12);
    CHECK_NEAR(ci, -1, 0);
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

/* A flat rate converges as soon as the window spans --quick-ms, with an exact figure. */
static void test_flat_rate_converges_at_min(void)
{
    qw_params p = defaults(0);
    int k;

    z.n = 0;
    for (int i = 0; i < 400; i++)
        push(100e6, 600 * MSS, 50000, 0, QW_BBR_NONE);
    qw_open(&w, &p, 0.5, 600 * MSS, 0);
    k = feed_from(25);
    CHECK(k > 0);
    CHECK(w.state == QW_CONVERGED);
    CHECK_NEAR(qw_start_t(&w), z.s[25].t_s, 1e-12);
    CHECK(qw_end_t(&w) - qw_start_t(&w) >= 0.95);
    CHECK(qw_end_t(&w) - qw_start_t(&w) < 1.2);
    CHECK_NEAR(qw_result(&w)->rate_bps, 100e6, 100e6 * 1e-3);
    CHECK(qw_result(&w)->ci_frac < 0.01);
    CHECK(qw_result(&w)->basis == QW_BASIS_TIME);
    CHECK(qw_result(&w)->batches >= 5);
}

/* A rate still rising does not converge until it has been flat for a while: the halves
 * of the window must agree. */
static void test_rising_rate_waits(void)
{
    qw_params p = defaults(0);
    int k;

    z.n = 0;
    for (int i = 0; i < 100; i++)      /* 2 s rising from 60 to 100 Mbit/s */
        push(60e6 + 40e6 * i / 100.0, 600 * MSS, 50000, 0, QW_BBR_NONE);
    for (int i = 0; i < 250; i++)
        push(100e6, 600 * MSS, 50000, 0, QW_BBR_NONE);
    qw_open(&w, &p, 0.0, 600 * MSS, 0);
    k = feed_from(0);
    CHECK(w.state == QW_CONVERGED);
    CHECK(k > 100);
    /* what it reports is within its own interval of the flat rate it is heading for */
    CHECK(fabs(qw_result(&w)->rate_bps - 100e6) / 100e6 <= 0.03 + qw_result(&w)->ci_frac);
}

/* cwnd climbing back to where slow-start left it (CUBIC after HyStart and a loss) holds
 * the window open even when the rate is flat (the queue hides the climb). */
static void test_cwnd_climb_back_holds_window(void)
{
    qw_params p = defaults(0);
    int k;

    z.n = 0;
    for (int i = 0; i < 200; i++)      /* cwnd from 420 to 600 MSS over 4 s */
        push(100e6, (uint64_t)(420 + 180 * i / 200.0) * MSS, 50000, 0, QW_BBR_NONE);
    for (int i = 0; i < 100; i++)
        push(100e6, 600 * MSS, 50000, 0, QW_BBR_NONE);
    qw_open(&w, &p, 0.0, 600 * MSS, 1);
    k = feed_from(0);
    CHECK(w.state == QW_CONVERGED);
    CHECK(k >= 199);
}

/* A sawtooth with a congestion event every 0.5 s: batches are whole cycles and the
 * estimate is the cycle average, whatever the phase the window started in. */
static void test_sawtooth_uses_whole_cycles(void)
{
    qw_params p = defaults(0);
    int k;

    z.n = 0;
    for (int i = 0; i < 300; i++) {
        int ph = (i + 7) % 25;          /* 25 samples = 0.5 s per cycle */
        double rate = 70e6 + 30e6 * ph / 24.0;

        push(rate, (uint64_t)(300 + 300 * ph / 24.0) * MSS, 50000, ph < 2, QW_BBR_NONE);
    }
    qw_open(&w, &p, 0.0, 600 * MSS, 0);
    k = feed_from(0);
    CHECK(w.state == QW_CONVERGED);
    CHECK(k > 0);
    CHECK(qw_result(&w)->basis == QW_BASIS_LOSS_CYCLES);
    CHECK(qw_result(&w)->batches >= 3);
    CHECK_NEAR(qw_result(&w)->rate_bps, 85e6, 85e6 * 0.01);
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

/* A window that never finds a steady moment (recovery throughout) gives up empty. */
static void test_never_started(void)
{
    qw_params p = defaults(0);

    z.n = 0;
    for (int i = 0; i < 300; i++)
        push(1e6, 10 * MSS, 200000, 1, QW_BBR_NONE);
    qw_open(&w, &p, 0.0, 10 * MSS, 1);
    feed_from(0);
    CHECK(w.state == QW_GAVE_UP);
    CHECK_NEAR(qw_start_t(&w), -1, 0);
    CHECK_NEAR(qw_result(&w)->rate_bps, 0, 0);
}

/* Load a recorded trace (tests/traces/qw-*.csv, written from quickprobe --json):
 * t_s,delivered,cwnd,rtt,min_rtt,retrans,in_recovery,bbr_mode,in_slow_start. */
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
        unsigned long long d, c;
        unsigned rtt, mr, rt;
        int rec, mode, ss;

        if (line[0] == '#' || sscanf(line, "%lf,%llu,%llu,%u,%u,%u,%d,%d,%d", &s->t_s, &d, &c,
                                     &rtt, &mr, &rt, &rec, &mode, &ss) != 9)
            continue;
        *s = (qw_sample){ .t_s = s->t_s, .delivered_bytes = d, .cwnd_bytes = c, .rtt_us = rtt,
                          .min_rtt_us = mr, .retrans = rt, .in_recovery = rec,
                          .bbr_mode = (qw_bbr_mode)mode };
        z.ss[z.n++] = ss;
    }
    fclose(f);
    return z.n;
}

/* Replay a loaded trace as the prober does: open at the first sample out of slow-start.
 * Returns that index; the window's verdict is in w. */
static int replay(int bbr)
{
    qw_params p = defaults(bbr);
    int k = 0;

    while (k < z.n && z.ss[k])
        k++;
    if (k == z.n)
        return -1;
    qw_open(&w, &p, z.s[k].t_s, z.s[k].cwnd_bytes, z.s[k].retrans > 0);
    feed_from(k);
    if (getenv("QW_DEBUG"))
        fprintf(stderr, "replay: open %.3f start %.3f end %.3f state %d rate %.4g ci %.4f b %d "
                "basis %s excl %.2f\n", z.s[k].t_s, qw_start_t(&w), qw_end_t(&w), w.state,
                qw_result(&w)->rate_bps, qw_result(&w)->ci_frac, qw_result(&w)->batches,
                qw_basis_name(qw_result(&w)->basis), qw_result(&w)->excluded_s);
    return k;
}

/* Run every test; the exit status says whether all passed. */
int main(int argc, char **argv)
{
    if (argc == 3) {    /* debugging aid: test_quickwin TRACE bbr(0|1) */
        load(argv[1]);
        replay(atoi(argv[2]));
        return 0;
    }
    test_batch_ci_exact();
    test_bbr_modes_from_gains();
    test_flat_rate_converges_at_min();
    test_rising_rate_waits();
    test_cwnd_climb_back_holds_window();
    test_sawtooth_uses_whole_cycles();
    test_bbr_probe_rtt_excluded();
    test_noisy_rate_gives_up();
    test_never_started();
    return check_done();
}
