/* test_dlaqm.c: the path lab's AQMs (lab/dlaqm.c): PIE's probability law and drop rule as
 * RFC 8033 and Linux's sch_pie give them, and CoDel's control law (RFC 8289). */
#include "check.h"
#include "dlaqm.h"

#define MS 1000000ull            /* nanoseconds */

static double draw_value;

/* The random draw PIE compares its probability with, set by each test. */
static double fixed_draw(void)
{
    return draw_value;
}

/* PIE with its defaults (15 ms target and update period), started at t = 0. */
static aqm_conf pie_conf(aqm_state *s)
{
    aqm_conf c = { .kind = AQM_PIE, .pie_target_ns = 15 * MS, .pie_tupdate_ns = 15 * MS };

    aqm_init(&c, s, 0);
    return c;
}

/* One 1500-byte arrival at t behind a queue that drains at link_free, with 60 kB ahead. */
static int pie_arrival(const aqm_conf *c, aqm_state *s, uint64_t t, uint64_t link_free)
{
    return aqm_drop(c, s, t, link_free, 60000, 1500, fixed_draw);
}

/* A queue of 30 ms from the start: the first update (at 15 ms) moves the probability by
 * alpha x (30 - 15 ms) + beta x (30 - 0 ms), divided by 2048 while it is under 1e-6
 * (sch_pie's scaling: /2 under 10 %, and /4 more for each decade under 1 %). */
static void test_pie_first_update_from_zero_is_scaled_down(void)
{
    aqm_state s;
    aqm_conf c = pie_conf(&s);

    draw_value = 0.0;
    CHECK_EQ(pie_arrival(&c, &s, 15 * MS, 45 * MS), 0);   /* inside the burst allowance */
    CHECK_NEAR(s.pie_prob, (0.125 * 0.015 + 1.25 * 0.030) / 2048, 1e-12);
    CHECK_EQ(s.pie_qdelay_old_ns, 30 * MS);
    CHECK_EQ(s.pie_burst_ns, 135 * MS);
    CHECK_EQ(s.pie_next_update_ns, 30 * MS);
}

/* From 10 % up a step is 2 % at most, and a queue over 250 ms adds 2 % more. */
static void test_pie_large_steps_are_capped(void)
{
    aqm_state s;
    aqm_conf c = pie_conf(&s);

    s.pie_prob = 0.5;
    pie_arrival(&c, &s, 15 * MS, 115 * MS);        /* 100 ms of queue: +0.135 uncapped */
    CHECK_NEAR(s.pie_prob, 0.52, 1e-12);
    pie_arrival(&c, &s, 30 * MS, 330 * MS);        /* 300 ms: capped 2 %, then 2 % more */
    CHECK_NEAR(s.pie_prob, 0.56, 1e-12);
    s.pie_prob = 0.05;                             /* under 10 %: halved, not capped */
    pie_arrival(&c, &s, 45 * MS, 345 * MS);        /* 300 ms, unchanged since */
    CHECK_NEAR(s.pie_prob, 0.05 + 0.5 * (0.125 * 0.285) + 0.02, 1e-12);
}

/* With no queue at two updates running, the probability decays by 1/64 after its step down,
 * and once it is 0 with the delay low the burst allowance is whole again. */
static void test_pie_idle_queue_decays_and_renews_the_burst(void)
{
    aqm_state s;
    aqm_conf c = pie_conf(&s);
    double p = 0.2;

    s.pie_prob = p;
    s.pie_burst_ns = 0;
    pie_arrival(&c, &s, 15 * MS, 0);
    p -= 0.125 * 0.015;
    p -= p / 64;
    CHECK_NEAR(s.pie_prob, p, 1e-12);
    CHECK_EQ(s.pie_burst_ns, 0);
    s.pie_prob = 1e-9;                             /* about to reach 0 */
    pie_arrival(&c, &s, 30 * MS, 0);
    CHECK(s.pie_prob == 0);
    CHECK_EQ(s.pie_burst_ns, 150 * MS);
}

/* An arrival an hour after the last, on an idle and settled PIE, skips to the latest update
 * at once and changes nothing else. */
static void test_pie_long_idle_skips_to_the_latest_update(void)
{
    aqm_state s;
    aqm_conf c = pie_conf(&s);
    uint64_t hour = 3600000 * MS;

    pie_arrival(&c, &s, 40 * MS, 0);
    CHECK(s.pie_prob == 0);
    CHECK_EQ(pie_arrival(&c, &s, hour, 0), 0);
    CHECK_EQ(s.pie_next_update_ns, hour + 15 * MS);
    CHECK_EQ(s.pie_burst_ns, 150 * MS);
}

/* Derandomised drops at a fixed 30 %: none until the probabilities summed since the last
 * drop reach 0.85 (the third arrival), then a draw below the probability drops; one that
 * never falls below it still drops once the sum reaches 8.5 (the 29th arrival). */
static void test_pie_drops_are_derandomised(void)
{
    aqm_state s;
    aqm_conf c = pie_conf(&s);
    int n = 0;

    s.pie_prob = 0.3;
    s.pie_burst_ns = 0;
    s.pie_next_update_ns = 1000 * MS;              /* no update during the test */
    draw_value = 0.0;
    CHECK_EQ(pie_arrival(&c, &s, MS, 21 * MS), 0);
    CHECK_EQ(pie_arrival(&c, &s, MS, 21 * MS), 0);
    CHECK_EQ(pie_arrival(&c, &s, MS, 21 * MS), 1);
    CHECK(s.pie_accu == 0);
    draw_value = 0.99;
    while (!pie_arrival(&c, &s, MS, 21 * MS) && n < 100)
        n++;
    CHECK_EQ(n + 1, 29);
}

/* No early drop with under two packets queued, nor with the delay under half the target
 * at a probability under 20 %, nor during the burst allowance. */
static void test_pie_does_not_drop_a_short_queue(void)
{
    aqm_state s;
    aqm_conf c = pie_conf(&s);

    s.pie_prob = 0.5;
    s.pie_accu = 10;
    s.pie_burst_ns = 0;
    s.pie_next_update_ns = 1000 * MS;
    draw_value = 0.0;
    CHECK_EQ(aqm_drop(&c, &s, MS, 21 * MS, 2999, 1500, fixed_draw), 0);
    s.pie_prob = 0.19;
    CHECK_EQ(pie_arrival(&c, &s, MS, 8 * MS), 0);  /* 7 ms, under 7.5 */
    s.pie_prob = 0.2;
    s.pie_accu = 10;
    CHECK_EQ(pie_arrival(&c, &s, MS, 8 * MS), 1);
    s.pie_burst_ns = MS;
    s.pie_accu = 10;
    CHECK_EQ(pie_arrival(&c, &s, MS, 100 * MS), 0);
}

/* CoDel: packets waiting over the target for a whole interval start dropping, then at
 * interval / sqrt(count); a wait under the target ends the dropping state. */
static void test_codel_control_law(void)
{
    aqm_conf c = { .kind = AQM_CODEL, .codel_target_ns = 5 * MS, .codel_interval_ns = 100 * MS };
    aqm_state s;

    aqm_init(&c, &s, 0);
    /* each arrival reaches the head 10 ms after it came: over the target */
    CHECK_EQ(aqm_drop(&c, &s, 0, 10 * MS, 60000, 1500, fixed_draw), 0);
    CHECK_EQ(s.first_above_ns, 110 * MS);
    CHECK_EQ(aqm_drop(&c, &s, 99 * MS, 109 * MS, 60000, 1500, fixed_draw), 0);
    CHECK_EQ(aqm_drop(&c, &s, 100 * MS, 110 * MS, 60000, 1500, fixed_draw), 1);
    CHECK_EQ(s.drop_next_ns, 210 * MS);
    CHECK_EQ(aqm_drop(&c, &s, 199 * MS, 209 * MS, 60000, 1500, fixed_draw), 0);
    CHECK_EQ(aqm_drop(&c, &s, 200 * MS, 210 * MS, 60000, 1500, fixed_draw), 1);
    CHECK_EQ(s.count, 2);
    CHECK_EQ(s.drop_next_ns, 210 * MS + (uint64_t)(100 * MS / sqrt(2.0)));
    /* a packet that waits under the target: no drop, and the dropping state ends */
    CHECK_EQ(aqm_drop(&c, &s, 300 * MS, 301 * MS, 60000, 1500, fixed_draw), 0);
    CHECK_EQ(s.dropping, 0);
    /* nothing is judged with no AQM */
    c.kind = AQM_NONE;
    CHECK_EQ(aqm_drop(&c, &s, 400 * MS, 900 * MS, 60000, 1500, fixed_draw), 0);
    CHECK_STR(aqm_name(AQM_PIE), "pie");
    CHECK_STR(aqm_name(AQM_CODEL), "codel");
    CHECK_STR(aqm_name(AQM_NONE), "none");
}

int main(void)
{
    test_pie_first_update_from_zero_is_scaled_down();
    test_pie_large_steps_are_capped();
    test_pie_idle_queue_decays_and_renews_the_burst();
    test_pie_long_idle_skips_to_the_latest_update();
    test_pie_drops_are_derandomised();
    test_pie_does_not_drop_a_short_queue();
    test_codel_control_law();
    return check_done();
}
