/* qwstats.c: the quick window's statistics: Student's t quantiles and the batches' ratio
 * estimator (quickwin.h). */
#include "qwint.h"

#include <math.h>

/* Two-sided 95 % Student t quantile for dof degrees of freedom (dof >= 1). */
double qw_t95(int dof)
{
    static const double t[] = { 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                                2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131 };

    if (dof < 1)
        return INFINITY;
    if (dof <= (int)(sizeof(t) / sizeof(t[0])))
        return t[dof - 1];
    return dof <= 30 ? 2.09 : 1.96;
}

/* P(|T| <= t) for Student's t with dof degrees of freedom, from theta = atan(t / sqrt(dof))
 * (Abramowitz and Stegun 26.7.3-4: a finite sum for whole dof). */
static double t_central(int dof, double theta)
{
    double c2 = cos(theta) * cos(theta), term = 1, sum = 1;

    if (dof == 1)
        return 2.0 * theta / M_PI;
    if (dof % 2 == 0) {
        for (int k = 2; k <= dof - 2; k += 2) {
            term *= c2 * (k - 1) / k;
            sum += term;
        }
        return sin(theta) * sum;
    }
    term = sum = cos(theta);
    for (int k = 3; k <= dof - 2; k += 2) {
        term *= c2 * (k - 1) / k;
        sum += term;
    }
    return 2.0 / M_PI * (theta + sin(theta) * sum);
}

/* Two-sided Student t quantile: the t with P(|T| > t) = alpha for dof degrees of freedom
 * (dof >= 1, 0 < alpha < 1), by bisection on t_central; past 1000 dof, the normal's. */
double qw_t_quantile(int dof, double alpha)
{
    double lo = 0, hi = M_PI / 2;

    if (dof < 1 || alpha <= 0)
        return INFINITY;
    if (alpha >= 1)
        return 0;
    if (dof > 1000)
        dof = 1000;
    for (int i = 0; i < 60; i++) {
        double mid = (lo + hi) / 2;

        if (t_central(dof, mid) < 1 - alpha)
            lo = mid;
        else
            hi = mid;
    }
    return sqrt((double)dof) * tan((lo + hi) / 2);
}

/* Ratio estimator over n batches (bytes, seconds): rate in bytes/s and the two-sided
 * 1 - alpha half-width as a fraction of it (-1 when n < 2 or the rate is 0). */
double qw_batch_ci(const double *bytes, const double *secs, int n, double alpha, double *ci_frac)
{
    double sb = 0, ss = 0, var = 0, r, se;

    *ci_frac = -1;
    for (int i = 0; i < n; i++) {
        sb += bytes[i];
        ss += secs[i];
    }
    if (ss <= 0)
        return 0;
    r = sb / ss;
    if (n < 2 || r <= 0)
        return r;
    /* Delta-method variance of a ratio of sums: residuals bytes_i - r * secs_i. */
    for (int i = 0; i < n; i++)
        var += (bytes[i] - r * secs[i]) * (bytes[i] - r * secs[i]);
    var /= (n - 1);
    se = sqrt(var / n) / (ss / n);
    *ci_frac = qw_t_quantile(n - 1, alpha) * se / r;
    return r;
}
