"""The runs the last `make bench-quick` kept (prober/bench/runs, gzipped) replay through
prober/build/qwreplay: an estimator change is judged on them before and after without sending
a byte, and while the estimator is the one that recorded them, replay gives exactly the
answer each run gave."""

import dataclasses
import gzip
import json
import random
import sys

import pytest

from tests.prober import qp

sys.path.insert(0, str(qp.ROOT / "prober" / "bench"))
import bench_quick  # noqa: E402
import replay_corpus  # noqa: E402

KEPT = qp.ROOT / "prober" / "bench" / bench_quick.KEPT


def _recorded_validate(name):
    """The validate object of a kept run's result event."""
    text = gzip.decompress((KEPT / f"{name}.gz").read_bytes()).decode()
    result = [json.loads(line) for line in text.splitlines() if '"event":"result"' in line.replace(" ", "")]
    return result[-1]["validate"]


@pytest.fixture(scope="module")
def replayed():
    assert (KEPT / "MANIFEST.json").exists(), "make bench-quick keeps its runs in prober/bench/runs"
    return replay_corpus.replay([KEPT])


def test_kept_runs_cover_the_default_matrix(replayed):
    manifest = json.loads((KEPT / "MANIFEST.json").read_text())
    rows = {r.id for r in bench_quick.default_matrix()}
    kept_rows = {r["run"].split(".validate")[0] for r in replayed}
    assert kept_rows == rows
    assert len(replayed) == 3 * len(rows)
    assert manifest["runs"] == 6 * len(rows)  # validate and separate quick runs


def test_kept_runs_replay_to_an_answer_inside_its_interval(replayed):
    for r in replayed:
        lo, pred, hi = float(r["lo_mbps"]), float(r["pred_mbps"]), float(r["hi_mbps"])
        assert r["answered"] == "1", r
        assert 0 < lo <= pred <= hi, r
        assert r["bound_by"] in qp.quick_bounds(), r


def test_kept_runs_replay_exactly_while_the_estimator_is_unchanged(replayed):
    # "estimator" is the fingerprint of the sources that recorded the runs; a later edit of
    # those sources that changed none of these runs' answers (a refactor, a comment, a rule
    # for what these runs never show) is listed in "replays_identically" by whoever made it,
    # and this test holds it to that, run by run.
    manifest = json.loads((KEPT / "MANIFEST.json").read_text())
    same = {manifest["estimator"], *manifest.get("replays_identically", [])}
    if bench_quick.estimator_fingerprint() not in same:
        pytest.skip(
            "the estimator changed since the kept runs were recorded: judge the change by replaying them "
            "before and after (prober/bench/replay_corpus.py summarise prober/bench/runs), then re-run make bench-quick"
        )
    for r in replayed:
        v = _recorded_validate(r["run"])
        assert float(r["pred_mbps"]) == pytest.approx(v["quick_bps"] / 1e6, abs=0.0005), r
        assert float(r["lo_mbps"]) == pytest.approx(v["quick_lo_bps"] / 1e6, abs=0.0005), r
        assert float(r["hi_mbps"]) == pytest.approx(v["quick_hi_bps"] / 1e6, abs=0.0005), r
        assert r["converged"] == ("1" if v["quick_converged"] else "0"), r
        assert r["bound_by"] == v["quick_bound_by"], r


def test_kept_runs_redetect_slow_start_exactly_while_the_detector_is_unchanged(replayed):
    # qwreplay -S ends slow-start with this build's detector on the recorded samples instead
    # of at the recorded event; with the detector that recorded the runs, every run's replay
    # must come out the same to the last column, or -S does not feed the detector as the
    # prober does, and a detector change judged by it would be judged on something else.
    manifest = json.loads((KEPT / "MANIFEST.json").read_text())
    if bench_quick.detector_fingerprint() != manifest["detector"]:
        pytest.skip(
            "the slow-start detector changed since the kept runs were recorded: judge the change with "
            "prober/bench/replay_corpus.py summarise --replay-args=-S prober/bench/runs against the same "
            "without it, then re-run make bench-quick"
        )
    redetected = replay_corpus.replay([KEPT], ["-S"])
    assert [r["run"] for r in redetected] == [r["run"] for r in replayed]
    for before, after in zip(replayed, redetected):
        assert after == before


def test_qwreplay_redetect_ignores_the_recorded_slow_start_end(tmp_path, replayed):
    # A kept run whose slow_start_end event is moved 1 s later (as an earlier detector might
    # have put it): replayed as recorded the window opens there; with -S where this build's
    # detector ends slow-start on the same samples, which is where the run's own event was.
    name = "r200-20ms-q2-bbr-P1.validate0.jsonl"
    lines = gzip.decompress((KEPT / f"{name}.gz").read_bytes()).decode().splitlines()
    i = next(k for k, line in enumerate(lines) if json.loads(line)["event"] == "slow_start_end")
    event = json.loads(lines.pop(i))
    later = next(k for k in range(i, len(lines)) if json.loads(lines[k]).get("t", 0) >= event["t"] + 1)
    moved = {**event, "t": json.loads(lines[later])["t"]}
    lines.insert(later + 1, json.dumps(moved))
    (tmp_path / name).write_text("\n".join(lines) + "\n")
    [as_recorded] = replay_corpus.replay([tmp_path])
    [redetected] = replay_corpus.replay([tmp_path], ["-S"])
    assert float(as_recorded["ss_t"]) == pytest.approx(moved["t"], abs=0.0005)
    if bench_quick.detector_fingerprint() == json.loads((KEPT / "MANIFEST.json").read_text())["detector"]:
        assert redetected == next(r for r in replayed if r["run"] == name)
    assert float(redetected["ss_t"]) < float(as_recorded["ss_t"]) - 0.9


def _run(truth, fig, lo, hi):
    return {"truth_mbps": str(truth), "figure_mbps": str(fig), "lo_mbps": str(lo), "hi_mbps": str(hi)}


def test_miss_score_measures_the_miss_in_units_of_its_side():
    assert replay_corpus.miss_score(_run(100, 100, 90, 110)) == 0
    assert replay_corpus.miss_score(_run(105, 100, 90, 110)) == pytest.approx(0.5)
    assert replay_corpus.miss_score(_run(110, 100, 90, 110)) == pytest.approx(1.0)
    # below the answer the lower side is the unit: 20 below a side that reached 5 is 4
    assert replay_corpus.miss_score(_run(80, 100, 95, 130)) == pytest.approx(4.0)
    # a side of zero width misses anything on it
    assert replay_corpus.miss_score(_run(101, 100, 90, 100)) == float("inf")


def test_conformal_quantile_is_the_finite_sample_rank():
    scores = [i / 10 for i in range(1, 20)]  # 19 scores: ceil(0.95 x 20) = 19th, the largest
    assert replay_corpus.conformal_quantile(scores) == pytest.approx(1.9)
    assert replay_corpus.conformal_quantile(scores[:18]) == float("inf")  # too few for 95 %
    assert replay_corpus.conformal_quantile(scores, 0.5) == pytest.approx(1.0)  # ceil(10): 10th


def test_calibrate_scores_the_kept_runs_by_class(capsys):
    assert replay_corpus.main(["calibrate", "--fit", str(KEPT), "--check", str(KEPT)]) == 0
    out = capsys.readouterr().out
    replayed = replay_corpus.replay([KEPT])
    n = sum(r["bound_by"] == "statistics" for r in replayed)
    missed = sum(r["bound_by"] == "statistics" and r["covered"] != "1" for r in replayed)
    line = next(x for x in out.splitlines() if x.startswith("statistics "))
    assert line.split()[1:3] == [str(n), str(missed)]


def _draw(seed, n, **kw):
    rng = random.Random(seed)
    return [replay_corpus.draw_row(rng, 1500, "delayline", "codel", False, "fifo", **kw) for _ in range(n)]


def test_draw_row_with_cc_and_streams_draws_the_recorded_rows():
    asked = _draw(201, 6, cc_only="bbr", streams_from=(2, 4, 8))
    assert _draw(201, 1)[0].path == asked[0].path  # the first path is drawn before any streams
    # the held-out draw of report-corpus.md, "Several BBR streams through CoDel and a policer"
    assert [r.id for r in asked] == [
        "r5-130ms-q4-l5e-05-m1500-codel-bbr-P8",
        "r50-60ms-q4-l0.0003-jn3-m1500-codel-bbr-P4",
        "r5-90ms-q4-m1500-codel-bbr-P2",
        "r150-30ms-q4-l0.002-ju1-x0.4-m1500-codel-bbr-P2",
        "r100-90ms-q4-l0.0003-m1500-codel-bbr-P4",
        "r150-30ms-q4-l5e-05-m1500-codel-bbr-P8",
    ]


def test_draw_row_with_slots_draws_the_recorded_slot_paths():
    rng = random.Random(401)
    rows = [replay_corpus.draw_row(rng, 1500, slot_ms=(1.0, 6.0)) for _ in range(2)]
    # the held-out draw of report-corpus.md, "Wi-Fi-like slots"
    assert [r.id for r in rows] == [
        "r100-8ms-q1.5-jn3-m1500-slot1-6-cubic-P2",
        "r20-30ms-q1.5-x0.4-m1500-slot1-6-reno-P2",
    ]
    assert (rows[0].path.slot_min_ms, rows[0].path.slot_max_ms, rows[0].path.slot_packets) == (1.0, 6.0, 0)
    assert replay_corpus.draw_row(random.Random(401), 1500).path.slot_max_ms == 0


def test_draw_row_with_loss_draws_the_recorded_lossy_paths():
    rng = random.Random(621)
    rates = (3e-4, 1e-3, 2e-3, 5e-3)
    rows = [replay_corpus.draw_row(rng, 1500, "htb", loss_from=rates) for _ in range(3)]
    # the held-out lossy draw of report-corpus.md, "cwnd's spread under random loss"
    assert [r.id for r in rows] == [
        "r50-90ms-q2.5-l0.002-m1500-khtb-cubic-P8",
        "r20-130ms-q1.5-l0.0003-m1500-khtb-cubic-P2",
        "r150-15ms-q0.6-l0.001-jn3-m1500-khtb-cubic-P2",
    ]
    assert rows[0].path.loss == 2e-3
    # the loss is drawn after everything else: the first path is the draw's, loss apart
    plain = replay_corpus.draw_row(random.Random(621), 1500, "htb")
    lossy = rows[0].path
    assert plain.path.loss == 3e-4
    assert dataclasses.replace(plain.path, loss=2e-3, name=lossy.name, description=lossy.description) == lossy


def test_draw_row_with_rtts_draws_the_recorded_long_paths():
    rng = random.Random(855)
    rows = [replay_corpus.draw_row(rng, 1500, rtt_from=(220.0, 250.0, 300.0)) for _ in range(3)]
    # the held-out draw of long round trips (prober/bench/heldout/s855-long-rtt)
    assert [r.id for r in rows] == [
        "r20-300ms-q1-jn3-m1500-reno-P2",
        "r150-300ms-q1.5-m1500-bbr-P1",
        "r150-220ms-q0.6-m1500-cubic-P1",
    ]
    # the round trip is drawn after everything else: the first path is the draw's, its RTT apart
    plain = replay_corpus.draw_row(random.Random(855), 1500)
    long = rows[0]
    assert (plain.path.rtt_ms, long.path.rtt_ms, long.path.queue_bytes) == (180, 300.0, 750000)
    assert (
        dataclasses.replace(
            plain.path,
            rtt_ms=300.0,
            queue_bytes=long.path.queue_bytes,
            name=long.path.name,
            description=long.path.description,
        )
        == long.path
    )


def test_draw_row_with_pie_draws_the_recorded_pie_paths():
    rng = random.Random(627)
    rows = [replay_corpus.draw_row(rng, 1500, "delayline", "pie", False, "fifo", cc_only="cubic") for _ in range(3)]
    # the held-out draw of report-corpus.md, "PIE held out": a 4-BDP buffer whatever was drawn
    assert [r.id for r in rows] == [
        "r50-130ms-q4-m1500-pie-cubic-P1",
        "r5-60ms-q4-jn3-x0.2-m1500-pie-cubic-P1",
        "r20-180ms-q4-m1500-pie-cubic-P2",
    ]
    assert rows[0].path.aqm == "pie" and rows[0].path.bottleneck == "delayline"
    assert replay_corpus.draw_row(random.Random(627), 1500).path.aqm == "none"


def test_draw_row_with_ack_ratio_draws_the_recorded_asymmetric_paths():
    rng = random.Random(641)
    rows = [replay_corpus.draw_row(rng, 1500, ack_ratio=50) for _ in range(5)]
    # the held-out draw of report-corpus.md, "Asymmetric paths held out": the ACK direction
    # at the rate / 50 with 100 ms of buffer at that rate, at least three frames
    assert [r.id for r in rows] == [
        "r100-8ms-q2.5-ju1-m1500-ack2-bbr-P1",
        "r100-180ms-q0.3-l5e-05-ju1-x0.4-m1500-ack2-cubic-P4",
        "r150-130ms-q0.6-l5e-05-ju1-x0.2-m1500-ack3-bbr-P1",
        "r50-60ms-q0.3-x0.4-m1500-ack1-bbr-P1",
        "r5-8ms-q2.5-l5e-05-m1500-ack0.1-bbr-P1",
    ]
    assert [(r.path.ack_rate_mbps, r.path.ack_queue_bytes) for r in rows[2:5]] == [
        (3.0, 37_500),
        (1.0, 12_500),
        (0.1, 4_500),
    ]
    # no draw is added: the same seed draws the same paths, symmetric
    plain = replay_corpus.draw_row(random.Random(641), 1500)
    assert (plain.id, plain.path.ack_rate_mbps) == ("r100-8ms-q2.5-ju1-m1500-bbr-P1", 0.0)


def test_draw_row_with_ack_cross_draws_the_recorded_upload_paths():
    rng = random.Random(645)
    rows = [replay_corpus.draw_row(rng, 1500, ack_ratio=10, ack_cross=(0.9, 2000, 3000)) for _ in range(2)]
    # the held-out draw of report-corpus.md, "Asymmetric paths held out": the site's upload
    # takes 90 % of a tenth of the rate, 2 s on / 3 s off
    assert [r.id for r in rows] == [
        "r20-90ms-q0.6-l5e-05-m1500-ack2-ackx0.9-reno-P4",
        "r20-180ms-q1-m1500-ack2-ackx0.9-bbr-P2",
    ]
    p = rows[0].path
    assert (p.ack_rate_mbps, p.ack_cross_mbps, p.ack_cross_on_ms, p.ack_cross_off_ms) == (2.0, 1.8, 2000, 3000)


@pytest.mark.parametrize("text", ["", "0.5", "1,2000,3000", "0.5,0,10", "0.5,a,1"])
def test_collect_ack_cross_option_rejects_bad_settings(text, capsys):
    with pytest.raises(SystemExit):
        replay_corpus.main(["collect", "--ack-cross", text])
    assert "give the ACK direction's cross traffic as SHARE,ON_MS,OFF_MS" in capsys.readouterr().err


@pytest.mark.parametrize("text", ["", "x", "0.5", "1001"])
def test_collect_ack_ratio_option_rejects_bad_ratios(text, capsys):
    with pytest.raises(SystemExit):
        replay_corpus.main(["collect", "--ack-ratio", text])
    assert "give the rate over the ACK direction's as a number from 1 to 1000" in capsys.readouterr().err


@pytest.mark.parametrize("text", ["", "x", "-0.1", "0.2", "1e-3,,2e-3"])
def test_collect_loss_option_rejects_bad_rates(text, capsys):
    with pytest.raises(SystemExit):
        replay_corpus.main(["collect", "--loss", text])
    assert "give loss probabilities per packet from 0 to 0.1, comma-separated" in capsys.readouterr().err


@pytest.mark.parametrize("text", ["", "4", "6,1", "0,0", "1,2000", "a,b"])
def test_collect_slot_option_rejects_bad_gaps(text, capsys):
    with pytest.raises(SystemExit):
        replay_corpus.main(["collect", "--slot", text])
    assert "give the slot gap as MIN,MAX in ms, 0 <= MIN <= MAX <= 1000" in capsys.readouterr().err


@pytest.mark.parametrize("text", ["", "2,x", "0", "2,129"])
def test_collect_streams_option_rejects_bad_counts(text, capsys):
    with pytest.raises(SystemExit):
        replay_corpus.main(["collect", "--streams", text])
    assert "give stream counts from 1 to 128, comma-separated" in capsys.readouterr().err


def test_keep_runs_gzips_the_runs_and_fingerprints_estimator_and_detector(tmp_path):
    runs, kept = tmp_path / "runs", tmp_path / "kept"
    runs.mkdir()
    (runs / "a.validate0.jsonl").write_text('{"event":"start"}\n')
    kept.mkdir()
    (kept / "old.validate0.jsonl.gz").write_bytes(b"stale")
    assert bench_quick.keep_runs(runs, kept, {"command": "make bench-quick"}) == 1
    assert sorted(p.name for p in kept.iterdir()) == ["MANIFEST.json", "a.validate0.jsonl.gz"]
    assert gzip.decompress((kept / "a.validate0.jsonl.gz").read_bytes()) == b'{"event":"start"}\n'
    assert json.loads((kept / "MANIFEST.json").read_text()) == {
        "command": "make bench-quick",
        "estimator": bench_quick.estimator_fingerprint(),
        "detector": bench_quick.detector_fingerprint(),
        "runs": 1,
    }
