/* test_opts.c: size parsing and option validation messages. */
#include "check.h"
#include "opts.h"

/* Parse argv (NULL-terminated list after the program name) into o; returns opts_parse's. */
static int parse(qp_opts *o, char *err, size_t errlen, char **args)
{
    char *argv[32] = { "quickprobe" };
    int argc = 1;

    while (args[argc - 1])
        argv[argc] = args[argc - 1], argc++;
    opts_defaults(o);
    err[0] = '\0';
    return opts_parse(o, argc, argv, err, errlen);
}

#define PARSE(o, err, ...) parse((o), (err), sizeof(err), (char *[]){ __VA_ARGS__, NULL })

/* Sizes: plain numbers, 1024-based suffixes either case, and rejects. */
static void test_size_suffixes(void)
{
    char err[256];
    uint64_t v = 0;

    CHECK_EQ(opts_parse_size("65536", &v, err, sizeof(err)), 0);
    CHECK_EQ(v, 65536);
    CHECK_EQ(opts_parse_size("64K", &v, err, sizeof(err)), 0);
    CHECK_EQ(v, 65536);
    CHECK_EQ(opts_parse_size("64k", &v, err, sizeof(err)), 0);
    CHECK_EQ(v, 65536);
    CHECK_EQ(opts_parse_size("1M", &v, err, sizeof(err)), 0);
    CHECK_EQ(v, 1048576);
    CHECK_EQ(opts_parse_size("1G", &v, err, sizeof(err)), 0);
    CHECK_EQ(v, 1073741824);
    CHECK_EQ(opts_parse_size("64KB", &v, err, sizeof(err)), -1);
    CHECK_CONTAINS(err, "'64KB' is not a size");
    CHECK_EQ(opts_parse_size("64Q", &v, err, sizeof(err)), -1);
    CHECK_CONTAINS(err, "K, M or G suffix");
    CHECK_EQ(opts_parse_size("", &v, err, sizeof(err)), -1);
    CHECK_EQ(opts_parse_size("-1K", &v, err, sizeof(err)), -1);
    CHECK_EQ(opts_parse_size("K", &v, err, sizeof(err)), -1);
    CHECK_EQ(opts_parse_size("1.5M", &v, err, sizeof(err)), -1);
    CHECK_EQ(opts_parse_size("99999999999999999999G", &v, err, sizeof(err)), -1);
    CHECK_EQ(opts_parse_size("17179869184G", &v, err, sizeof(err)), -1);
}

/* -w must lie in 1K..1G. */
static void test_window_range(void)
{
    qp_opts o;
    char err[256];

    CHECK_EQ(PARSE(&o, err, "-c", "h", "-w", "64K"), 0);
    CHECK_EQ(o.window_bytes, 65536);
    CHECK_EQ(PARSE(&o, err, "-c", "h", "-w", "1K"), 0);
    CHECK_EQ(PARSE(&o, err, "-c", "h", "-w", "1G"), 0);
    CHECK_EQ(PARSE(&o, err, "-c", "h", "-w", "1023"), -1);
    CHECK_STR(err, "-w: '1023' is out of range: give a size from 1K to 1G");
    CHECK_EQ(PARSE(&o, err, "-c", "h", "-w", "1025M"), -1);
    CHECK_CONTAINS(err, "from 1K to 1G");
}

/* Defaults: documented values, port chosen by protocol. */
static void test_defaults_and_ports(void)
{
    qp_opts o;
    char err[256];

    CHECK_EQ(PARSE(&o, err, "-c", "example.org"), 0);
    CHECK_STR(o.host, "example.org");
    CHECK_EQ(o.port, 5201);
    CHECK_EQ(o.time_s, 10);
    CHECK_EQ(o.streams, 1);
    CHECK_EQ(o.sample_ms, 20);
    CHECK_EQ(o.quick_ms, 1000);
    CHECK_NEAR(o.interval_s, 1.0, 0);
    CHECK_NEAR(o.connect_timeout_s, 5.0, 0);
    CHECK_EQ(o.mode, MODE_QUICK);
    CHECK_EQ(o.window_bytes, 0);
    CHECK(o.congestion == NULL);
    CHECK_EQ(PARSE(&o, err, "-c", "h", "--iperf2"), 0);
    CHECK_EQ(o.port, 5001);
    CHECK_EQ(PARSE(&o, err, "--iperf2", "-p", "6000", "-c", "h"), 0);
    CHECK_EQ(o.port, 6000);
}

/* Every option's range, with the exact message for a few. */
static void test_range_messages(void)
{
    qp_opts o;
    char err[256];

    CHECK_EQ(PARSE(&o, err, "-c", "h", "-P", "0"), -1);
    CHECK_STR(err, "-P: '0' is not allowed: give an integer from 1 to 128");
    CHECK_EQ(PARSE(&o, err, "-c", "h", "-P", "129"), -1);
    CHECK_EQ(PARSE(&o, err, "-c", "h", "-P", "128"), 0);
    CHECK_EQ(o.streams, 128);
    CHECK_EQ(PARSE(&o, err, "-c", "h", "-p", "65536"), -1);
    CHECK_STR(err, "-p: '65536' is not allowed: give an integer from 1 to 65535");
    CHECK_EQ(PARSE(&o, err, "-c", "h", "-t", "1.5"), -1);
    CHECK_STR(err, "-t: '1.5' is not allowed: give an integer from 1 to 3600");
    CHECK_EQ(PARSE(&o, err, "-c", "h", "-t", "3601"), -1);
    CHECK_EQ(PARSE(&o, err, "-c", "h", "-i", "0.05"), -1);
    CHECK_STR(err, "-i: '0.05' is not allowed: give a number from 0.1 to 60, or 0 for none");
    CHECK_EQ(PARSE(&o, err, "-c", "h", "-i", "0"), 0);
    CHECK_NEAR(o.interval_s, 0.0, 0);
    CHECK_EQ(PARSE(&o, err, "-c", "h", "--sample-ms", "0"), -1);
    CHECK_STR(err, "--sample-ms: '0' is not allowed: give an integer from 1 to 1000");
    CHECK_EQ(PARSE(&o, err, "-c", "h", "--quick-ms", "99"), -1);
    CHECK_STR(err, "--quick-ms: '99' is not allowed: give an integer from 100 to 10000");
    CHECK_EQ(PARSE(&o, err, "-c", "h", "--connect-timeout", "0"), -1);
    CHECK_STR(err, "--connect-timeout: '0' is not allowed: give a number from 0.1 to 60");
    CHECK_EQ(PARSE(&o, err, "-c", "h", "--connect-timeout", "nan"), -1);
    CHECK_EQ(PARSE(&o, err, "-c", "h", "--mode", "fast"), -1);
    CHECK_STR(err, "--mode: 'fast' is not allowed: give quick, full or validate");
    CHECK_EQ(PARSE(&o, err, "-c", "h", "--mode=validate"), 0);
    CHECK_EQ(o.mode, MODE_VALIDATE);
    /* iperf's attached short values. */
    CHECK_EQ(PARSE(&o, err, "-c127.0.0.1", "-P4", "-t3", "-w64K"), 0);
    CHECK_STR(o.host, "127.0.0.1");
    CHECK_EQ(o.streams, 4);
    CHECK_EQ(o.time_s, 3);
    CHECK_EQ(o.window_bytes, 65536);
    CHECK_EQ(PARSE(&o, err, "-c", "h", "-P0"), -1);
    CHECK_STR(err, "-P: '0' is not allowed: give an integer from 1 to 128");
    CHECK_EQ(PARSE(&o, err, "-c", "h", "-x5"), -1);
    CHECK_STR(err, "unknown option '-x5' (see --help)");
}

/* Missing host, missing values, unknown options, bad -C names. */
static void test_structure_errors(void)
{
    qp_opts o;
    char err[256];

    CHECK_EQ(PARSE(&o, err, "-t", "5"), -1);
    CHECK_STR(err, "-c HOST is required: the iperf server to test against");
    CHECK_EQ(PARSE(&o, err, "-c", "h", "-t"), -1);
    CHECK_STR(err, "-t needs a value (see --help)");
    CHECK_EQ(PARSE(&o, err, "-c", "h", "--bogus"), -1);
    CHECK_STR(err, "unknown option '--bogus' (see --help)");
    CHECK_EQ(PARSE(&o, err, "-c", ""), -1);
    CHECK_STR(err, "-c: the host must not be empty");
    CHECK_EQ(PARSE(&o, err, "-c", "[]"), -1);
    CHECK_STR(err, "-c: the host must not be empty");
    CHECK_EQ(PARSE(&o, err, "-c", "[fe80::1%eth0]"), 0);
    CHECK_STR(o.host, "fe80::1%eth0");
    CHECK_EQ(PARSE(&o, err, "-c", "::1"), 0);
    CHECK_STR(o.host, "::1");
    CHECK_EQ(PARSE(&o, err, "-c", "h", "-C", "Cubic;rm"), -1);
    CHECK_CONTAINS(err, "is not a congestion control name");
    CHECK_EQ(PARSE(&o, err, "-c", "h", "-C", "cubic"), 0);
    CHECK_STR(o.congestion, "cubic");
    CHECK_EQ(PARSE(&o, err, "--help"), 0);
    CHECK_EQ(o.help, 1);
}

/* --help documents every option and its range. */
static void test_help_lists_options(void)
{
    const char *u = opts_usage();
    const char *need[] = { "-c HOST", "-p PORT", "1-65535", "-t SEC", "1-3600", "-P N", "1-128",
                           "-w SIZE", "1K-1G", "-C ALGO", "-i SEC", "0.1-60", "--iperf2",
                           "--mode MODE", "--sample-ms", "1-1000", "--quick-ms", "100-10000",
                           "--connect-timeout", "--json", "--version" };

    for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++)
        check_record(strstr(u, need[i]) != NULL, __FILE__, __LINE__, need[i]);
}

/* Run every test; the exit status says whether all passed. */
int main(void)
{
    test_size_suffixes();
    test_window_range();
    test_defaults_and_ports();
    test_range_messages();
    test_structure_errors();
    test_help_lists_options();
    return check_done();
}
