"""Atomic output files (loopint/files.py): content, no temporary left behind, and the mode a
plain ``open(path, "w")`` would give (``0o666 & ~umask``), not mkstemp's 0600."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from loopint.cli import main
from loopint.io import write_json_atomic
from loopint.files import default_mode, write_atomic, write_text_atomic

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def umask():
    """Set a umask for the test, restore the old one afterwards."""
    old = os.umask(0o022)
    yield lambda m: os.umask(m)
    os.umask(old)


def mode(p) -> int:
    return stat.S_IMODE(os.stat(p).st_mode)


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o077])
def test_atomic_writers_honour_the_umask(tmp_path, umask, mask):
    umask(mask)
    assert default_mode() == 0o666 & ~mask and os.umask(mask) == mask   # umask left as it was
    write_text_atomic(str(tmp_path / "a.csv"), "x,y\n1,2\n")
    write_json_atomic(str(tmp_path / "a.json"), {"value": 1j})
    for f in ("a.csv", "a.json"):
        assert mode(tmp_path / f) == 0o666 & ~mask, f
    assert (tmp_path / "a.json").read_text().replace(" ", "").replace("\n", "") == '{"value":[0.0,1.0]}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv", "a.json"]


def test_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "r.json"
    target.write_text("old")

    def boom(tmp):
        Path(tmp).write_text("half")
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError):
        write_atomic(str(target), boom)
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_cli_outputs_are_readable_by_the_group(tmp_path, umask, capsys):
    """JSON, CSV and PNG of a real scan get 0644 under umask 022 (mkstemp alone gives 0600)."""
    umask(0o022)
    out = {k: tmp_path / f"scan.{k}" for k in ("json", "csv", "png")}
    rc = main(["scan", str(ROOT / "diagrams" / "triangle_below_threshold.toml"), "--param",
               "s=-2:2:5", "--rtol", "1e-3", "--quiet", "--json", str(out["json"]),
               "--csv", str(out["csv"]), "--plot", str(out["png"])])
    assert rc == 0, capsys.readouterr().err
    for k, p in out.items():
        assert mode(p) == 0o644, k
    assert out["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
