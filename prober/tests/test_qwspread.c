/* test_qwspread.c: the long-run share Reno / CUBIC keep under random loss, from cwnd's
 * spread (src/qwspread.c). */
#include "check.h"
#include "quickwin.h"
#include "qwint.h"

#include <math.h>

/* Reno with a buffer that never overflows and a BDP far above its window: the link's share
 * is its mean window over the BDP. Under random loss (each packet lost with p, so a round's
 * cut comes with its window) that mean is 1.31 / sqrt(p) (Ott, Kemperman and Mathis, 1996),
 * above the 1.22 of losses a fixed number of packets apart (Mathis et al.). p = 2^-13 and a
 * BDP of 2^17 packets sit on the grid, so they are played as given. */
static void test_reno_far_below_the_bdp_keeps_its_mean_window(void)
{
    double p = exp2(-13), bdp = exp2(17);
    double mean_pkts = qw_spread_share(0.5, p, bdp, 2.0, 1, 0.05) * bdp;

    CHECK(mean_pkts > 1.25 / sqrt(p) && mean_pkts < 1.37 / sqrt(p));
    CHECK(mean_pkts > qw_loss_window_pkts(0, p, 0.05));
}

/* CUBIC on 20 Mbit/s x 8 ms with 1500-byte frames (a BDP of 13.3 packets) and a 0.6-BDP
 * buffer: at 0.2 % loss its mean window (27 packets) is above the buffer's top, and the
 * mean-field share is the link's. Clusters of cuts still take cwnd under the BDP: a few
 * percent of the link idles, more as the loss rate rises. */
static void test_cubic_above_the_bdp_still_idles_in_clusters_of_cuts(void)
{
    double at_02 = qw_spread_share(0.7, 0.002, 13.3, 1.6, 1, 0.008);
    double at_05 = qw_spread_share(0.7, 0.005, 13.3, 1.6, 1, 0.008);

    CHECK(qw_loss_window_pkts(1, 0.002, 0.008) > 1.6 * 13.3);
    CHECK(qw_sawtooth_share(0.7, 1.6) == 1.0);
    CHECK(at_02 > 0.98 && at_02 < 0.998);
    CHECK(at_05 > 0.9 && at_05 < at_02 - 0.02);
    /* Reno's cut is deeper (0.5): it idles more at the same loss */
    CHECK(qw_spread_share(0.5, 0.002, 13.3, 1.6, 1, 0.008) < at_02 - 0.02);
    /* a buffer twice as deep keeps the link fuller */
    CHECK(qw_spread_share(0.7, 0.005, 13.3, 3.2, 1, 0.008) > at_05);
}

/* Inputs are rounded to 1/16 of an octave on the side that lowers the share: a loss rate
 * between two grid points plays as the one above, and a BDP as the one above. */
static void test_rounding_only_lowers_the_share(void)
{
    double p_grid = exp2(ceil(log2(0.002) * 16) / 16);
    double bdp_grid = exp2(ceil(log2(13.3) * 16) / 16);

    CHECK(qw_spread_share(0.7, 0.002, 13.3, 1.6, 1, 0.008) ==
          qw_spread_share(0.7, p_grid, bdp_grid, 1.6, 1, 0.008));
    CHECK(qw_spread_share(0.7, 0.002, 13.3, 1.6, 1, 0.008) <=
          qw_spread_share(0.7, exp2(floor(log2(0.002) * 16) / 16), 13.3, 1.6, 1, 0.008));
}

/* The same inputs give the same share, played again once the memo has moved on (the seed is
 * fixed): a replay reads what the prober read. */
static void test_same_inputs_same_share(void)
{
    double first = qw_spread_share(0.7, 0.003, 40, 1.5, 2, 0.03);

    for (int i = 0; i < 40; i++)
        qw_spread_share(0.5, 0.001 * (i + 1), 100, 1.5, 1, 0.02);
    CHECK(qw_spread_share(0.7, 0.003, 40, 1.5, 2, 0.03) == first);
}

/* Many streams play as 16, each with its share of the BDP: a rougher sum, so never above
 * what the streams would keep; inputs with no loss, no BDP or no cc read the link whole,
 * and a loss on every packet none of it. */
static void test_edges(void)
{
    double s16 = qw_spread_share(0.7, 0.01, 160, 1.2, 16, 0.02);

    CHECK(s16 < 1.0);
    CHECK(qw_spread_share(0.7, 0.01, 1280, 1.2, 128, 0.02) == s16);
    CHECK(qw_spread_share(0.7, 0, 100, 1.5, 1, 0.02) == 1.0);
    CHECK(qw_spread_share(0.7, 0.01, 0, 1.5, 1, 0.02) == 1.0);
    CHECK(qw_spread_share(0, 0.01, 100, 1.5, 1, 0.02) == 1.0);
    CHECK(qw_spread_share(0.7, 1.0, 100, 1.5, 1, 0.02) == 0.0);
}

int main(void)
{
    test_reno_far_below_the_bdp_keeps_its_mean_window();
    test_cubic_above_the_bdp_still_idles_in_clusters_of_cuts();
    test_rounding_only_lowers_the_share();
    test_same_inputs_same_share();
    test_edges();
    return check_done();
}
