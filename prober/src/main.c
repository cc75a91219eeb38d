/* main.c: quickprobe entry point: options, signals, one run, exit status. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "net.h"
#include "opts.h"
#include "output.h"
#include "run.h"

/* SIGINT / SIGTERM: ask the run to end cleanly; blocking waits see EINTR. */
static void on_signal(int sig)
{
    (void)sig;
    net_interrupted = 1;
}

/* Install the signal handlers (no SA_RESTART, so waits wake up). */
static void install_signals(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* Parse the options, run one test, print its result or error. */
int main(int argc, char **argv)
{
    char err[512];
    qp_opts o;
    qp_run r;
    qp_err e;
    int json = 0, rc;

    memset(&e, 0, sizeof(e));
    opts_defaults(&o);
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--json") == 0)
            json = 1;
    if (opts_parse(&o, argc, argv, err, sizeof(err)) < 0) {
        out_usage_error(json, err);
        return 2;
    }
    if (o.help) {
        fputs(opts_usage(), stdout);
        return 0;
    }
    if (o.version) {
        printf("quickprobe %s\n", QP_VERSION);
        return 0;
    }
    out_set_json(o.json);
    install_signals();
    if (run_init(&r, &o, &e) < 0) {
        out_error(&e);
        return 1;
    }
    rc = run_test(&r, &e);
    if (rc < 0) {
        if (!r.start_printed && o.json)
            out_start(&r);
        out_error(&e);
    } else {
        out_result(&r);
    }
    run_free(&r);
    return rc < 0 ? 1 : 0;
}
