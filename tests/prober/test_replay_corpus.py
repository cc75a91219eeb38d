"""replay_corpus.py: compete's paths (the fixed five, or a seeded draw that a later session can
record again exactly: the held-out competing-flow corpora in report-corpus.md name their
seeds), and compare, which judges an estimator change by replaying runs before and after."""

import random
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "prober" / "bench"))
import replay_corpus  # noqa: E402


def test_compete_paths_without_seed_are_the_fixed_five():
    assert replay_corpus.compete_paths(None, 6) == replay_corpus.COMPETE_PATHS
    assert len(replay_corpus.COMPETE_PATHS) == 5


def test_compete_paths_with_seed_repeat_exactly():
    assert replay_corpus.compete_paths(741, 3) == [
        (50, 90, 0.5, 1500, "cubic", "cubic"),
        (100, 8, 0.5, 1500, "cubic", "bbr"),
        (100, 130, 0.5, 1500, "cubic", "cubic"),
    ]
    assert replay_corpus.compete_paths(741, 6)[:3] == replay_corpus.compete_paths(741, 3)


def test_compete_paths_with_cc_forced_keep_the_seeds_paths():
    assert replay_corpus.compete_paths(741, 3, cc="bbr", other="cubic") == [
        (50, 90, 0.5, 1500, "bbr", "cubic"),
        (100, 8, 0.5, 1500, "bbr", "cubic"),
        (100, 130, 0.5, 1500, "bbr", "cubic"),
    ]
    assert [p[4:] for p in replay_corpus.compete_paths(None, 6, other="reno")] == [
        (cc, "reno") for *_, cc, _ in replay_corpus.COMPETE_PATHS
    ]


def test_compete_draw_stays_where_the_delay_line_carries_1500_byte_frames():
    rng = random.Random(1)
    for _ in range(500):
        rate, rtt, queue, mtu, cc, other = replay_corpus.draw_compete(rng)
        assert mtu == 1500
        assert rate in (20, 50, 100, 150)
        assert rtt in (8, 15, 30, 60, 90, 130)
        assert queue in (0.5, 1.0, 1.5, 2.5)
        assert cc in ("reno", "cubic", "bbr") and other in ("reno", "cubic", "bbr")


def test_compete_row_under_aqm_has_a_4_bdp_buffer():
    row = replay_corpus.compete_row(50, 90, 1.0, 1500, "cubic", "codel")
    assert (row.id, row.path.queue_bytes, row.path.aqm, row.streams) == (
        "r50-90ms-q4-m1500-codel-cubic-P1",
        2250000,
        "codel",
        1,
    )


def test_compete_row_through_a_policer_has_a_bucket_and_two_packets_of_queue():
    row = replay_corpus.compete_row(50, 90, 1.0, 1500, "bbr", policer=True)
    p = row.path
    assert (row.id, p.bottleneck, p.queue_bytes, p.burst_ms) == (
        "r50-90ms-m1500-ktbf-police10ms-bbr-P1",
        "tbf",
        3000,
        10.0,
    )


def test_compete_draws_through_a_policer_and_htb_are_the_recorded_ones():
    # the held-out draws of report-corpus.md, "Competing flows held out at 01b3f47"
    police = [replay_corpus.compete_row(*p[:5], policer=True) for p in replay_corpus.compete_paths(757, 2)]
    htb = [replay_corpus.compete_row(*p[:5], bottleneck="htb") for p in replay_corpus.compete_paths(759, 2)]
    assert [r.id for r in police + htb] == [
        "r150-90ms-m1500-ktbf-police10ms-cubic-P1",
        "r150-30ms-m1500-ktbf-police10ms-cubic-P1",
        "r20-90ms-q0.5-m1500-khtb-bbr-P1",
        "r150-8ms-q2.5-m1500-khtb-bbr-P1",
    ]


def test_compete_row_through_htb_keeps_the_drawn_buffer():
    row = replay_corpus.compete_row(50, 90, 1.0, 1500, "cubic", bottleneck="htb")
    assert (row.id, row.path.bottleneck, row.path.queue_bytes) == ("r50-90ms-q1-m1500-khtb-cubic-P1", "htb", 562500)


def test_compete_with_aqm_through_a_kernel_bottleneck_is_refused(capsys):
    with pytest.raises(SystemExit) as e:
        replay_corpus.main(["compete", "--aqm", "codel", "--policer"])
    assert e.value.code == 2
    assert "--aqm codel runs at the delay line's bottleneck only" in capsys.readouterr().err


def test_compete_row_without_aqm_keeps_the_drawn_buffer():
    row = replay_corpus.compete_row(50, 90, 1.0, 1500, "cubic")
    assert (row.id, row.path.queue_bytes, row.path.aqm) == ("r50-90ms-q1-m1500-cubic-P1", 562500, "none")


RECORDED = ROOT / "prober" / "tests" / "recorded"


def test_compare_a_build_with_itself_moves_nothing(capsys):
    covered = sum(r["covered"] == "1" for r in replay_corpus.replay([RECORDED]))
    replay_corpus.main(["compare", "--before", str(replay_corpus.REPLAY), "-v", str(RECORDED)])
    out = capsys.readouterr().out.splitlines()
    assert out == [
        f"runs 21: 0 moved; covered {covered} -> {covered} (gained 0, lost 0)",
        "-v output byte-identical on 21 of 21",
    ]


def test_compare_two_deadlines_names_the_runs_that_moved(capsys):
    # a 3 s deadline against the default 4 s: the runs that answered at their deadline close
    # sooner; compare names exactly the runs whose columns differ, and its totals are the two
    # replays' own
    early = {r["run"]: r for r in replay_corpus.replay([RECORDED], ["-M", "3000"])}
    now = {r["run"]: r for r in replay_corpus.replay([RECORDED])}
    moved = sorted(run for run in now if any(early[run][k] != now[run][k] for k in replay_corpus.COMPARED))
    argv = ["compare", "--before", str(replay_corpus.REPLAY), "--before-args", "-M 3000", str(RECORDED)]
    replay_corpus.main(argv)
    out = capsys.readouterr().out.splitlines()
    lines = dict(line.split(": ", 1) for line in out[:-1])
    assert len(moved) >= 10
    assert sorted(lines) == [f"{RECORDED}/{run}" for run in moved]
    for run in moved:
        closed = f"close_t {early[run]['close_t']} -> {now[run]['close_t']}"
        assert (closed in lines[f"{RECORDED}/{run}"]) == (early[run]["close_t"] != now[run]["close_t"])
    cov = [sum(r["covered"] == "1" for r in runs.values()) for runs in (early, now)]
    assert out[-1].startswith(f"runs 21: {len(moved)} moved; covered {cov[0]} -> {cov[1]} ")


def test_arriving_competitor_starts_inside_the_run_and_outlasts_it():
    argv = replay_corpus.arriving_competitor("10.99.0.2", "cubic", 2.0)
    assert argv == ["sh", "-c", "sleep 2; exec iperf3 -c 10.99.0.2 -p 5302 -t 23 -C cubic"]


def test_compete_arrive_outside_the_run_refused_with_what_is_allowed(capsys):
    for bad in ("0.2", "16", "soon"):
        with pytest.raises(SystemExit):
            replay_corpus.main(["compete", "--seed", "851", "--arrive", bad])
        err = capsys.readouterr().err
        assert f"--arrive: '{bad}': give the seconds into each run, 0.5 to 15, e.g. 2" in err


def test_collect_rtt_outside_what_the_lab_draws_refused_with_what_is_allowed(capsys):
    for bad in ("0.5", "1200", "250,far", ""):
        with pytest.raises(SystemExit):
            replay_corpus.main(["collect", "--seed", "855", "--rtt", bad])
        err = capsys.readouterr().err
        assert f"--rtt: '{bad}': give round trips in ms from 1 to 1000, comma-separated, e.g. 220,250,300" in err
