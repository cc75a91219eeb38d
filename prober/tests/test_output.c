/* test_output.c: the result and sample events carry exactly the EVENTS.md figures. */
#include "check.h"
#include "output.h"

#include <jansson.h>
#include <stdlib.h>
#include <unistd.h>

/* Run fn(r) with stdout captured; returns the last line parsed as JSON. */
static json_t *capture(void (*fn)(const qp_run *), const qp_run *r)
{
    FILE *tmp = tmpfile();
    char buf[65536], *last;
    size_t n;
    int saved;

    fflush(stdout);
    saved = dup(1);
    dup2(fileno(tmp), 1);
    fn(r);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    rewind(tmp);
    n = fread(buf, 1, sizeof(buf) - 1, tmp);
    fclose(tmp);
    buf[n] = '\0';
    while (n > 0 && buf[n - 1] == '\n')
        buf[--n] = '\0';
    last = strrchr(buf, '\n');
    return json_loads(last ? last + 1 : buf, 0, NULL);
}

/* A one-stream run whose outcome the tests fill in. */
static void make_run(qp_run *r, qp_opts *o, qp_stream *s, qp_mode mode)
{
    opts_defaults(o);
    o->host = "127.0.0.1";
    o->port = 5201;
    o->mode = mode;
    memset(r, 0, sizeof(*r));
    memset(s, 0, sizeof(*s));
    r->o = o;
    r->n = 1;
    r->streams = s;
    snprintf(r->congestion, sizeof(r->congestion), "cubic");
    r->mss_bytes = 1448;
    r->window_given_bytes = 131072;
    s->id = 1;
    s->acked = 1000000;
    atomic_store(&s->written, 1000000);
    s->sent = 1000000;
    s->server_bytes = 999000;
    s->ti.total_retrans = 3;
    r->out.bytes_sent = 1000000;
    r->out.bytes_acked = 1000000;
    r->out.server_bytes = 999000;
    r->out.elapsed_s = 2.0;
    r->out.retransmits = 3;
}

#define NUM(j, k) json_number_value(json_object_get((j), (k)))
#define ISNULL(j, k) json_is_null(json_object_get((j), (k)))

/* Quick mode: the quick figure drives the estimate and the savings. */
static void test_result_quick_figures(void)
{
    qp_run r;
    qp_opts o;
    qp_stream s;
    json_t *j;

    make_run(&r, &o, &s, MODE_QUICK);
    r.out.ss_ended = 1;
    r.out.ss_t = 0.5;
    r.out.ss_rule = SS_RULE_PAPER_CWND_STABLE;
    r.out.quick_entered = 1;
    r.out.quick_bps = 5e6;
    r.out.quick_window_s = 1.0;
    r.out.quick_converged = 1;
    r.out.quick_answered = 1;
    r.out.quick_ci_frac = 0.021;
    r.out.quick_lo_bps = 4.895e6;
    r.out.quick_hi_bps = 5.105e6;
    r.out.quick_bound = QW_BOUND_STATISTICS;
    r.out.quick_batches = 6;
    r.out.quick_basis = QW_BASIS_LOSS_CYCLES;
    j = capture(out_result, &r);
    CHECK(j != NULL);
    CHECK(json_is_true(json_object_get(j, "quick_converged")));
    CHECK(json_is_true(json_object_get(j, "quick_answered")));
    CHECK_NEAR(NUM(j, "quick_lo_bps"), 4.895e6, 1e-3);
    CHECK_NEAR(NUM(j, "quick_hi_bps"), 5.105e6, 1e-3);
    CHECK_STR(json_string_value(json_object_get(j, "quick_bound_by")), "statistics");
    CHECK(json_is_string(json_object_get(j, "quick_bound_text")));
    CHECK_NEAR(NUM(j, "quick_ci_pct"), 2.1, 1e-9);
    CHECK_NEAR(NUM(j, "quick_window_s"), 1.0, 1e-12);
    CHECK_EQ(NUM(j, "quick_batches"), 6);
    CHECK_STR(json_string_value(json_object_get(j, "quick_basis")), "loss_cycles");
    CHECK_NEAR(NUM(j, "quick_excluded_s"), 0.0, 0);
    CHECK(ISNULL(j, "quick_held_by"));                   /* converged: nothing held it */
    CHECK_STR(json_string_value(json_object_get(j, "event")), "result");
    CHECK(json_is_true(json_object_get(j, "quick_mode_entered")));
    CHECK_NEAR(NUM(j, "quick_bps"), 5e6, 1e-3);
    CHECK_NEAR(NUM(j, "cumulative_bps"), 4e6, 1e-3);     /* 1e6 B * 8 / 2 s */
    CHECK(ISNULL(j, "full_bps"));
    CHECK_EQ(NUM(j, "server_bytes"), 999000);
    CHECK_EQ(NUM(j, "full_time_s"), 10);
    CHECK_EQ(NUM(j, "full_bytes_estimate"), 6250000);    /* 5e6 * 10 / 8 */
    CHECK_NEAR(NUM(j, "time_saved_pct"), 80.0, 1e-9);    /* 1 - 2 / 10 */
    CHECK_NEAR(NUM(j, "traffic_saved_pct"), 84.0, 1e-9); /* 1 - 1e6 / 6.25e6 */
    CHECK_STR(json_string_value(json_object_get(j, "rule")), "paper_cwnd_stable");
    CHECK_NEAR(NUM(j, "slow_start_end_s"), 0.5, 1e-12);
    CHECK(ISNULL(j, "validate"));
    CHECK(json_is_false(json_object_get(j, "interrupted")));
    CHECK_EQ(json_integer_value(json_object_get(json_object_get(j, "window"), "given_bytes")), 131072);
    CHECK(ISNULL(json_object_get(j, "window"), "requested_bytes"));
    CHECK_EQ(NUM(json_array_get(json_object_get(j, "streams"), 0), "server_bytes"), 999000);
    json_decref(j);
}

/* Quick mode whose window did not converge by its deadline answers all the same: the
 * estimate is the result, with the interval its evidence gave and what bounded it. */
static void test_result_quick_answered_at_deadline(void)
{
    qp_run r;
    qp_opts o;
    qp_stream s;
    json_t *j;

    make_run(&r, &o, &s, MODE_QUICK);
    r.out.ss_ended = 1;
    r.out.ss_t = 0.5;
    r.out.ss_rule = SS_RULE_SSTHRESH_SET;
    r.out.quick_entered = 1;
    r.out.quick_answered = 1;
    r.out.quick_bps = 5e6;
    r.out.quick_lo_bps = 3e6;
    r.out.quick_hi_bps = 5.5e6;
    r.out.quick_ci_frac = 0.4;
    r.out.quick_bound = QW_BOUND_RANDOM_LOSS;
    r.out.quick_window_s = 1.5;
    r.out.quick_batches = 5;
    r.out.quick_basis = QW_BASIS_TIME;
    r.out.quick_hold = QW_HOLD_LOSS_FREE;
    j = capture(out_result, &r);
    CHECK(json_is_false(json_object_get(j, "quick_converged")));
    CHECK(json_is_true(json_object_get(j, "quick_answered")));
    CHECK_STR(json_string_value(json_object_get(j, "quick_held_by")), "loss_free");
    CHECK_STR(json_string_value(json_object_get(j, "quick_bound_by")), "random_loss");
    CHECK_NEAR(NUM(j, "quick_lo_bps"), 3e6, 1e-6);
    CHECK_NEAR(NUM(j, "quick_hi_bps"), 5.5e6, 1e-6);
    CHECK_NEAR(NUM(j, "quick_ci_pct"), 40.0, 1e-9);
    CHECK(ISNULL(j, "full_bps"));                         /* the answer is the result */
    CHECK_EQ(NUM(j, "full_bytes_estimate"), 6250000);     /* 5e6 * 10 / 8 */
    CHECK_NEAR(NUM(j, "time_saved_pct"), 80.0, 1e-9);     /* 1 - 2 / 10 */
    json_decref(j);
}

/* Quick mode asked to run until converged (--until-converged) whose window did not: it ran
 * on to -t, the estimate is kept with its interval and quick_converged false, and the full
 * run's figure is the result. */
static void test_result_quick_not_converged(void)
{
    qp_run r;
    qp_opts o;
    qp_stream s;
    json_t *j;

    make_run(&r, &o, &s, MODE_QUICK);
    r.out.elapsed_s = 10.0;
    r.out.ss_ended = 1;
    r.out.ss_t = 0.5;
    r.out.ss_rule = SS_RULE_SSTHRESH_SET;
    r.out.quick_entered = 1;
    r.out.quick_bps = 9e5;
    r.out.quick_window_s = 5.0;
    r.out.quick_ci_frac = 0.12;
    r.out.quick_batches = 4;
    r.out.quick_basis = QW_BASIS_TIME;
    r.out.quick_hold = QW_HOLD_INTERVAL;
    j = capture(out_result, &r);
    CHECK(json_is_false(json_object_get(j, "quick_converged")));
    CHECK(json_is_false(json_object_get(j, "quick_answered")));
    CHECK_STR(json_string_value(json_object_get(j, "quick_held_by")), "interval");
    CHECK_NEAR(NUM(j, "quick_bps"), 9e5, 1e-6);
    CHECK_NEAR(NUM(j, "quick_ci_pct"), 12.0, 1e-9);
    CHECK_NEAR(NUM(j, "full_bps"), 8e5, 1e-6);           /* 1e6 B * 8 / 10 s */
    CHECK_EQ(NUM(j, "full_bytes_estimate"), 1000000);     /* from the full run, not 9e5 */
    CHECK_NEAR(NUM(j, "time_saved_pct"), 0.0, 1e-9);
    json_decref(j);
}

/* Quick mode that never left slow-start: no quick figure, estimate from cumulative. */
static void test_result_quick_not_entered(void)
{
    qp_run r;
    qp_opts o;
    qp_stream s;
    json_t *j;

    make_run(&r, &o, &s, MODE_QUICK);
    r.out.elapsed_s = 10.0;
    j = capture(out_result, &r);
    CHECK(json_is_false(json_object_get(j, "quick_mode_entered")));
    CHECK(ISNULL(j, "quick_bps"));
    CHECK(ISNULL(j, "quick_window_s"));
    CHECK(ISNULL(j, "quick_ci_pct"));
    CHECK(ISNULL(j, "quick_held_by"));
    CHECK(json_is_false(json_object_get(j, "quick_converged")));
    CHECK(json_is_false(json_object_get(j, "quick_answered")));
    CHECK(ISNULL(j, "quick_lo_bps"));
    CHECK(ISNULL(j, "quick_bound_by"));
    CHECK_NEAR(NUM(j, "full_bps"), 8e5, 1e-6);
    CHECK(ISNULL(j, "rule"));
    CHECK(ISNULL(j, "slow_start_end_s"));
    CHECK_NEAR(NUM(j, "cumulative_bps"), 8e5, 1e-6);
    CHECK_EQ(NUM(j, "full_bytes_estimate"), 1000000);
    CHECK_NEAR(NUM(j, "time_saved_pct"), 0.0, 1e-9);
    json_decref(j);
}

/* Validate mode: full figures, savings null, and the paired quick figure's error. */
static void test_result_validate_error_pct(void)
{
    qp_run r;
    qp_opts o;
    qp_stream s;
    json_t *j, *v;

    make_run(&r, &o, &s, MODE_VALIDATE);
    o.iperf2 = 1;
    s.server_bytes = -1;
    r.out.server_bytes = -1;
    r.out.ss_ended = 1;
    r.out.ss_t = 0.25;
    r.out.ss_rule = SS_RULE_BBR_PLATEAU;
    r.out.quick_entered = 1;
    r.out.quick_bps = 4.4e6;
    r.out.quick_end_t = 1.25;
    r.out.quick_bytes_sent = 600000;
    r.out.quick_converged = 1;
    r.out.quick_ci_frac = 0.015;
    r.out.quick_window_s = 1.0;
    r.out.quick_batches = 5;
    r.out.quick_basis = QW_BASIS_BBR_CYCLES;
    r.out.quick_excluded_s = 0.2;
    j = capture(out_result, &r);
    CHECK(ISNULL(j, "quick_converged"));
    CHECK(ISNULL(j, "quick_ci_pct"));
    CHECK(json_is_false(json_object_get(j, "quick_mode_entered")));
    CHECK(ISNULL(j, "quick_bps"));
    CHECK_NEAR(NUM(j, "full_bps"), 4e6, 1e-3);
    CHECK(ISNULL(j, "server_bytes"));
    CHECK(ISNULL(j, "time_saved_pct"));
    CHECK(ISNULL(j, "traffic_saved_pct"));
    v = json_object_get(j, "validate");
    CHECK(json_is_object(v));
    CHECK_NEAR(NUM(v, "quick_bps"), 4.4e6, 1e-3);
    CHECK_NEAR(NUM(v, "full_bps"), 4e6, 1e-3);
    CHECK_NEAR(NUM(v, "error_pct"), 10.0, 1e-9);
    CHECK_NEAR(NUM(v, "quick_elapsed_s"), 1.25, 1e-12);
    CHECK_EQ(NUM(v, "quick_bytes_sent"), 600000);
    CHECK_STR(json_string_value(json_object_get(v, "rule")), "bbr_plateau");
    CHECK(json_is_true(json_object_get(v, "quick_converged")));
    CHECK_NEAR(NUM(v, "quick_ci_pct"), 1.5, 1e-9);
    CHECK_NEAR(NUM(v, "quick_window_s"), 1.0, 1e-12);
    CHECK_STR(json_string_value(json_object_get(v, "quick_basis")), "bbr_cycles");
    CHECK_NEAR(NUM(v, "quick_excluded_s"), 0.2, 1e-12);
    CHECK(ISNULL(json_array_get(json_object_get(j, "streams"), 0), "server_bytes"));
    json_decref(j);
}

/* Print an error for capture(). */
static void print_auth_error(const qp_run *r)
{
    qp_err e = { .code = "auth_required", .has_iperf_error = 1, .iperf_error = 142 };

    (void)r;
    snprintf(e.message, sizeof(e.message), "needs a token");
    out_error(&e);
}

/* Error events always carry iperf_error and errno, null when unknown. */
static void test_error_fields(void)
{
    json_t *j = capture(print_auth_error, NULL);

    CHECK_STR(json_string_value(json_object_get(j, "code")), "auth_required");
    CHECK_EQ(json_integer_value(json_object_get(j, "iperf_error")), 142);
    CHECK(ISNULL(j, "errno"));
    json_decref(j);
}

/* Run every test; the exit status says whether all passed. */
int main(void)
{
    out_set_json(1);
    test_result_quick_figures();
    test_result_quick_answered_at_deadline();
    test_result_quick_not_converged();
    test_result_quick_not_entered();
    test_result_validate_error_pct();
    test_error_fields();
    return check_done();
}
