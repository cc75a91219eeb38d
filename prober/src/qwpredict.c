/* qwpredict.c: from the quick window's steady rate to the figure a full run would report,
 * with its interval (qw_predict in quickwin.h). */
#include "qwint.h"

#include <math.h>

#define BBR_MIN_RTT_WIN_S 10.0  /* tcp_bbr.c: bbr_min_rtt_win_sec */
#define BBR_PROBE_RTT_S 0.2     /* tcp_bbr.c: bbr_probe_rtt_mode_ms */
#define BBR_CWND_MIN_PACKETS 4  /* tcp_bbr.c: bbr_cwnd_min_target, cwnd in PROBE_RTT */

/* The share of the link a PROBE_RTT visit leaves idle. It does not stop the flow: each
 * stream keeps 4 packets in flight (tcp_bbr.c, bbr_cwnd_min_target), which deliver
 * 4 x MSS x streams per min RTT; only the rest of the BDP goes unfilled. With jumbo
 * frames, a short RTT or several streams that is far from all of it (8 streams of 9000
 * bytes on a 150 Mbit/s x 30 ms path kept two thirds of the rate through the visit). With
 * several streams out of step, each visit costs that stream's share less its 4 packets:
 * the same sum. */
static double probe_rtt_shortfall(const qw_window *w, double min_rtt_s)
{
    double bdp = w->est.rate_bps / 8.0 * min_rtt_s;
    double mss = qw_mss(w->mss_bytes);
    int streams = qw_streams(w);

    if (bdp <= 0)
        return 1;
    return fmax(0, 1 - BBR_CWND_MIN_PACKETS * mss * streams / bdp);
}

/* Seconds a PROBE_RTT visit keeps the flow at 4 packets a stream, plus the round in which
 * the pipe refills after it. tcp_bbr.c holds inflight at 4 packets for "max(200 ms, 1
 * round)", but it checks for the end only when an ACK arrives (bbr_update_min_rtt ->
 * bbr_check_probe_rtt_done), and with 4 packets in flight the ACKs come in one bunch a
 * round: the hold ends at the first bunch after 200 ms, a whole number of min RTTs. On a
 * 180 ms path that is 360 ms, not 200 (a lab run lost 0.55 s of delivery to its visit,
 * where 200 ms + a round predicted 0.38, and read +0.9 % high); below 100 ms the rounding
 * is under a round. */
static double probe_rtt_visit_s(double min_rtt_s)
{
    double hold = min_rtt_s * fmax(1, ceil(BBR_PROBE_RTT_S / min_rtt_s - 1e-6));

    return hold + min_rtt_s;
}

/* The prediction's 95 % half-width, as a fraction of p->rate_bps (p->ci_frac), and the parts of
 * it that are on the figure rather than the steady rate (p->end_frac both sides,
 * p->tail_frac below only). Its parts, in quadrature:
 * - the rest of the run is a new stretch of the same process, whose own mean varies too
 *   (batch variance x batch length / its length, next to the window's counted_s): the
 *   window's variance grows by 1 + counted / rest;
 * - the end, which the window cannot see: the model drains the last bytes in one smoothed
 *   RTT, but recorded runs took one to four (a loss among the last bytes, a PROBE_RTT that
 *   falls in the drain; 5.5 with a tail loss's RTO on a 150 ms path, which this does not
 *   cover), the link idle for part of it: one RTT of the steady rate. With several streams,
 *   two: they finish unevenly (each drains what it still holds), and the last ones alone
 *   may not fill the pipe. In one bench run the 15 multi-stream validate runs left the link
 *   idle for 0 to 2.1 srtt of their drain (4 BBR streams at 10 Mbit/s x 150 ms: 0.5, 1.6
 *   and 2.1, 0.4-1.9 % of the run, against intervals of 1-2.5 %), the single-stream runs
 *   for none: a lone stream drains at the full rate;
 * - several BBR streams' PROBE_RTT visits: out of step, the other streams take up part of
 *   the share a visiting stream leaves, from none of it to nearly all (8 streams on a
 *   100 Mbit/s x 90 ms path lost a third of the cost the model counts): half that cost.
 * - a loss among the last bytes (qw_tail_loss_likely: the window's loss-event rate over the
 *   backlog the sender leaves, as the quick run's own drain reckons it): it is repaired after
 *   RACK-TLP's probe, two smoothed RTTs after the last send, and the retransmission's round
 *   trip, three more RTTs with nothing else to send; the figure only falls for it (4 BBR
 *   streams at 10 Mbit/s x 150 ms, 0.25-BDP buffer: one 20 s run's end took 0.55 s more than
 *   its pair's, and its figure read 3.2 % under the bytes acked by 20 s);
 * - the part of BBR's PROBE_RTT visits that probe_rtt_shortfall counts as filled by the 4
 *   packets a stream: on a pipe of a few packets what they deliver depends on how the ACKs
 *   and the pacing come out, not on the min RTT alone (BBR at 5 Mbit/s x 8 ms, a BDP of
 *   4.4 packets, lost ~23 % of its 216 ms visit where the model counted 8 %: two quick
 *   answers of +-0.2 % read 0.25 and 0.3 % over their 20 s figures); the figure only falls
 *   for it, and with a BDP of many packets the part is small.
 * (Off the bench's matrix, 4- and 8-stream BBR runs read 0.2-1.1 % from their 20 s figure
 * with intervals of 0.06-0.24 %: 7 of 10 such converged runs fell outside.) */
static void prediction_ci(const qw_window *w, qw_prediction *p, double full_s, double rest,
                          double steady)
{
    double fig = p->rate_bps * full_s / 8.0, rate = w->est.rate_bps / 8.0;
    double end = (w->p.streams > 1 ? 2 : 1) * rate * (w->slice_rtt_us / 1e6) / fig;
    double visits = w->p.streams > 1 ? 0.5 * rate * p->probe_rtt_s / fig : 0;
    double tail, filled;

    /* the end's parts hold whether or not the window had batches for the rest */
    p->end_frac = sqrt(end * end + visits * visits);
    tail = qw_tail_loss_likely(w) ? 3.0 * rate * (w->slice_rtt_us / 1e6) / fig : 0;
    filled = rate * p->probe_rtt_filled_s / fig;
    p->tail_frac = sqrt(tail * tail + filled * filled);
    if (w->est.ci_frac >= 0) {
        double sampling = w->est.ci_frac * sqrt(1.0 + (rest > 0 ? w->est.counted_s / rest : 0)) *
                          steady / 8.0 / fig;

        p->sampling_frac = sampling;
        p->ci_frac = sqrt(sampling * sampling + p->end_frac * p->end_frac +
                          p->tail_frac * p->tail_frac);
    }
}

/* The figure a full run of full_s seconds would report (see quickwin.h). */
qw_prediction qw_predict(const qw_window *w, double full_s)
{
    qw_prediction p = { 0, -1, 0, 0, 0, 0, 0, 0, 0 };
    double rest, steady;

    if (w->start_t < 0 || w->est.rate_bps <= 0 || full_s <= 0)
        return p;
    /* The full run's figure is over its bytes' time: they are written until full_s and
     * the last is acked about one smoothed RTT later, the link busy all the while. */
    full_s += w->slice_rtt_us / 1e6;
    rest = fmax(0, full_s - w->start_t);
    /* BBR re-probes its min RTT when the estimate is 10 s old (4 packets a stream for
     * probe_rtt_visit_s), and the 10 s start again after it; the window left it out. */
    if (w->p.bbr) {
        double mrtt = qw_min_rtt_s(w);
        double prt = probe_rtt_visit_s(mrtt);
        double whole = fmin(floor(full_s / (BBR_MIN_RTT_WIN_S + prt)) * prt, rest);

        p.probe_rtt_s = whole * probe_rtt_shortfall(w, mrtt);
        p.probe_rtt_filled_s = whole - p.probe_rtt_s;
    }
    steady = w->est.rate_bps * (rest - p.probe_rtt_s);
    p.rate_bps = ((double)w->est.start_bytes * 8.0 + steady) / full_s;
    p.steady_share = (rest - p.probe_rtt_s) / full_s;
    p.rest_s = rest;
    if (p.rate_bps > 0)
        prediction_ci(w, &p, full_s, rest, steady);
    return p;
}
