#!/usr/bin/env python3
"""The bench-portal report: turns the figures scripts/bench_portal.py measured (JSON) into
docs/bench-portal.md. Run alone to rewrite the report from saved figures:
`scripts/bench_portal_report.py docs/bench-portal.json > docs/bench-portal.md`."""

import json
import statistics
import sys

# Page / healthz, for p50 and p95 alike (issue 10 item 2).
TARGETS = {"anonymous": 3.0, "logged in": 5.0}
CSV_PEAK_TARGET_MB = 200.0


def percentile(values, q):
    """The q-th percentile (0-100) by linear interpolation between closest ranks."""
    values = sorted(values)
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def page_rows(pages):
    """(name, n, p50, p95, p50 ratio, p95 ratio, target, verdict, checked, stale, errors) per target."""
    targets = pages["targets"]
    judged = "new_result" in pages  # the lone client's run (no new result, no stale check) is not judged
    base = targets["healthz"]["ms"]
    base50, base95 = percentile(base, 50), percentile(base, 95)
    rows = []
    for name, t in targets.items():
        p50, p95 = percentile(t["ms"], 50), percentile(t["ms"], 95)
        who = name.rsplit(", ", 1)[-1]
        target = TARGETS.get(who)
        r50, r95 = p50 / base50, p95 / base95
        if target is None or not judged:
            verdict = ""
        elif t["stale"] or t["errors"] or not t["checked"]:
            verdict = "**MISS** (stale, errors or unchecked)"
        else:
            verdict = "met" if max(r50, r95) <= target else "**MISS**"
        rows.append((name, len(t["ms"]), p50, p95, r50, r95, target, verdict, t["checked"], t["stale"], t["errors"]))
    return rows


def render(f):
    pages = f["pages"]
    rows = page_rows(pages)
    stale = sum(r[9] for r in rows)
    lines = [
        "# bench-portal",
        "",
        f"Run {f['when']} on {f['host']} ({f['cores']} cores, shared), Python {f['python']}, PostgreSQL database "
        f"`{f['database']}`. Command: `make bench-portal` (`scripts/bench_portal.py {f['argv']}`), "
        f"{f['total_s']:.0f} s in all.",
        "",
        f"Data: {f['site_rows']:,} measurements of one site over a year (85% quick, 10% full, 5% validate; "
        f"5% failed; each with its `result` JSON), two neighbour sites with 2,000 each, and a permalink with "
        f"a 20 s trace at 20 ms with 4 streams ({f['trace_samples']} samples).",
        "",
        "## Pages through gunicorn vs /healthz",
        "",
        f"gunicorn (2 workers x 4 threads, as `make run`) on loopback; {f['users']} concurrent keep-alive "
        f"clients (locust FastHttpUser, `scripts/httpload.py`) each reading every page in turn, anonymous "
        f"and logged in, for {f['seconds']:.0f} s after a warm-up. Times are request sent to body read. "
        f"Halfway, a new result was stored by the worker's own functions (`{pages['new_result']}`): every "
        f"read sent after its commit was checked for it. Targets: page / healthz <= 3x anonymous, <= 5x "
        f"logged in, at p50 and at p95; 0 stale reads.",
        "",
        "| page | reads | p50 ms | p95 ms | p50 / healthz | p95 / healthz | target | checked after the new result "
        "| stale | errors | verdict |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, n, p50, p95, r50, r95, target, verdict, checked, stale_n, errors in rows:
        goal = f"{target:.0f}x" if target else ""
        lines.append(
            f"| {name} | {n} | {p50:.2f} | {p95:.2f} | {r50:.1f}x | {r95:.1f}x | {goal} | "
            f"{checked if target else ''} | {stale_n if target else ''} | {errors} | {verdict} |"
        )
    lines += ["", f"Stale reads in the run: **{stale}** (target 0)."]
    if pages.get("single"):
        lines += [
            "",
            f"### One client alone ({pages['single']['seconds']:.0f} s)",
            "",
            "With ten clients the two-core server is saturated: every read, /healthz too, waits in gunicorn's "
            "queue, which narrows the ratios above. One client reading the same pages in turn shows what each "
            "page costs by itself:",
            "",
            "| page | reads | p50 ms | p95 ms | p50 / healthz | p95 / healthz |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for name, n, p50, p95, r50, r95, *_ in page_rows(pages["single"]):
            lines.append(f"| {name} | {n} | {p50:.2f} | {p95:.2f} | {r50:.1f}x | {r95:.1f}x |")
    csv = f.get("csv")
    if csv:
        ok = "met" if csv["peak_mb"] < CSV_PEAK_TARGET_MB else "**MISS**"
        lines += [
            "",
            "## CSV export memory",
            "",
            f"`{csv['url']}` ({csv['rows']:,} rows) through the streaming view in a fresh Python process "
            f"(Django test Client, response consumed chunk by chunk); peak RSS from getrusage(ru_maxrss). "
            f"Target: peak < {CSV_PEAK_TARGET_MB:.0f} MB.",
            "",
            "| how the response is read | lines | CSV MB | seconds | RSS after setup MB | peak RSS MB | target |",
            "|---|---:|---:|---:|---:|---:|---|",
            f"| streamed, chunk by chunk | {csv['lines']:,} | {csv['bytes'] / 1e6:.1f} | {csv['seconds']:.1f} | "
            f"{csv['base_mb']:.1f} | {csv['peak_mb']:.1f} | {ok} |",
        ]
        if csv.get("buffered"):
            b = csv["buffered"]
            lines.append(
                f"| calibration: every chunk kept | {b['lines']:,} | {b['bytes'] / 1e6:.1f} | "
                f"{b['seconds']:.1f} | {b['base_mb']:.1f} | {b['peak_mb']:.1f} | (shows memory is seen) |"
            )
        lines += ["", f"Lines {'match' if csv['lines'] == csv['rows'] + 1 else 'DO NOT match'} rows + header."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    with open(sys.argv[1]) as source:
        sys.stdout.write(render(json.load(source)))
