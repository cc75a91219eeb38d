/* test_qwundo.c: congestion events whose cut the kernel undid, and queue readings that a
 * larger cwnd with no queue refutes (src/qwundo.c, qw_count_events). */
#include "check.h"
#include "quickwin.h"

#define MSS 1448
#define N 250

static qw_sample z[N];
static qw_window w;

/* Reno's window parameters as the prober's defaults give them. */
static qw_params reno(void)
{
    return (qw_params){ .tolerance = 0.03, .min_s = 1.0, .max_s = 5.0, .sample_s = 0.02,
                        .beta = 0.5 };
}

/* Fill z with 5 s of 100 Mbit/s at cwnd 600 MSS, RTT 50 ms with no queue, samples every
 * 20 ms; from sample 60 a recovery of three samples (one stream's event, a retransmission),
 * cwnd held at 500 MSS by PRR in it, and at 63 the recovery's end with cwnd at end_mss and
 * the stream's verdict (kept, undone). */
static void fill(uint64_t end_mss, uint32_t kept, uint32_t undone)
{
    for (int i = 0; i < N; i++) {
        int rec = i >= 60 && i < 63;

        z[i] = (qw_sample){ .t_s = 0.02 * (i + 1), .cwnd_bytes = 600 * MSS, .rtt_us = 50000,
                            .min_rtt_us = 50000, .in_recovery = rec, .mss_bytes = MSS,
                            .retrans = i >= 60, .stream_events = i == 60 };
        z[i].delivered_bytes = (uint64_t)(100e6 / 8 * 0.02) * (uint64_t)(i + 1);
        if (rec)
            z[i].cwnd_bytes = 500 * MSS;
        if (i >= 63)
            z[i].cwnd_bytes = end_mss * MSS;
    }
    z[63].cuts_kept = kept;
    z[63].cuts_undone = undone;
}

/* Open a window at 0 and feed z up to (not including) sample end. */
static void feed(const qw_params *p, int end)
{
    qw_open(&w, p, 0.0, 600 * MSS, 0);
    for (int i = 0; i < end; i++)
        qw_feed(&w, &z[i]);
}

/* The verdict at a recovery's end: cwnd below 7/8 of the sample's before the event began
 * is a cut kept (Reno's half, CUBIC's 0.7), at or above it one undone; an event that came
 * and went between two samples is judged at once; with no cwnd before it, kept. With no
 * round trip known, no growth between the samples is allowed for. */
static void test_cut_step_exact(void)
{
    qw_cut_track t = { 0 };

    CHECK(qw_cut_step(&t, 0, 0, &(qw_cut_view){ .cwnd_bytes = 100000 }) == QW_CUT_NONE);
    CHECK(qw_cut_step(&t, 1, 1, &(qw_cut_view){ .cwnd_bytes = 90000 }) == QW_CUT_NONE);
    CHECK_EQ(t.cwnd_before, 100000);
    CHECK(qw_cut_step(&t, 0, 1, &(qw_cut_view){ .cwnd_bytes = 70000 }) == QW_CUT_NONE);
    CHECK(qw_cut_step(&t, 0, 0, &(qw_cut_view){ .cwnd_bytes = 70000 }) == QW_CUT_KEPT);
    CHECK(qw_cut_step(&t, 0, 0, &(qw_cut_view){ .cwnd_bytes = 70000 }) == QW_CUT_NONE);

    t = (qw_cut_track){ .cwnd_bytes = 100000 };
    CHECK(qw_cut_step(&t, 1, 1, &(qw_cut_view){ .cwnd_bytes = 80000 }) == QW_CUT_NONE);
    CHECK(qw_cut_step(&t, 0, 0, &(qw_cut_view){ .cwnd_bytes = 100000 }) == QW_CUT_UNDONE);

    t = (qw_cut_track){ .cwnd_bytes = 100000 };
    CHECK(qw_cut_step(&t, 1, 0, &(qw_cut_view){ .cwnd_bytes = 87499 }) == QW_CUT_KEPT);
    t = (qw_cut_track){ .cwnd_bytes = 100000 };
    CHECK(qw_cut_step(&t, 1, 0, &(qw_cut_view){ .cwnd_bytes = 87500 }) == QW_CUT_UNDONE);
    CHECK(t.open == 0 && t.cwnd_bytes == 87500);

    t = (qw_cut_track){ 0 };
    CHECK(qw_cut_step(&t, 1, 0, &(qw_cut_view){ .cwnd_bytes = 50000 }) == QW_CUT_KEPT);
}

/* The verdict on an event that came and went between a sample like before and one like
 * after with cwnd_bytes, on a track that saw nothing else. */
static qw_cut verdict(qw_cut_view before, qw_cut_view after, uint64_t cwnd_bytes)
{
    qw_cut_track t = { 0 };

    after.cwnd_bytes = cwnd_bytes;
    qw_cut_step(&t, 0, 0, &before);
    return qw_cut_step(&t, 1, 0, &after);
}

/* The verdict on an event after a sample like before whose recovery samples at 0.02 s and
 * 0.2 s showed, judged at 0.22 s with cwnd_bytes; the track is left in *t. */
static qw_cut recovery_verdict(qw_cut_view before, uint64_t cwnd_bytes, qw_cut_track *t)
{
    qw_cut_view in = before;

    *t = (qw_cut_track){ 0 };
    qw_cut_step(t, 0, 0, &before);
    in.t_s = 0.02;
    in.cwnd_bytes = before.cwnd_bytes / 2;
    CHECK(qw_cut_step(t, 1, 1, &in) == QW_CUT_NONE);
    in.t_s = 0.2;
    CHECK(qw_cut_step(t, 0, 1, &in) == QW_CUT_NONE);
    in.t_s = 0.22;
    in.cwnd_bytes = cwnd_bytes;
    return qw_cut_step(t, 0, 0, &in);
}

/* Where the samples are many round trips apart, cwnd back at its old level may be a kept
 * cut grown back by the cc's own law, and counts as kept. Reno, 20 packets before the event
 * at 0, judged at 0.02 s: at 1 ms a packet a round grows 20 packets before and after the
 * loss, so a kept cut could reach 0.5 x 40 + 20 = 40 packets; at 20 ms one packet, so
 * 0.5 x 21 + 1 = 11.5. CUBIC at 1 ms adds its cubic from 0.7 x 20 packets (K = 2.47 s):
 * 20 rounds and 0.14 packets of it, a kept cut up to 0.7 x 40.14 + 20.14 = 48.25 packets. */
static void test_cut_step_regrowth(void)
{
    qw_cut_view before = { .t_s = 0, .cwnd_bytes = 20 * MSS, .rtt_us = 1000, .mss_bytes = MSS,
                           .beta = 0.5 };
    qw_cut_view after = before;
    qw_cut_track t = { 0 };

    after.t_s = 0.02;
    after.cwnd_bytes = 40 * MSS;
    qw_cut_step(&t, 0, 0, &before);
    CHECK(qw_cut_step(&t, 1, 0, &after) == QW_CUT_KEPT);
    CHECK(t.t_before == 0 && t.t_s == 0.02);
    CHECK(verdict(before, after, 40 * MSS + 1) == QW_CUT_UNDONE);

    before.rtt_us = after.rtt_us = 20000;
    CHECK(verdict(before, after, 18 * MSS) == QW_CUT_UNDONE);
    CHECK(verdict(before, after, 11 * MSS) == QW_CUT_KEPT);

    before.rtt_us = after.rtt_us = 1000;
    before.beta = after.beta = 717.0 / 1024;
    CHECK(verdict(before, after, 48 * MSS) == QW_CUT_KEPT);
    CHECK(verdict(before, after, 49 * MSS) == QW_CUT_UNDONE);

    /* a recovery seen from 0.02 s to 0.2 s leaves 0.04 s of the 0.22 s for growth: at 1 ms,
     * Reno 40 packets, a kept cut up to 0.5 x 60 + 40 = 70 packets: 69 is kept, 71 an undo
     * (with the whole 0.22 s, 220 packets, both would read as kept) */
    before.beta = 0.5;
    CHECK(recovery_verdict(before, 71 * MSS, &t) == QW_CUT_UNDONE);
    CHECK(t.rec_from == 0.02 && t.rec_to == 0.2);
    CHECK(recovery_verdict(before, 69 * MSS, &t) == QW_CUT_KEPT);

    /* once the kernel has seen the path reorder, cwnd back at 7/8 stays an undo */
    after.reordering_segments = 4;   /* above net.ipv4.tcp_reordering's default of 3 */
    CHECK(verdict(before, after, 40 * MSS) == QW_CUT_UNDONE);
    after.reordering_segments = 3;
    CHECK(verdict(before, after, 40 * MSS) == QW_CUT_KEPT);
}

/* A recovery whose cut was undone leaves the window's events as they were before it: no
 * event, no random one (the streams' count too), the loss-free packets counted from where
 * measuring began, and the slices it closed meanwhile counting none. While it is under way
 * it counts as any other. */
static void test_undone_event_is_taken_back(void)
{
    qw_params p = reno();

    fill(600, 0, 1);
    feed(&p, 62);
    CHECK_EQ(w.events, 1);
    CHECK_EQ(w.random_stream_events, 1);
    CHECK(w.mark.pending == 1);
    feed(&p, 100);
    CHECK_EQ(w.events, 0);
    CHECK_EQ(w.random_events, 0);
    CHECK_EQ(w.random_stream_events, 0);
    CHECK_EQ(w.undone_events, 1);
    CHECK_EQ(w.npeaks, 0);
    CHECK_EQ(w.run_peak, 600 * MSS);
    CHECK_EQ(w.clean_from_bytes, z[0].delivered_bytes);
    CHECK(w.mark.pending == 0);
    for (int i = 0; i < w.n; i++)
        CHECK_EQ(w.s[i].events, 0);
}

/* The same recovery with the cut kept (cwnd at half when it ended) is an event; so is one
 * of two streams' events with one kept and one undone: a loss the cc answered. */
static void test_kept_event_stays(void)
{
    qw_params p = reno();

    fill(300, 1, 0);
    feed(&p, 100);
    CHECK_EQ(w.events, 1);
    CHECK_EQ(w.random_events, 1);
    CHECK_EQ(w.undone_events, 0);
    CHECK_EQ(w.clean_from_bytes, z[62].delivered_bytes);
    CHECK(w.s[w.n - 1].events == 1);

    fill(450, 1, 1);
    feed(&p, 100);
    CHECK_EQ(w.events, 1);
    CHECK_EQ(w.undone_events, 0);
}

/* BBR restores cwnd after every recovery: nothing is taken back. */
static void test_bbr_keeps_its_events(void)
{
    qw_params p = reno();

    p.bbr = 1;
    p.beta = 0;
    fill(600, 0, 1);
    for (int i = 0; i < N; i++)
        z[i].bbr_mode = QW_BBR_PROBE_BW;
    feed(&p, 100);
    CHECK_EQ(w.events, 1);
    CHECK_EQ(w.undone_events, 0);
}

/* A queue of 0.3 BDP (RTT 65 ms over 50) with cwnd 100 MSS bounds the capacity: the
 * window keeps that cwnd. The link with no queue at 199 MSS leaves it; at 200 MSS, twice
 * the cwnd, no queue refutes it (jitter or cross traffic read as a queue) and it is gone. */
static void run_refuted_queue(uint64_t later_mss)
{
    qw_params p = reno();

    for (int i = 0; i < N; i++) {
        int queued = i >= 10 && i < 20;

        z[i] = (qw_sample){ .t_s = 0.02 * (i + 1), .cwnd_bytes = (queued ? 100 : 90) * MSS,
                            .rtt_us = queued ? 65000 : 50000, .min_rtt_us = 50000,
                            .mss_bytes = MSS };
        if (i >= 30)
            z[i].cwnd_bytes = later_mss * MSS;
        z[i].delivered_bytes = (uint64_t)(20e6 / 8 * 0.02) * (uint64_t)(i + 1);
    }
    feed(&p, 25);
    CHECK_EQ(w.queue_cwnd_bytes, 100 * MSS);
    feed(&p, 40);
}

static void test_no_queue_at_twice_the_cwnd_refutes_one(void)
{
    run_refuted_queue(199);
    CHECK_EQ(w.queue_cwnd_bytes, 100 * MSS);
    run_refuted_queue(200);
    CHECK_EQ(w.queue_cwnd_bytes, 0);
}

int main(void)
{
    test_cut_step_exact();
    test_cut_step_regrowth();
    test_undone_event_is_taken_back();
    test_kept_event_stays();
    test_bbr_keeps_its_events();
    test_no_queue_at_twice_the_cwnd_refutes_one();
    return check_done();
}
