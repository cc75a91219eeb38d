/* opts.c: command-line parsing and validation; every message says what is allowed. */
#include "opts.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
"usage: quickprobe -c HOST [options]\n"
"\n"
"Measure achievable TCP throughput to a stock iperf3 (or iperf 2) server, stopping\n"
"once the rate measured after slow-start has converged (iperf quick mode): at the\n"
"first planned check (after --quick-ms of measuring, then every quarter of it)\n"
"where its confidence interval (95 % over the checks) is within --quick-tolerance;\n"
"else it answers by its deadline (100 round trips after slow-start, at least\n"
"--quick-ms of measuring, at most --quick-max-ms; --quick-max-ms where the rate\n"
"changed level) with the interval its evidence supports. --until-converged runs\n"
"on to -t instead (the full run is the result).\n"
"\n"
"  -c HOST               target: IPv4 or IPv6 literal or host name (required)\n"
"  -p PORT               server port, 1-65535 (default 5201; 5001 with --iperf2)\n"
"  -t SEC                full-run duration and quick-mode fallback limit,\n"
"                        integer 1-3600 (default 10)\n"
"  -P N                  parallel streams, 1-128 (default 1)\n"
"  -w SIZE               socket send buffer to ask for (SO_SNDBUF), 1K-1G;\n"
"                        K/M/G suffixes are 1024-based (default: kernel's)\n"
"  -C ALGO               congestion control (TCP_CONGESTION): one of the kernel's\n"
"                        available ones, e.g. reno, cubic, bbr (default: kernel's)\n"
"  -i SEC                human report interval, 0.1-60, 0 = none (default 1)\n"
"  --iperf2              talk to an iperf 2 server instead of iperf3\n"
"  --mode MODE           quick, full or validate (default quick)\n"
"  --sample-ms MS        TCP_INFO sampling period, 1-1000 (default 20)\n"
"  --quick-ms MS         shortest measurement window after slow-start,\n"
"                        100-10000 (default 1000)\n"
"  --quick-max-ms MS     latest answer after slow-start ended, converged or not;\n"
"                        100-60000 and >= --quick-ms (default 4000)\n"
"  --until-converged     a window not converged by its deadline runs on to -t and\n"
"                        the full run is the result (the paper's fallback)\n"
"  --quick-tolerance PCT confidence half-width to converge to, in % of the rate,\n"
"                        0.1-50 (default 3)\n"
"  --connect-timeout SEC deadline for resolving, connecting and each protocol\n"
"                        read, 0.1-60 (default 5)\n"
"  --json                JSON Lines events on stdout instead of the human report\n"
"  --help                this text\n"
"  --version             print the version\n"
"\n"
"Exit status: 0 success, 1 test error, 2 usage error.\n";

/* The --help text. */
const char *opts_usage(void)
{
    return usage_text;
}

/* "quick", "full" or "validate". */
const char *opts_mode_name(qp_mode m)
{
    if (m == MODE_FULL) return "full";
    if (m == MODE_VALIDATE) return "validate";
    return "quick";
}

/* Fill o with the documented defaults. */
void opts_defaults(qp_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->time_s = 10;
    o->streams = 1;
    o->interval_s = 1.0;
    o->mode = MODE_QUICK;
    o->sample_ms = 20;
    o->quick_ms = 1000;
    o->quick_max_ms = 4000;
    o->quick_tolerance_pct = 3.0;
    o->connect_timeout_s = 5.0;
}

/* Parse a whole decimal integer in [lo, hi] for option name; 0 or -1. */
static int parse_int(const char *name, const char *s, long lo, long hi, int *out,
                     char *err, size_t errlen)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < lo || v > hi) {
        snprintf(err, errlen, "%s: '%s' is not allowed: give an integer from %ld to %ld",
                 name, s, lo, hi);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* Parse a decimal number in [lo, hi] (or exactly zero when zero_ok); 0 or -1. */
static int parse_double(const char *name, const char *s, double lo, double hi,
                        int zero_ok, double *out, char *err, size_t errlen)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s || *end != '\0' || !isfinite(v) ||
        !((v >= lo && v <= hi) || (zero_ok && v == 0.0))) {
        snprintf(err, errlen, "%s: '%s' is not allowed: give a number from %g to %g%s",
                 name, s, lo, hi, zero_ok ? ", or 0 for none" : "");
        return -1;
    }
    *out = v;
    return 0;
}

/* Parse "64K", "1M", "1048576" (1024-based suffixes K/M/G) into bytes; 0 or -1. */
int opts_parse_size(const char *s, uint64_t *out, char *err, size_t errlen)
{
    char *end;
    unsigned long long v;
    uint64_t mult = 1;

    if (!s || !isdigit((unsigned char)s[0]))
        goto fail;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno)
        goto fail;
    if (*end) {
        switch (toupper((unsigned char)*end)) {
        case 'K': mult = 1024ULL; break;
        case 'M': mult = 1024ULL * 1024; break;
        case 'G': mult = 1024ULL * 1024 * 1024; break;
        default: goto fail;
        }
        if (end[1] != '\0')
            goto fail;
    }
    if (v > UINT64_MAX / mult)
        goto fail;
    *out = (uint64_t)v * mult;
    return 0;
fail:
    snprintf(err, errlen, "-w: '%s' is not a size: give a number with an optional "
             "K, M or G suffix (1024-based), from 1K to 1G", s ? s : "");
    return -1;
}

/* Check a congestion control name's syntax (availability is checked at run time). */
static int check_cc_name(const char *s, char *err, size_t errlen)
{
    size_t n = strlen(s);

    if (n == 0 || n > 15)
        goto fail;
    for (size_t i = 0; i < n; i++)
        if (!islower((unsigned char)s[i]) && !isdigit((unsigned char)s[i]) && s[i] != '_')
            goto fail;
    return 0;
fail:
    snprintf(err, errlen, "-C: '%s' is not a congestion control name: give one of the "
             "kernel's available ones, e.g. reno, cubic, bbr", s);
    return -1;
}

/* Parse --mode's value; 0 or -1. */
static int parse_mode(const char *s, qp_mode *m, char *err, size_t errlen)
{
    if (strcmp(s, "quick") == 0) *m = MODE_QUICK;
    else if (strcmp(s, "full") == 0) *m = MODE_FULL;
    else if (strcmp(s, "validate") == 0) *m = MODE_VALIDATE;
    else {
        snprintf(err, errlen, "--mode: '%s' is not allowed: give quick, full or validate", s);
        return -1;
    }
    return 0;
}

/* Set the target host; a bracketed IPv6 literal ("[::1]", as in URLs) loses its brackets. */
static int set_host(qp_opts *o, const char *v, char *err, size_t errlen)
{
    size_t n = strlen(v);

    if (n >= 2 && v[0] == '[' && v[n - 1] == ']') {
        if (n - 2 >= sizeof(o->host_buf)) {
            snprintf(err, errlen, "-c: the address in brackets is too long");
            return -1;
        }
        memcpy(o->host_buf, v + 1, n - 2);
        o->host_buf[n - 2] = '\0';
        v = o->host_buf;
    }
    if (!*v) {
        snprintf(err, errlen, "-c: the host must not be empty");
        return -1;
    }
    o->host = v;
    return 0;
}

/* Apply one option that takes a value; 0, -1 on a bad value, 1 if name is unknown. */
static int apply_valued(qp_opts *o, const char *name, const char *v, char *err, size_t errlen)
{
    if (strcmp(name, "-c") == 0)
        return set_host(o, v, err, errlen);
    if (strcmp(name, "-p") == 0) return parse_int(name, v, 1, 65535, &o->port, err, errlen);
    if (strcmp(name, "-t") == 0) return parse_int(name, v, 1, 3600, &o->time_s, err, errlen);
    if (strcmp(name, "-P") == 0)
        return parse_int(name, v, 1, QP_MAX_STREAMS, &o->streams, err, errlen);
    if (strcmp(name, "-w") == 0) {
        if (opts_parse_size(v, &o->window_bytes, err, errlen) < 0) return -1;
        if (o->window_bytes < 1024 || o->window_bytes > 1024ULL * 1024 * 1024) {
            snprintf(err, errlen, "-w: '%s' is out of range: give a size from 1K to 1G", v);
            return -1;
        }
        return 0;
    }
    if (strcmp(name, "-C") == 0) {
        if (check_cc_name(v, err, errlen) < 0) return -1;
        o->congestion = v;
        return 0;
    }
    if (strcmp(name, "-i") == 0)
        return parse_double(name, v, 0.1, 60, 1, &o->interval_s, err, errlen);
    if (strcmp(name, "--mode") == 0) return parse_mode(v, &o->mode, err, errlen);
    if (strcmp(name, "--sample-ms") == 0)
        return parse_int(name, v, 1, 1000, &o->sample_ms, err, errlen);
    if (strcmp(name, "--quick-ms") == 0)
        return parse_int(name, v, 100, 10000, &o->quick_ms, err, errlen);
    if (strcmp(name, "--quick-max-ms") == 0)
        return parse_int(name, v, 100, 60000, &o->quick_max_ms, err, errlen);
    if (strcmp(name, "--quick-tolerance") == 0)
        return parse_double(name, v, 0.1, 50, 0, &o->quick_tolerance_pct, err, errlen);
    if (strcmp(name, "--connect-timeout") == 0)
        return parse_double(name, v, 0.1, 60, 0, &o->connect_timeout_s, err, errlen);
    return 1;
}

/* Apply one flag without a value; 0, or 1 if name is not a flag. */
static int apply_flag(qp_opts *o, const char *name)
{
    if (strcmp(name, "--iperf2") == 0) o->iperf2 = 1;
    else if (strcmp(name, "--json") == 0) o->json = 1;
    else if (strcmp(name, "--until-converged") == 0) o->until_converged = 1;
    else if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) o->help = 1;
    else if (strcmp(name, "--version") == 0 || strcmp(name, "-v") == 0) o->version = 1;
    else return 1;
    return 0;
}

/* Parse argv into o; 0 on success, -1 with a message saying what is allowed. */
int opts_parse(qp_opts *o, int argc, char **argv, char *err, size_t errlen)
{
    for (int i = 1; i < argc; i++) {
        char name[32];
        const char *a = argv[i], *v = NULL, *eq;
        int r;

        if (apply_flag(o, a) == 0)
            continue;
        /* Accept --opt=value and iperf's -P4 as well as "--opt value", like getopt. */
        eq = strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL;
        if (!eq && a[0] == '-' && a[1] && a[1] != '-' && a[2])
            eq = a + 1;
        if (eq && (size_t)(eq - a) < sizeof(name)) {
            memcpy(name, a, (size_t)(eq - a) + (eq[0] != '='));
            name[eq - a + (eq[0] != '=')] = '\0';
            v = eq + 1;
        } else {
            snprintf(name, sizeof(name), "%s", a);
            if (i + 1 < argc) v = argv[i + 1];
        }
        r = v ? apply_valued(o, name, v, err, errlen) : 1;
        if (r < 0)
            return -1;
        if (r > 0) {
            if (!v && apply_valued(o, name, "", err, errlen) != 1)
                snprintf(err, errlen, "%s needs a value (see --help)", name);
            else
                snprintf(err, errlen, "unknown option '%s' (see --help)", a);
            return -1;
        }
        if (!eq)
            i++;
    }
    if (o->help || o->version)
        return 0;
    if (!o->host) {
        snprintf(err, errlen, "-c HOST is required: the iperf server to test against");
        return -1;
    }
    if (o->quick_max_ms < o->quick_ms) {
        snprintf(err, errlen, "--quick-max-ms: %d is less than --quick-ms (%d): give a bound "
                 "from %d to 60000", o->quick_max_ms, o->quick_ms, o->quick_ms);
        return -1;
    }
    if (o->port == 0)
        o->port = o->iperf2 ? 5001 : 5201;
    return 0;
}
