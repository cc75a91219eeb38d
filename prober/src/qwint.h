/* qwint.h: what the quick window's modules share (quickwin.c: the window, its slices,
 * batches and verdict; qwloss.c: a loss-based cc's sawtooth). Not for callers: they use
 * quickwin.h. */
#ifndef QP_QWINT_H
#define QP_QWINT_H

#include "quickwin.h"

#define QW_LEVEL_CHANGE 3       /* halves this many tolerances apart with the link full are
                                   the path changing (cross traffic), not noise: see
                                   level_changed_at_full_link() in quickwin.c */

/* quickwin.c */
/* Sum the counted bytes and seconds of slices [b, e). */
void qw_unit_sum(const qw_window *w, int b, int e, double *bytes, double *secs);
/* 1 if slices [from, to) ran at a level the batches (rate r) do not. */
int qw_stretch_differs(const qw_window *w, int from, int to, const double *bytes,
                       const double *secs, int nb, double r);
/* The standing queue in BDPs that a smoothed RTT of srtt_us shows. */
double qw_queue_at(const qw_window *w, uint32_t srtt_us);
/* The standing queue in BDPs at s, from the largest smoothed RTT over the streams. */
double qw_queue_bdps(const qw_window *w, const qw_sample *s);
/* 1 if every counted slice kept a standing queue of 0.25 BDP at its lowest. */
int qw_link_busy(const qw_window *w);

/* qwloss.c */
/* Whole sawtooth cycles of the window as [begin, end) slice pairs; returns the count. */
int qw_units_loss_cycles(const qw_window *w, int *ub, int *ue);
/* 1 if the slices after the last whole cycle (from on) ran faster than the cycles. */
int qw_tail_above_cycles(const qw_window *w, int from, double cycles_rate);
/* 1 if most counted slices of [from, to) held a queue that keeps the link full
 * through a cut. */
int qw_mostly_full(const qw_window *w, int from, int to);
/* 1 if the latest slice left the batches' level without a congestion event. */
int qw_last_slice_differs(const qw_window *w, const double *bytes, const double *secs,
                          int nb, double r);
/* 1 if the queue at s proves the link full now and through a cut. */
int qw_link_full(const qw_window *w, const qw_sample *s);
/* QW_HOLD_NONE if the window knows what the sawtooth does to the rate, else what it lacks. */
qw_hold qw_sawtooth_known(const qw_window *w, const qw_sample *s);

#endif
