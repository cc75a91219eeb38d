/* qwnames.c: the quick window's codes by name: each batch basis's, hold's (quick_held_by)
 * and evidence's (quick_bound_by) JSON name, and what the holds and the evidence mean in
 * words a network engineer reads (the human report and the portal show them). */
#include "quickwin.h"

#include <stddef.h>

/* A code's JSON name and what it means in words. */
typedef struct {
    const char *name, *text;
} code_words;

/* The entry for code i of a table of n, or NULL for a code outside it. */
static const code_words *words_of(const code_words *table, size_t n, long i)
{
    return i >= 0 && (size_t)i < n ? &table[i] : NULL;
}

/* "time", "loss_cycles", "bbr_cycles"; NULL for none. */
const char *qw_basis_name(qw_basis b)
{
    switch (b) {
    case QW_BASIS_TIME: return "time";
    case QW_BASIS_LOSS_CYCLES: return "loss_cycles";
    case QW_BASIS_BBR_CYCLES: return "bbr_cycles";
    case QW_BASIS_NONE: break;
    }
    return NULL;
}

/* Each hold's name (JSON) and what it means (the human report). */
static const code_words hold_names[] = {
    [QW_HOLD_NOT_STARTED] = { "not_started", "a loss recovery, DRAIN or PROBE_RTT never ended" },
    [QW_HOLD_FEW_BATCHES] = { "few_batches", "too few cycles for an interval" },
    [QW_HOLD_SHORT] = { "short", "the rate kept changing level: too little was left after the "
                                 "last change" },
    [QW_HOLD_INTERVAL] = { "interval", "the interval stayed wider than the tolerance" },
    [QW_HOLD_HALVES] = { "halves", "the window's halves ran at different rates" },
    [QW_HOLD_VARYING] = { "varying", "the rate changed level with the link full (cross traffic?)" },
    [QW_HOLD_TAIL] = { "tail", "the part after the last cut ran faster than whole cycles" },
    [QW_HOLD_HEAD] = { "head", "the dropped start ran at another level with the link full" },
    [QW_HOLD_LAST_SLICE] = { "last_slice", "the latest round ran at another level" },
    [QW_HOLD_RECOVERY] = { "recovery", "a loss recovery was under way" },
    [QW_HOLD_CLIMBING] = { "climbing", "cwnd was still climbing back to slow-start's level" },
    [QW_HOLD_SAWTOOTH] = { "sawtooth", "too few level sawtooth cycles, and the queue did not "
                                       "prove the link stays full through a cut" },
    [QW_HOLD_LOSS_FREE] = { "loss_free", "too few loss-free packets to rule out random loss" },
    [QW_HOLD_PROBE_RTT] = { "probe_rtt", "BBR was in PROBE_RTT" },
    [QW_HOLD_BW_RISING] = { "bw_rising", "BBR's bandwidth estimate was still rising" },
    [QW_HOLD_RANDOM_LOSS] = { "random_loss", "random loss, seen or not yet ruled out, could "
                                             "lower the long-run rate" },
    [QW_HOLD_GROWING] = { "growing", "cwnd was still growing with no standing queue of its "
                                     "own: the link, or its share of it, was not full yet" },
    [QW_HOLD_LT_BW] = { "lt_bw", "BBR held its long-term bandwidth (its policer mode), below "
                                 "its estimate from before" },
    [QW_HOLD_RWND] = { "receiver_window", "the receiver's window, not the path, held the rate, "
                                          "and the receiver may open it" },
    [QW_HOLD_TIMEOUTS] = { "timeouts", "the streams share fewer than two packets of the path "
                                       "each, or some stream was in a retransmission timeout "
                                       "at most samples: one may be at the run's end, which "
                                       "then waits for it" },
    [QW_HOLD_REORDER_OVERFLOW] = { "reorder_overflow", "the path reorders packets and no cut "
                                                       "was seen yet: the buffer's first "
                                                       "overflow may cut cwnd again and again" },
    [QW_HOLD_SHARED] = { "shared", "other traffic shared the queue: the rate was a share of "
                                   "the link, which may move" },
};

/* hold h's entry; NULL for QW_HOLD_NONE and an unknown value. */
static const code_words *hold_words(qw_hold h)
{
    return h == QW_HOLD_NONE ? NULL
                             : words_of(hold_names, sizeof hold_names / sizeof hold_names[0], h);
}

/* "not_started", "few_batches", "short", "interval", ...; NULL for QW_HOLD_NONE. */
const char *qw_hold_name(qw_hold h)
{
    return hold_words(h) ? hold_words(h)->name : NULL;
}

/* What the hold means, in words; NULL for QW_HOLD_NONE. */
const char *qw_hold_text(qw_hold h)
{
    return hold_words(h) ? hold_words(h)->text : NULL;
}

/* Each evidence's name (JSON) and what it means (the human report and the portal). */
static const code_words bound_names[] = {
    [QW_BOUND_STATISTICS] = { "statistics", "the rate's scatter over the measured cycles" },
    [QW_BOUND_SHORT] = { "short", "too little was measured for an interval: the interval spans "
                                  "the rates of the measured time's quarters" },
    [QW_BOUND_LEVELS] = { "levels", "the rate changed level during the window (cross traffic?): "
                                    "the interval spans the levels seen, and where the path set "
                                    "them, one more such level" },
    [QW_BOUND_SAWTOOTH] = { "sawtooth", "no whole sawtooth cycle was seen: the lower end is what a "
                                        "cut leaves of the link with the buffer depth seen" },
    [QW_BOUND_RANDOM_LOSS] = { "random_loss", "random loss, seen or not yet ruled out by the "
                                              "loss-free packets: the lower end is the rate TCP "
                                              "keeps at the highest loss rate the packets seen "
                                              "allow, with the dips clusters of losses cause" },
    [QW_BOUND_LT_BW] = { "lt_bw", "BBR held its long-term bandwidth (the policer mode it enters "
                                  "after steady losses) for part of the window: the rest of the "
                                  "run may return to its bandwidth estimate from before" },
    [QW_BOUND_GROWING] = { "growing", "cwnd was still growing with no standing queue of its "
                                      "own: the link's capacity (or, in a queue shared with "
                                      "other traffic, the flow's share) was not reached, and the "
                                      "upper end is where TCP's window growth could take the "
                                      "rate by the run's end" },
    [QW_BOUND_BW_RISING] = { "bw_rising", "BBR's bandwidth estimate was still rising when the "
                                          "window closed (its share of the link still growing?): "
                                          "the upper end is where that rise, kept up for as long "
                                          "again, takes the rate" },
    [QW_BOUND_BBR_CYCLE] = { "bbr_cycle", "BBR was measured for less than one gain cycle: over "
                                          "whole cycles it paces at its bandwidth estimate, the "
                                          "upper end; the lower end allows for a probe round "
                                          "(gain 1.25) among those measured" },
    [QW_BOUND_STALLED] = { "stalled", "nothing was delivered after slow-start (a stall: the path "
                                      "or the server stopped?): the estimate is the average "
                                      "since the first byte, and the rest of the run may "
                                      "deliver nothing or return to the rate slow-start "
                                      "reached" },
    [QW_BOUND_RWND] = { "receiver_window", "the receiver's window, not the path, held the rate: "
                                           "the path's capacity was not probed, and the "
                                           "receiver may open its window at any time, up to "
                                           "the largest its window scale allows, and the "
                                           "rate follows only as fast as cwnd grows (the "
                                           "upper end)" },
    [QW_BOUND_REORDERING] = { "reordering", "the path reorders packets (the kernel undid cuts "
                                            "it had made for losses that were only reordering): "
                                            "Linux learns to tolerate it as the run goes on, so "
                                            "the upper end is where cwnd's growth could take "
                                            "the rate with no further cut" },
    [QW_BOUND_TIMEOUTS] = { "timeouts", "the streams share fewer than two packets of the path "
                                        "each, or some stream was in a retransmission timeout "
                                        "at most samples: one may be backing off at the run's "
                                        "end, its last bytes may wait for it as long as the "
                                        "prober waits for them (--connect-timeout), and the "
                                        "lower end is that wait" },
    [QW_BOUND_REORDER_OVERFLOW] = { "reorder_overflow",
                                    "the path reorders packets and the window saw no cut: when "
                                    "the buffer first overflows, the kernel may cut cwnd round "
                                    "after round, and no law says how often, so the lower end "
                                    "is cwnd cut to its floor as the window closed and grown "
                                    "back by the cc's law" },
    [QW_BOUND_SHARED] = { "shared", "other traffic shared the bottleneck's queue (the round "
                                    "trip rose less with cwnd than the flow's rate explains): "
                                    "the rate was a share, which moves for tens of seconds as "
                                    "flows come and go, so the upper end is the rest of the "
                                    "run at the rate the queue drained" },
};

/* evidence by's entry; NULL for an unknown value. */
static const code_words *bound_words(qw_bound_by by)
{
    return words_of(bound_names, sizeof bound_names / sizeof bound_names[0], by);
}

/* "statistics", "levels", ...; NULL for an unknown value. */
const char *qw_bound_name(qw_bound_by by)
{
    return bound_words(by) ? bound_words(by)->name : NULL;
}

/* What the evidence means, in words; NULL for an unknown value. */
const char *qw_bound_text(qw_bound_by by)
{
    return bound_words(by) ? bound_words(by)->text : NULL;
}
