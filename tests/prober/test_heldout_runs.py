"""The held-out draws kept in prober/bench/heldout (prober/bench/heldout.py): recorded on AQM,
policers, jitter, slots and competing flows, paths the default matrix does not have, and
replayed through prober/build/qwreplay. The manifest stores each draw's line at the build
that last judged it, so a change to the estimator that moves a held-out answer cannot land
without the new line (heldout.py --write) in its commit."""

import gzip
import json
import sys

import pytest

from tests.prober import qp

sys.path.insert(0, str(qp.ROOT / "prober" / "bench"))
import heldout  # noqa: E402
import replay_corpus  # noqa: E402

RECORDED = qp.ROOT / "prober" / "tests" / "recorded"


@pytest.fixture(scope="module")
def manifest():
    return json.loads((heldout.HELDOUT / "MANIFEST.json").read_text())


def test_heldout_draws_replay_to_their_stored_lines(manifest):
    assert manifest["draws"], "no held-out draws kept"
    for d in manifest["draws"]:
        runs = replay_corpus.replay([heldout.HELDOUT / d["name"]])
        assert len(runs) == d["runs"], d["name"]
        assert heldout.draw_line(runs) == heldout.stored_line(d), (
            f"{d['name']} moved: judge the change on it (prober/bench/heldout.py), say so in the "
            "commit and store the new lines (heldout.py --write)"
        )


def test_heldout_draws_named_with_the_command_that_recorded_them(manifest):
    on_disk = sorted(p.name for p in heldout.HELDOUT.iterdir() if p.is_dir())
    assert on_disk == sorted(d["name"] for d in manifest["draws"])
    for d in manifest["draws"]:
        assert d["command"].startswith(("replay_corpus.py collect --seed ", "replay_corpus.py compete --seed ")), d
        assert len(d["recorded_at_estimator"]) == 12 and d["kernel"], d


def _draw_of_two(tmp_path):
    """A draw directory as replay_corpus.py collect leaves it: two validate runs (two of the
    recorded runs, unpacked) and a server log that is not a run."""
    draw = tmp_path / "draw"
    draw.mkdir()
    names = ["reno-100M-40ms-netem-jitter5", "bbr-150M-70ms-halfbdp-jitter"]
    for name in names:
        gz = RECORDED / f"{name}.validate.jsonl.gz"
        (draw / f"{name}.validate0.jsonl").write_bytes(gzip.decompress(gz.read_bytes()))
    (draw / "server-r100-40ms.log").write_text("iperf3 -s\n")
    return draw, names


def test_heldout_keep_gzips_the_runs_and_stores_the_draws_line(tmp_path, capsys):
    draw, names = _draw_of_two(tmp_path)
    root = tmp_path / "heldout"
    command = "replay_corpus.py collect --seed 9 --paths 1 --mtu 1500"
    assert heldout.main(["--root", str(root), "keep", str(draw), "--name", "s9-test", "--command", command]) == 0
    kept = sorted(p.name for p in (root / "s9-test").iterdir())
    assert kept == sorted(f"{n}.validate0.jsonl.gz" for n in names)
    for n in names:
        unpacked = gzip.decompress((root / "s9-test" / f"{n}.validate0.jsonl.gz").read_bytes())
        assert unpacked == (draw / f"{n}.validate0.jsonl").read_bytes()
    [entry] = json.loads((root / "MANIFEST.json").read_text())["draws"]
    runs = replay_corpus.replay([draw])
    assert entry["name"] == "s9-test" and entry["command"] == command and entry["runs"] == 2
    assert entry["totals"] == replay_corpus.draw_totals(runs)
    assert entry["by_cc"] == heldout.by_cc(runs) == f"bbr {runs[0]['covered']}/1, reno {runs[1]['covered']}/1"
    capsys.readouterr()
    assert heldout.main(["--root", str(root)]) == 0
    out = capsys.readouterr().out
    assert "1 draws, 0 moved since stored" in out and "stored:" not in out


def test_heldout_show_names_a_draw_that_moved_and_write_stores_it(tmp_path, capsys):
    draw, _ = _draw_of_two(tmp_path)
    root = tmp_path / "heldout"
    heldout.main(["--root", str(root), "keep", str(draw), "--name", "s9", "--command", "c"])
    manifest = json.loads((root / "MANIFEST.json").read_text())
    truth = manifest["draws"][0]["totals"]
    manifest["draws"][0]["totals"] = "an older build's line"
    (root / "MANIFEST.json").write_text(json.dumps(manifest))
    capsys.readouterr()
    heldout.main(["--root", str(root)])
    out = capsys.readouterr().out
    assert "1 draws, 1 moved since stored" in out and "stored: an older build's line" in out
    heldout.main(["--root", str(root), "--write"])
    assert json.loads((root / "MANIFEST.json").read_text())["draws"][0]["totals"] == truth


@pytest.mark.parametrize(
    "args, message",
    [
        (["--name", "S 9"], "use 1-64 lower-case letters, digits and dashes"),
        (["--name", "s9"], "a draw named 's9' is kept already"),
    ],
)
def test_heldout_keep_refuses_a_bad_or_taken_name_and_keeps_what_is_stored(tmp_path, args, message):
    draw, _ = _draw_of_two(tmp_path)
    root = tmp_path / "heldout"
    heldout.main(["--root", str(root), "keep", str(draw), "--name", "s9", "--command", "c"])
    before = (root / "MANIFEST.json").read_bytes()
    with pytest.raises(SystemExit, match=message):
        heldout.main(["--root", str(root), "keep", str(draw), *args, "--command", "c"])
    assert (root / "MANIFEST.json").read_bytes() == before


def test_heldout_keep_refuses_a_directory_without_runs(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SystemExit, match=r"no \*\.validate\*\.jsonl in .*empty"):
        heldout.main(["--root", str(tmp_path / "heldout"), "keep", str(empty), "--name", "s1", "--command", "c"])
    assert not (tmp_path / "heldout").exists()


def test_heldout_keep_refuses_a_draw_with_an_unfinished_run(tmp_path):
    draw, names = _draw_of_two(tmp_path)
    # a recording cut short: the run's samples but no result event
    (draw / "cut.validate0.jsonl").write_bytes((draw / f"{names[0]}.validate0.jsonl").read_bytes().splitlines()[0])
    root = tmp_path / "heldout"
    with pytest.raises(SystemExit, match=r"cut\.validate0\.jsonl in .*draw: not a finished validate run"):
        heldout.main(["--root", str(root), "keep", str(draw), "--name", "s9", "--command", "c"])
    assert not root.exists()
