/* test_measure.c: the aggregate inst_bps rule (bytes acked over the last 500 ms). */
#include "check.h"
#include "measure.h"

/* Before 0.5 s the rate runs from t = 0; afterwards from the newest point >= 500 ms old. */
static void test_inst_bps_window(void)
{
    qp_point h[] = { { 0.1, 1000 }, { 0.2, 3000 }, { 0.3, 6000 }, { 0.6, 9000 }, { 0.7, 10000 } };

    /* t = 0.4: nothing 500 ms old, so since t = 0: 8000 B * 8 / 0.4 s. */
    CHECK_NEAR(measure_inst_bps(h, 3, 0.4, 8000), 160000.0, 1e-6);
    /* t = 0.75: base is (0.2, 3000): 7000 B over 0.55 s. */
    CHECK_NEAR(measure_inst_bps(h, 4, 0.75, 10000), 7000.0 * 8 / 0.55, 1e-6);
    /* t = 0.7 exactly: base (0.2, 3000) is exactly 500 ms old. */
    CHECK_NEAR(measure_inst_bps(h, 4, 0.7, 11000), 8000.0 * 8 / 0.5, 1e-6);
    /* t = 1.2: base (0.7, 10000). */
    CHECK_NEAR(measure_inst_bps(h, 5, 1.2, 14000), 4000.0 * 8 / 0.5, 1e-6);
}

/* Degenerate inputs give 0, never a division by zero or a negative rate. */
static void test_inst_bps_degenerate(void)
{
    qp_point h[] = { { 0.1, 5000 } };

    CHECK_NEAR(measure_inst_bps(NULL, 0, 0.0, 0), 0.0, 0);
    CHECK_NEAR(measure_inst_bps(h, 1, 0.6, 4000), 0.0, 0);
    CHECK_NEAR(measure_inst_bps(NULL, 0, 0.02, 2500), 1e6, 1e-6);
}

/* Run every test; the exit status says whether all passed. */
int main(void)
{
    test_inst_bps_window();
    test_inst_bps_degenerate();
    return check_done();
}
