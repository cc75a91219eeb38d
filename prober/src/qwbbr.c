/* qwbbr.c: BBR's terms of the quick answer's interval (qwbound.c builds the interval).
 * Over whole gain cycles BBR paces at its bandwidth estimate (tcp_bbr.c's PROBE_BW: eight
 * phases of a min RTT, one at gain 1.25, one at 0.75, the rest at 1), so the estimate is
 * what the rest of the run may reach: a window shorter than one cycle (bbr_cycle), one that
 * answered while the estimate still rose (bw_rising), and one in the long-term bandwidth
 * mode (lt_bw, qwbound.c) reach up to it. */
#include "qwint.h"

#include <math.h>

/* 1 if a BBR window counted fewer rounds (qw_bbr_rounds_counted) than one gain cycle (8 phases
 * of a min RTT each, tcp_bbr.c's PROBE_BW): its rate is that of the phases it saw, weighted as they fell, and
 * not the cycle's, which averages the bandwidth estimate (pacing gain 1 over the cycle).
 * Measured against the cycle, the rate may sit anywhere below that estimate: with four
 * streams on 10 Mbit/s x 150 ms (a quarter-BDP buffer, 0.1 % loss) the stream with nine
 * tenths of the link left STARTUP 1.3 s after the others, the drain left a 0.36 s window,
 * and its rate read 8.96 Mbit/s against a 20 s figure of 9.55 (9.9 after slow-start). */
int qw_bbr_part_cycle(double rounds)
{
    return rounds >= 0 && rounds < QW_BBR_GAIN_CYCLE;
}

/* BBR: the min RTTs (rounds) the window counted; -1 when not BBR or no min RTT is known. */
double qw_bbr_rounds_counted(const qw_window *w)
{
    double min_rtt = qw_min_rtt_s(w), bytes = 0, counted = 0;

    if (!w->p.bbr || min_rtt <= 0)
        return -1;
    qw_unit_sum(w, w->first, w->n, &bytes, &counted);
    return counted / min_rtt;
}

/* BBR over less than a gain cycle (qw_bbr_part_cycle): the least share of its rate that the
 * cycle's average may be. A window of m rounds may hold the cycle's probe (pacing gain 1.25
 * for a round; every other phase paces at 1 or less), so its rate is at most (m + 0.25) / m
 * times the estimate's and the link's share it would keep over whole cycles: on 10 Mbit/s x
 * 150 ms with four streams and 0.1 % loss, windows of 2.4 rounds read 2.0-2.9 % above their
 * 20 s figures, two of them under the lower end the quarters of two slices gave. */
double qw_bbr_part_cycle_low(double rounds)
{
    return rounds > 0 ? rounds / (rounds + QW_BBR_PROBE_GAIN - 1.0) : 1.0;
}

/* BBR, a window that answered at its deadline: the upper side if its bandwidth estimate was
 * still rising when it closed (0 if not). The estimate rises only when a probe at gain 1.25
 * delivers more than the last 10 rounds did, so a rise over the window's second half says
 * the path still gave the flow more each cycle: a share of the link still moving its way,
 * or a STARTUP that ended below the link's rate climbing to it. The rest of the run may go
 * on rising at the pace the second half showed for as long again as the window measured,
 * then hold: a share converges, and the window says nothing of a rise longer than the one it
 * saw (against a long-lived BBR flow on 100 Mbit/s x 20 ms the estimate rose 17 -> 50 Mbit/s
 * in 2.6 s and then held at its half; the line kept on for 17 s read 161). The steady rate
 * over pr->rest_s: the counted part at the rate measured, then the estimate's line. Against
 * a long-lived CUBIC flow on 100 Mbit/s x 40 ms the estimate went 74.2 -> 82.5 Mbit/s over a
 * 3.6 s window and on to 90 by 20 s; the window's levels (67.5-76.8) missed the 20 s figure
 * of 81.3. Not when the estimate sat above the rate measured as the window began (several
 * streams' estimates, each the largest of its own probes, trade share while their sum
 * moves, as qwlevel.c's qw_bw_rising has it), nor in the long-term bandwidth mode (lt_bw), nor
 * where the filter is shorter than the sampling period (qw_bw_filter_smooth): on loopback
 * the reads' spread set the upper end on 5 of 12 runs, up to 3.7 times the rate. */
double qw_bbr_trend_ceiling(const qw_window *w, const qw_prediction *pr)
{
    double rate = w->est.rate_bps / 8.0, t_end, t_mid, from, to, slope, done, to_go, g;
    int mid = 0;

    if (!w->p.bbr || w->state == QW_CONVERGED || w->lt_bw || w->n < 2 || rate <= 0 ||
        pr->rest_s <= 0 || !qw_bw_filter_smooth(w))
        return 0;
    t_end = w->s[w->n - 1].t1;
    t_mid = (w->s[0].t1 + t_end) / 2;
    while (mid < w->n - 1 && w->s[mid].t1 < t_mid)
        mid++;
    from = (double)w->s[mid].bw_bps / 8.0;
    to = (double)w->s[w->n - 1].bw_bps / 8.0;
    done = qw_counted_s(w);
    to_go = pr->rest_s - done;
    if (from <= 0 || to <= (1.0 + QW_STATIONARY) * from || t_end <= w->s[mid].t1 || to_go <= 0 ||
        (double)w->s[0].bw_bps / 8.0 > (1.0 + QW_STATIONARY) * rate)
        return 0;
    slope = (to - from) / (t_end - w->s[mid].t1);
    g = fmin(to_go, t_end - w->s[0].t0);    /* how long the rise may go on */
    return (rate * done + to * to_go + slope * (g * g / 2 + g * (to_go - g))) / pr->rest_s;
}
