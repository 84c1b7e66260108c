"""The command line as a user drives it: subprocesses, exit codes, JSON fields, PNG, scan."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
DIAGRAMS = ROOT / "diagrams"
JSON_FIELDS = {"value", "error", "converged", "status", "prefactor", "method", "delta",
               "evaluations", "seconds", "device", "diagram", "kinematics", "settings", "version"}


def run(*args, cwd=None):
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    return subprocess.run([sys.executable, "-m", "loopint.cli", *map(str, args)], cwd=cwd or ROOT,
                          capture_output=True, text=True, env=env, timeout=600)


def test_compute_json_and_plot(tmp_path):
    out, png = tmp_path / "r.json", tmp_path / "r.png"
    p = run("compute", DIAGRAMS / "triangle_below_threshold.toml", "--rtol", "1e-8",
            "--json", out, "--plot", png)
    assert p.returncode == 0, p.stderr
    assert "converged" in p.stdout
    d = json.loads(out.read_text())
    assert JSON_FIELDS <= set(d)
    assert d["converged"] is True and d["status"] == "converged"
    ref = -0.548311355616075478824
    assert abs(d["value"][0] - ref) <= 1e-8 * abs(ref) and d["value"][1] == 0
    assert d["settings"]["rtol"] == 1e-8 and d["prefactor"] == "pysecdec"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    import matplotlib.image
    assert matplotlib.image.imread(str(png)).ndim == 3


def test_compute_not_converged_exit_1(tmp_path):
    out = tmp_path / "r.json"
    p = run("compute", DIAGRAMS / "triangle_above_threshold.toml", "--max-evals", "100",
            "--json", out)
    assert p.returncode == 1, p.stderr
    d = json.loads(out.read_text())
    assert d["converged"] is False and d["status"] != "converged"


def test_bad_input_exit_2_nothing_written(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[diagram]\nU = "x1+x2"\nF = "q*x1*x2"\nvariables = ["x1", "x2"]\nloops = 1\n')
    out = tmp_path / "r.json"
    p = run("compute", bad, "--json", out)
    assert p.returncode == 2
    assert str(bad) in p.stderr and "diagram.F" in p.stderr and "'q'" in p.stderr
    assert not out.exists()


def test_usage_error_exit_2():
    assert run("compute").returncode == 2
    assert run("scan", DIAGRAMS / "triangle_below_threshold.toml", "--param", "zz=1:2:3").returncode == 2


def test_help_has_examples():
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    argv = [["--help"]] + [[sub, "--help"] for sub in ("compute", "scan", "bench", "show")]
    procs = [subprocess.Popen([sys.executable, "-m", "loopint.cli", *a], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for a in argv]      # started together: each is interpreter start-up bound
    for a, p in zip(argv, procs):
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0 and "example" in out, (a, err)


def test_scan_equals_single_runs(tmp_path):
    """A 50-point scan (one batched computation) gives the values of 50 single runs."""
    import loopint
    out = tmp_path / "scan.csv"
    f = DIAGRAMS / "triangle_below_threshold.toml"
    p = run("scan", f, "--param", "s=-5:3.5:50", "--rtol", "1e-9", "--csv", out)
    assert p.returncode == 0, p.stderr
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 50
    prob = loopint.load(f)
    for row in rows:
        single = loopint.compute(prob, kinematics={"s": float(row["s"]), "m": 1.0}, rtol=1e-9)
        assert abs(float(row["re"]) - single.value.real) <= 1e-9 * abs(single.value)
        assert row["converged"] == "True" and row["status"] == "converged"


def test_bench_quick_subset(tmp_path):
    out = tmp_path / "bench.json"
    env_quick = run("bench", "--suite", "seeds", "--quick", "--only", "C0", "--json", out)
    assert env_quick.returncode == 0, env_quick.stderr
    d = json.loads(out.read_text())
    assert d["rows"], "bench produced no rows"
    for r in d["rows"]:
        assert {"case", "method", "value", "error", "true_error", "evaluations", "seconds",
                "compile_seconds", "evals_per_s", "device"} <= set(r)
        assert r["true_error"] <= 1e-4 * 0.71      # quick run at rtol 1e-4; |C0| = 0.706


def test_bench_suite_dispatch(monkeypatch, capsys):
    """A module that serves two suites is asked for one part (``rows_for``); the others run
    whole and their rows are split by case name; a module's failure becomes a row."""
    import sys
    import types

    import loopint.bench as bench
    calls = []

    def split_run(quick=False, rows_for="all"):
        calls.append(("split", rows_for))
        return [{"case": "f1_8d" if rows_for == "generic" else "table51", "method": "m"}]

    def whole_run(quick=False):
        calls.append(("whole", None))
        return [{"case": "f3_3d", "method": "m"}, {"case": "pentagon step", "method": "m"}]

    def broken_run(quick=False):
        raise RuntimeError("boom")

    for name, fn in (("split", split_run), ("whole", whole_run), ("broken", broken_run)):
        monkeypatch.setitem(sys.modules, f"fake_{name}", types.SimpleNamespace(run=fn))
    monkeypatch.setitem(bench.SUITES, "t", [("fake_split", "seeds"), ("fake_split", "generic"),
                                            ("fake_whole", "generic"), ("fake_broken", "all")])
    assert bench.run_suite("t", quick=True) == 0
    assert calls == [("split", "seeds"), ("split", "generic"), ("whole", None)]
    out = capsys.readouterr().out
    assert "table51" in out and "f1_8d" in out and "f3_3d" in out
    assert "pentagon step" not in out                   # not a generic row
    assert "failed: RuntimeError: boom" in out
