"""Scans in blocks with a checkpoint (loopint.scan) and ``loopint scan --resume``."""

import csv
import json
import os

import numpy as np
import pytest

import loopint
from loopint.cli import main
from loopint.errors import SpecError
from loopint.scan import scan

from physical_points import c0_equal

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRIANGLE = os.path.join(ROOT, "diagrams", "triangle_above_threshold.toml")
S = np.array([1.0, 2.0, 3.0, 5.0, 6.0, 9.0, 15.0])
KIN = {"s": S, "m": 1.0}


class _Stop(Exception):
    pass


def _stop_after(blocks: int):
    seen = []

    def progress(ev):
        if ev["stage"] == "block":
            seen.append(ev["done"])
            if len(seen) == blocks:
                raise _Stop
    return progress


def _within(r, factor=3.0):
    exact = np.array([c0_equal(s, 1.0) for s in S])
    d = r.value - exact
    return (np.all(np.abs(d.real) <= factor * np.abs(r.error.real) + 1e-14)
            and np.all(np.abs(d.imag) <= factor * np.abs(r.error.imag) + 1e-14))


@pytest.fixture(scope="module")
def problem():
    return loopint.load(TRIANGLE)


@pytest.fixture(scope="module")
def full(problem):
    """The scan without interruption, in blocks of 3."""
    return scan(problem, KIN, block=3)


def test_blocks_cover_every_point_in_order(full):
    assert full.converged and _within(full)
    assert [b["points"] for b in full.info["blocks"]] == [[0, 1, 2], [3, 4, 5], [6]]
    assert full.region[:3] == ["euclidean"] * 3 and full.region[3:] == ["physical"] * 4


def test_interrupted_scan_resumes_without_recomputing(problem, full, tmp_path):
    ck = str(tmp_path / "scan.partial")
    with pytest.raises(_Stop):
        scan(problem, KIN, block=3, checkpoint=ck, progress=_stop_after(2))
    with open(ck) as fh:
        assert len(fh.read().splitlines()) == 3          # header and two blocks
    r = scan(problem, KIN, block=3, checkpoint=ck, resume=True)
    assert [b["resumed"] for b in r.info["blocks"]] == [True, True, False]
    np.testing.assert_array_equal(r.value, full.value)   # same blocks, same numbers
    np.testing.assert_array_equal(r.error, full.error)
    assert r.converged and r.info["point_converged"] == full.info["point_converged"]
    assert r.evaluations == full.evaluations


def test_torn_last_line_is_dropped_and_recomputed(problem, full, tmp_path):
    ck = str(tmp_path / "scan.partial")
    with pytest.raises(_Stop):
        scan(problem, KIN, block=3, checkpoint=ck, progress=_stop_after(2))
    with open(ck) as fh:
        lines = fh.read().splitlines()
    with open(ck, "w") as fh:
        fh.write("\n".join(lines[:2]) + "\n" + lines[2][: len(lines[2]) // 2])
    r = scan(problem, KIN, block=3, checkpoint=ck, resume=True)
    assert [b["resumed"] for b in r.info["blocks"]] == [True, False, False]
    np.testing.assert_array_equal(r.value, full.value)


def test_checkpoint_of_another_scan_or_damaged_is_refused(problem, tmp_path):
    ck = str(tmp_path / "scan.partial")
    with pytest.raises(_Stop):
        scan(problem, KIN, block=3, checkpoint=ck, progress=_stop_after(1))
    with pytest.raises(SpecError, match="another scan"):
        scan(problem, KIN, block=3, checkpoint=ck, resume=True, rtol=1e-5)
    with pytest.raises(SpecError, match="another scan"):
        scan(problem, {"s": S * 1.01, "m": 1.0}, block=3, checkpoint=ck, resume=True)
    with open(ck) as fh:
        lines = fh.read().splitlines()
    with open(ck, "w") as fh:
        fh.write(lines[0] + "\n{broken\n" + lines[1] + "\n")
    with pytest.raises(SpecError, match="damaged"):
        scan(problem, KIN, block=3, checkpoint=ck, resume=True)
    with open(ck, "w") as fh:
        fh.write(json.dumps({"something": "else"}) + "\n")
    with pytest.raises(SpecError, match="not a loopint scan checkpoint"):
        scan(problem, KIN, block=3, checkpoint=ck, resume=True)


def test_cli_scan_resume(tmp_path, capsys):
    out = str(tmp_path / "scan.csv")
    args = ["scan", TRIANGLE, "--param", "s=1:15:5", "--block", "2", "--quiet", "--csv", out]
    assert main(args) == 0
    assert not os.path.exists(out + ".partial")            # removed once the outputs exist
    with open(out) as fh:
        first = list(csv.DictReader(fh))
    # a checkpoint left by an interrupted run of the same scan: its block is reused
    p = loopint.load(TRIANGLE)
    s = np.linspace(1, 15, 5)
    with pytest.raises(_Stop):
        scan(p, {"s": s, "m": 1.0}, block=2, checkpoint=out + ".partial",
             progress=_stop_after(1))
    assert main(args + ["--resume"]) == 0
    with open(out) as fh:
        again = list(csv.DictReader(fh))
    assert [r["re"] for r in again] == [r["re"] for r in first]
    capsys.readouterr()


@pytest.mark.parametrize("extra, message", [
    (["--resume"], "--resume needs --csv OUT or --json OUT"),
    (["--block", "0"], "--block 0: must be at least 1"),
])
def test_cli_scan_bad_options(extra, message, capsys):
    assert main(["scan", TRIANGLE, "--param", "s=1:15:3", "--quiet"] + extra) == 2
    assert message in capsys.readouterr().err
