"""replay_corpus.py compete's paths: the fixed five, or a seeded draw that a later session can
record again exactly (the held-out competing-flow corpora in report-corpus.md name their
seeds)."""

import random
import sys
from pathlib import Path

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


def test_compete_row_without_aqm_keeps_the_drawn_buffer():
    row = replay_corpus.compete_row(50, 90, 1.0, 1500, "cubic")
    assert (row.id, row.path.queue_bytes, row.path.aqm) == ("r50-90ms-q1-m1500-cubic-P1", 562500, "none")
