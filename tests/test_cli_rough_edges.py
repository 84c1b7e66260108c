"""The command line's rough edges of issue 31: resume, output paths, the summary, JSON field
types, zero denominators at a kinematic point, progress on stderr, references.

Most cases call ``loopint.cli.main`` in-process (the compiled kernels are shared, so the small
triangle runs take a second or two each); the progress display runs as real subprocesses with
stderr piped, as a batch job sees it.  All runs use the one-loop triangle at loose tolerances.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from loopint.cli import _Progress, main

ROOT = Path(__file__).resolve().parents[1]
DIAGRAMS = ROOT / "diagrams"
BELOW = DIAGRAMS / "triangle_below_threshold.toml"
ABOVE = DIAGRAMS / "triangle_above_threshold.toml"
K5 = DIAGRAMS / "ladder_vertex_2L_k5.toml"

TRIANGLE = '''
[diagram]
name = "tri"
internal_lines = [["m", [1, 2]], ["m", [2, 3]], ["m", [3, 1]]]
external_lines = [["p1", 1], ["p2", 2], ["p3", 3]]
[diagram.scalar_products]
"p1*p1" = "0"
"p2*p2" = "0"
"p1*p2" = "s/2"
[kinematics]
s = 10.0
m = 1.0
'''


def run_main(capsys, *argv):
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as e:
        rc = e.code
    out, err = capsys.readouterr()
    return rc, out, err


def one_line_error(err: str) -> bool:
    return err.startswith("loopint: error: ") and err.count("\n") == 1 and "Traceback" not in err


# ------------------------------------------------------------------------------- --resume
@pytest.fixture
def short_sequence(tmp_path):
    """A physical triangle whose delta sequence stops after 4 terms, unconverged at 1e-12."""
    f = tmp_path / "tri.toml"
    f.write_text(TRIANGLE + "[regulator]\nterms = 4\nmin_terms = 3\ncontour = \"none\"\n")
    return f


def test_resume_of_a_finished_unconverged_run(short_sequence, tmp_path, capsys):
    out = tmp_path / "r.json"
    partial = Path(f"{out}.partial")
    args = ["compute", short_sequence, "--rtol", "1e-12", "--json", out, "--quiet"]
    rc, _, err = run_main(capsys, *args)
    assert rc == 1, err
    first = json.loads(out.read_text())
    assert len(first["delta"]) == 4 and partial.exists()

    # all delta_terms already computed: the saved table is extrapolated, nothing is added
    rc, stdout, err = run_main(capsys, *args, "--resume")
    assert rc == 1 and "Traceback" not in err, err
    again = json.loads(out.read_text())
    assert again["delta"] == first["delta"] and again["value"] == first["value"]
    assert again["evaluations"] == first["evaluations"]
    assert again["seconds"] >= sum(row["seconds"] for row in again["table"])
    assert again["info"]["seconds_this_run"] < again["seconds"]
    assert "4 terms" in stdout

    # more delta terms: the table is extended, evaluations and seconds stay cumulative
    short_sequence.write_text(short_sequence.read_text().replace("terms = 4", "terms = 8"))
    rc, _, err = run_main(capsys, *args, "--resume")
    assert rc in (0, 1), err
    longer = json.loads(out.read_text())
    assert longer["delta"][:4] == first["delta"] and len(longer["delta"]) == 8
    assert [r["value"] for r in longer["table"][:4]] == [r["value"] for r in first["table"]]
    assert longer["evaluations"] == sum(row["evaluations"] for row in longer["table"])
    assert longer["evaluations"] > first["evaluations"]
    assert longer["seconds"] == pytest.approx(
        longer["info"]["seconds_this_run"] + sum(r["seconds"] for r in first["table"]))


def _checkpoint(short_sequence, tmp_path, capsys) -> tuple[Path, Path]:
    out = tmp_path / "r.json"
    rc, _, err = run_main(capsys, "compute", short_sequence, "--rtol", "1e-12", "--json", out,
                          "--quiet")
    assert rc == 1, err
    return out, Path(f"{out}.partial")


def test_resume_refuses_bad_checkpoints_in_one_line(short_sequence, tmp_path, capsys):
    out, partial = _checkpoint(short_sequence, tmp_path, capsys)
    good = partial.read_text()
    resume = ["compute", short_sequence, "--json", out, "--quiet", "--resume"]

    # another problem or settings (here another --rtol)
    rc, stdout, err = run_main(capsys, *resume, "--rtol", "1e-11")
    assert rc == 2 and stdout == "" and one_line_error(err), err
    assert str(partial) in err and "another problem or other settings" in err

    saved = json.loads(good)
    del saved["rows"][1]["bare_value"]
    damaged = {"truncated": good[: len(good) // 2], "not JSON": "\x00\x01garbage",
               "a list": "[]", "a key missing": json.dumps(saved)}
    for case, text in damaged.items():
        partial.write_text(text)
        rc, stdout, err = run_main(capsys, *resume, "--rtol", "1e-12")
        assert rc == 2 and stdout == "" and one_line_error(err), (case, err)
        assert str(partial) in err and "remove it or run without --resume" in err, (case, err)
    assert "row 1" in err


# ------------------------------------------------------------------------------- output paths
def test_unwritable_output_paths_are_refused_before_computing(tmp_path, capsys, monkeypatch):
    cases = [
        (["compute", ABOVE, "--json", tmp_path], "--json",
         f"is a folder; give a file name, e.g. {tmp_path / 'out.json'}"),
        (["compute", ABOVE, "--plot", tmp_path / "no" / "r.png"], "--plot", "folder does not exist"),
        (["scan", BELOW, "--param", "s=1:2:3", "--csv", tmp_path], "--csv",
         f"e.g. {tmp_path / 'out.csv'}"),
        (["scan", BELOW, "--param", "s=1:2:3", "--json", tmp_path / "no" / "r.json"], "--json",
         "folder does not exist"),
        (["compute", ABOVE, "--json", "/dev/null"], "--json", "not a regular file"),
    ]
    import importlib
    compute_module = importlib.import_module("loopint.compute")   # loopint.compute: the function
    monkeypatch.setattr(compute_module, "compute", lambda *a, **k: pytest.fail("computed"))
    for argv, option, why in cases:
        rc, stdout, err = run_main(capsys, *argv)
        assert rc == 2 and stdout == "" and one_line_error(err), (argv, err)
        assert option in err and why in err, (argv, err)
    # a folder the user cannot write to (as root every folder is writable: ask os.access)
    locked = tmp_path / "locked"
    locked.mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw:
                        False if Path(p) == locked else real_access(p, mode, **kw))
    rc, _, err = run_main(capsys, "compute", ABOVE, "--plot", locked / "r.png")
    assert rc == 2 and "--plot" in err and "not writable" in err and one_line_error(err), err
    assert list(tmp_path.iterdir()) == [locked] and not any(locked.iterdir())


# ------------------------------------------------------------------------------- summary, JSON
def test_summary_and_json_say_how_the_point_was_computed(tmp_path, capsys):
    """Euclidean point: delta = 0; physical point: the delta sequence or the deformed contour.
    JSON ``delta`` is always a list (empty without a regulator sequence)."""
    runs = {"euclidean": ["compute", BELOW],
            "sequence": ["compute", ABOVE, "--contour", "none"],
            "contour": ["compute", ABOVE, "--contour", "deform", "--max-evals", "1e6"]}
    lines, data = {}, {}
    for name, argv in runs.items():
        out = tmp_path / f"{name}.json"
        rc, stdout, err = run_main(capsys, *argv, "--rtol", "1e-3", "--json", out, "--quiet")
        assert rc == 0, err
        lines[name] = next(ln for ln in stdout.splitlines() if ln.startswith("delta "))
        data[name] = json.loads(out.read_text())
    assert lines["euclidean"].split(None, 1)[1] == "0 (Euclidean region)"
    assert "contour deformation (delta = 0 on a deformed contour), physical region" in lines["contour"]
    assert "Euclidean" not in lines["contour"]
    # a two-loop point: the contour over the decomposed sectors, as the summary says
    rc, stdout, err = run_main(capsys, "compute", K5, "--rtol", "1e-3", "--quiet")
    assert rc == 0, err
    assert ("contour deformation (delta = 0 on a deformed contour over the decomposed sectors), "
            "physical region") in stdout
    n = len(data["sequence"]["delta"])
    assert f"{n} terms" in lines["sequence"] and "physical region" in lines["sequence"]
    assert data["euclidean"]["delta"] == [] and data["euclidean"]["region"] == "euclidean"
    assert data["contour"]["delta"] == [] and data["contour"]["region"] == "physical"
    assert n >= 6 and all(isinstance(d, float) for d in data["sequence"]["delta"])
    for d in data.values():
        assert d["seconds"] >= d["info"]["seconds_this_run"] > 0


# ------------------------------------------------------------------------------- zero denominators
def test_a_denominator_zero_at_the_kinematic_point(tmp_path, capsys):
    f = tmp_path / "dz.toml"
    f.write_text(TRIANGLE.replace('"s/2"', '"s/(m-1)"'))
    for argv in (["show", f], ["compute", f, "--json", tmp_path / "r.json"]):
        rc, stdout, err = run_main(capsys, *argv)
        assert rc == 2 and stdout == "" and one_line_error(err), err
        assert str(f) in err and "diagram.scalar_products.'p1*p2'" in err, err
        assert "divides by zero at this kinematic point" in err and "m - 1 = 0" in err, err
        assert "still depends" not in err
    # a scan through the zero: the point is named, and no NumPy warning comes first
    f.write_text(TRIANGLE.replace('"s/2"', '"s/(m-1)"').replace("m = 1.0", "m = 2.0"))
    with _no_warnings():
        rc, stdout, err = run_main(capsys, "scan", f, "--param", "m=0:2:3", "--quiet")
    assert rc == 2 and one_line_error(err), err
    assert str(f) in err and "kinematics" in err and "divides by zero" in err and "m = 1.0" in err


def test_a_tadpole_in_fixed_dimension_is_refused_with_its_closed_form(tmp_path, capsys):
    f = tmp_path / "tadpole.toml"
    f.write_text('[diagram]\ndimension = 3\ninternal_lines = [["m", [1, 1]]]\n'
                 'external_lines = []\n[kinematics]\nm = 1.3\n')
    rc, stdout, err = run_main(capsys, "compute", f, "--json", tmp_path / "r.json")
    assert rc == 2 and stdout == "" and one_line_error(err), err
    assert f"{f}: internal_lines: one propagator (a tadpole)" in err
    assert "Gamma(nu - D/2)" in err and "4 - 2*eps" in err
    assert not (tmp_path / "r.json").exists()


def test_overflowing_coefficients_name_the_file_and_key(tmp_path, capsys):
    f = tmp_path / "big.toml"
    f.write_text(TRIANGLE.replace('"s/2"', '"s*s*s*s"').replace("s = 10.0", "s = 1e100"))
    with _no_warnings():
        rc, stdout, err = run_main(capsys, "compute", f, "--quiet")
    assert rc == 2 and stdout == "" and one_line_error(err), err
    assert f"{f}: kinematics: F is not finite at this kinematic point" in err, err


def test_invariants_too_large_for_float64_are_refused_not_zero(tmp_path, capsys):
    """At s = 1e300 (m = 1) the triangle's |F|^2 overflows float64 and every integrand value
    would be an exact 0, a value 0 +- 0 that meets any tolerance: refused up front, on the
    contour and on the delta sequence alike, naming the point and what to do."""
    f = tmp_path / "huge.toml"
    f.write_text(TRIANGLE.replace("s = 10.0", "s = 1e300"))
    for extra in ((), ("--contour", "none")):
        rc, stdout, err = run_main(capsys, "compute", f, "--quiet", *extra)
        assert rc == 2 and stdout == "" and one_line_error(err), err
        assert f"{f}: kinematics: F reaches 1e+300" in err and "units" in err, err


class _no_warnings:
    """Fail if a warning is issued inside the block (the CLI must not show NumPy's)."""

    def __enter__(self):
        import warnings
        self.cm = warnings.catch_warnings(record=True)
        self.caught = self.cm.__enter__()
        warnings.simplefilter("always")

    def __exit__(self, *exc):
        self.cm.__exit__(*exc)
        assert not [w for w in self.caught if issubclass(w.category, RuntimeWarning)], \
            [str(w.message) for w in self.caught]


# ------------------------------------------------------------------------------- progress
def _cli(*args):
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    return subprocess.Popen([sys.executable, "-m", "loopint.cli", *map(str, args)], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_progress_lines_on_a_piped_stderr():
    """Not a terminal: one plain line per stage on stderr (direct, contour, delta steps);
    nothing with --quiet."""
    argv = {"direct": ["compute", BELOW, "--rtol", "1e-3"],
            "contour": ["compute", ABOVE, "--rtol", "1e-3", "--contour", "deform"],
            "delta": ["compute", ABOVE, "--rtol", "1e-3", "--contour", "none"],
            "quiet": ["compute", BELOW, "--rtol", "1e-3", "--quiet"]}
    procs = {k: _cli(*a) for k, a in argv.items()}      # started together: start-up bound
    res = {k: (p.wait(timeout=600), *p.communicate()) for k, p in procs.items()}
    for k, (rc, out, err) in res.items():
        assert rc == 0 and "Traceback" not in err, (k, err)
    assert res["quiet"][2] == ""
    for k, stage in (("direct", "delta = 0 (no regulator)"),
                     ("contour", "contour deformation (delta = 0 on a deformed contour)"),
                     ("delta", "delta sequence, ")):
        lines = res[k][2].splitlines()
        assert lines and all(ln.startswith("loopint: ") for ln in lines), (k, lines)
        assert stage in lines[0] and "evaluations" in lines[0] and lines[0].endswith(" s"), lines
    assert "± " in res["delta"][2]


class _Stream:
    def __init__(self, tty: bool):
        self.tty, self.text = tty, []

    def isatty(self):
        return self.tty

    def write(self, s):
        self.text.append(s)
        return len(s)

    def flush(self):
        pass


EVENTS = [{"stage": "direct", "value": [1.0], "error": [0.1], "evaluations": 10, "seconds": 0.5}] + [
    {"stage": "delta", "n": n, "delta": 1.0 / n, "value": [1.0 + 1j], "error": [0.1 + 0.1j],
     "evaluations": 100 * n, "seconds": n} for n in (4, 8, 12)]


def test_progress_throttles_plain_lines_but_keeps_stage_changes_and_the_last():
    stream = _Stream(tty=False)
    clock = iter([0.0, 1.0, 2.0, 3.0])
    with _Progress(False, "tri", interval=5.0, stream=stream) as progress:
        progress.clock = lambda: next(clock)
        for ev in EVENTS:
            progress(ev)
    lines = "".join(stream.text).splitlines()
    assert len(lines) == 3, lines            # direct, first delta step, and the last one
    assert "delta = 0" in lines[0] and "4 terms" in lines[1] and "12 terms" in lines[2]


def test_progress_on_a_terminal_shows_every_stage():
    stream = _Stream(tty=True)
    with _Progress(False, "tri", stream=stream) as progress:
        for ev in EVENTS + [dict(EVENTS[0], stage="contour")]:
            progress(ev)
    text = "".join(stream.text)
    for stage in ("delta = 0 (no regulator)", "delta sequence, 8 terms", "contour deformation"):
        assert stage in text
    quiet = _Stream(tty=True)
    with _Progress(True, "tri", stream=quiet) as progress:
        progress(EVENTS[0])
    assert quiet.text == []


def test_library_prints_nothing(capsys):
    import loopint
    p = loopint.load(ABOVE)
    loopint.compute(p, rtol=1e-3, contour="deform")
    loopint.compute(loopint.load(BELOW), rtol=1e-3)
    assert capsys.readouterr() == ("", "")


# ------------------------------------------------------------------------------- references
def test_no_pointers_to_files_outside_the_repository(capsys):
    """The diagrams' [reference] sources and comments cite papers and codes, not notes that
    are not shipped."""
    outside = ("REFERENCES.md", "DESIGN", "tests/test_references.py", "../shared")
    for f in sorted(DIAGRAMS.glob("*.toml")):
        text = f.read_text()
        assert not [w for w in outside if w in text], f
        rc, stdout, err = run_main(capsys, "show", f)
        assert rc == 0 and not [w for w in outside if w in stdout + err], f


def test_a_long_single_stage_writes_a_heartbeat_when_piped():
    """A contour or delta = 0 run is one engine call: on a piped stderr a line still comes
    every heartbeat while it runs."""
    import io
    import time as _time
    out = io.StringIO()
    with _Progress(False, label="slow", stream=out, heartbeat=0.2):
        _time.sleep(0.7)
    lines = [ln for ln in out.getvalue().splitlines() if "still computing slow" in ln]
    assert len(lines) >= 2, out.getvalue()
    quiet = io.StringIO()
    with _Progress(True, label="slow", stream=quiet, heartbeat=0.1):
        _time.sleep(0.3)
    assert quiet.getvalue() == ""


def _strict_json(path):
    """``path`` parsed as strict JSON: the tokens NaN and Infinity are refused."""
    def refuse(token):
        raise ValueError(f"{path}: non-JSON token {token}")
    return json.loads(Path(path).read_text(), parse_constant=refuse)


def test_outputs_at_a_threshold_are_strict_json(tmp_path, capsys):
    """A point on a threshold is NaN with a threshold status; its value is written as null
    (JSON has no NaN), in `compute --json` and in a scan's JSON, and the CSV says why."""
    f = tmp_path / "tri.toml"
    f.write_text(TRIANGLE.replace("s = 10.0", "s = 4.0"))
    rc, _, _ = run_main(capsys, "compute", f, "--json", tmp_path / "r.json")
    d = _strict_json(tmp_path / "r.json")
    assert rc == 1 and d["value"] == [None, None] and d["status"].startswith("threshold:")
    rc, _, _ = run_main(capsys, "scan", f, "--param", "s=3:4:2", "--quiet",
                        "--json", tmp_path / "s.json", "--csv", tmp_path / "s.csv")
    d = _strict_json(tmp_path / "s.json")
    assert rc == 1 and [p["re"] for p in d["points"]][1] is None
    assert d["points"][0]["converged"] and d["points"][1]["status"].startswith("threshold:")
    assert "threshold:" in (tmp_path / "s.csv").read_text().splitlines()[2]


def test_scans_of_one_point_and_of_an_epsilon_expansion_write_their_files(tmp_path, capsys):
    """A one-point scan and the scan of a dimensionally regulated bubble write CSV and JSON
    (one call each, no checkpoint); the bubble's rows carry every Laurent coefficient, its
    pole 1 (B0's UV pole, prefactor pysecdec) at each point; --resume is refused for both."""
    f = tmp_path / "bub.toml"
    f.write_text('[diagram]\nname = "bub"\ndimension = "4 - 2*eps"\n'
                 'internal_lines = [["m", [1, 2]], ["m", [2, 1]]]\n'
                 'external_lines = [["p", 1], ["q", 2]]\n'
                 '[diagram.scalar_products]\n"p*p" = "s"\n[kinematics]\ns = -1.0\nm = 1.0\n')
    rc, _, err = run_main(capsys, "scan", f, "--param", "s=-2:-1:2", "--quiet",
                          "--csv", tmp_path / "b.csv", "--json", tmp_path / "b.json")
    assert rc == 0, err
    rows = (tmp_path / "b.csv").read_text().splitlines()
    head = rows[0].split(",")
    assert len(rows) == 3 and "eps^-1_re" in head and "eps^0_err_re" in head
    for line in rows[1:]:
        assert float(line.split(",")[head.index("eps^-1_re")]) == pytest.approx(1.0, abs=1e-8)
    assert len(_strict_json(tmp_path / "b.json")["points"]) == 2
    tri = tmp_path / "tri.toml"
    tri.write_text(TRIANGLE)
    rc, _, err = run_main(capsys, "scan", tri, "--param", "s=3:3:1", "--quiet",
                          "--csv", tmp_path / "one.csv")
    assert rc == 0 and len((tmp_path / "one.csv").read_text().splitlines()) == 2, err
    for target, param in ((f, "s=-2:-1:2"), (tri, "s=3:3:1")):
        rc, _, err = run_main(capsys, "scan", target, "--param", param, "--quiet",
                              "--csv", tmp_path / "x.csv", "--resume")
        assert rc == 2 and one_line_error(err) and "keeps no checkpoint" in err, err


def test_complex_kinematics_are_refused_as_such(tmp_path, capsys):
    f = tmp_path / "tri.toml"
    f.write_text(TRIANGLE.replace("m = 1.0", 'm = "1 - 0.05*i"'))
    rc, stdout, err = run_main(capsys, "compute", f)
    assert rc == 2 and stdout == "" and one_line_error(err), err
    assert f"{f}: kinematics.m: must be a real number" in err and "width" in err


def test_lists_in_the_file_are_a_batch_of_points(tmp_path, capsys):
    """`compute` on a file whose [kinematics] holds lists computes them as a batch and lists
    every point with the symbols that vary (and writes them under "points" in --json); each
    value is the single point's (closed form C0(0,0,s;m,m,m) = -(2/s) arcsin^2(sqrt(s/4m^2))
    for 0 < s < 4m^2 and its continuation
    to s < 0, REFERENCES.md); `scan` refuses to pair such a list with a --param grid,
    and a negative entry of a mass list is named as the entry of a batch."""
    import math
    f = tmp_path / "tri.toml"
    f.write_text(TRIANGLE.replace("s = 10.0", "s = [1.0, -2.0]"))
    rc, out, err = run_main(capsys, "compute", f, "--rtol", "1e-6", "--quiet",
                            "--json", tmp_path / "r.json")
    assert rc == 0, err
    assert out.startswith("2 points, 2 converged") and "Traceback" not in err
    points = _strict_json(tmp_path / "r.json")["points"]
    assert [p["s"] for p in points] == [1.0, -2.0]
    for p in points:
        s = p["s"]
        exact = (-(2 / s) * math.asin(math.sqrt(s / 4)) ** 2 if s > 0
                 else -(2 / -s) * math.asinh(math.sqrt(-s / 4)) ** 2)
        assert abs(p["re"] - exact) <= max(3 * p["err_re"], 1e-6 * abs(exact)), (p, exact)
        assert f"s={s:.6g}" in out
    rc, _, err = run_main(capsys, "scan", f, "--param", "m=1:2:2", "--quiet")
    assert rc == 2 and one_line_error(err) and f"{f}: kinematics.s is a list" in err, err
    f.write_text(TRIANGLE.replace("m = 1.0", "m = [1.0, -0.1]"))
    rc, _, err = run_main(capsys, "compute", f)
    assert rc == 2 and one_line_error(err), err
    assert f"{f}: kinematics.m: a list is a batch" in err and "entry 2 (-0.1)" in err


def test_a_budget_below_one_level_is_bad_input(tmp_path, capsys):
    """max_evals below a QMC level (8 shifts of 1021 points) or an MC chunk: no estimate can
    be made, and the error names the option or the file's key (exit 2, no traceback)."""
    f = tmp_path / "tri.toml"
    f.write_text(TRIANGLE.replace("s = 10.0", "s = 1.0"))
    rc, _, err = run_main(capsys, "compute", f, "--method", "qmc", "--max-evals", "100")
    assert rc == 2 and one_line_error(err), err
    assert f"{f}: --max-evals: max_evals=100 is below one level" in err
    f.write_text(TRIANGLE.replace("s = 10.0", "s = 1.0")
                 + '[integration]\nmethod = "mc"\nmax_evals = 1000\n')
    rc, _, err = run_main(capsys, "scan", f, "--param", "s=0.5:2:3", "--quiet")
    assert rc == 2 and one_line_error(err), err
    assert f"{f}: integration.max_evals: max_evals=1000 is below one chunk" in err


def test_an_output_never_replaces_the_input_or_another_output(tmp_path, capsys):
    f = tmp_path / "tri.toml"
    f.write_text(TRIANGLE)
    rc, _, err = run_main(capsys, "compute", f, "--json", f)
    assert rc == 2 and one_line_error(err) and "is the input file" in err, err
    assert f.read_text() == TRIANGLE
    out = tmp_path / "s.csv"
    rc, _, err = run_main(capsys, "scan", f, "--param", "s=5:6:2", "--csv", out, "--json", out)
    assert rc == 2 and one_line_error(err) and "is the file of --json" in err, err
    assert not out.exists()


@pytest.mark.parametrize("replace, value, key, says", [
    (("dimension = 4", 'dimension = "4 - 2*eps"'), "eps = 0.1", "kinematics.eps",
     "dimensional regulator"),
    (("", ""), "p1 = 2.0", "kinematics.p1", "is a momentum of the diagram"),
])
def test_kinematic_values_that_would_be_ignored_are_refused(tmp_path, capsys, replace, value,
                                                            key, says):
    """A value for the regulator eps of a regulated diagram, or for a momentum, would change
    nothing: refused."""
    f = tmp_path / "tri.toml"
    text = TRIANGLE.replace('name = "tri"', 'name = "tri"\ndimension = 4').replace(*replace)
    f.write_text(text.replace("m = 1.0", f"m = 1.0\n{value}"))
    rc, stdout, err = run_main(capsys, "compute", f)
    assert rc == 2 and stdout == "" and one_line_error(err), err
    assert f"{f}: {key}: " in err and says in err, err


def test_eps_is_an_ordinary_symbol_in_a_fixed_dimension(tmp_path, capsys):
    """In D = 4 a symbol named eps is a kinematic symbol like any other: s/2 + eps/2 with
    eps = 1 at s = 0 is the triangle at s = 1 (C0 = -2 arcsin^2(1/2) = -2 (pi/6)^2 at m = 1,
    REFERENCES.md)."""
    import math
    f = tmp_path / "tri.toml"
    f.write_text(TRIANGLE.replace('"s/2"', '"s/2 + eps/2"').replace("s = 10.0", "s = 0.0\neps = 1.0"))
    rc, _, err = run_main(capsys, "compute", f, "--rtol", "1e-8", "--quiet",
                          "--json", tmp_path / "r.json")
    assert rc == 0, err
    assert _strict_json(tmp_path / "r.json")["value"][0] == pytest.approx(-2 * (math.pi / 6) ** 2,
                                                                          rel=1e-7)


def test_a_budget_too_small_for_an_amplitude_term_is_bad_input(capsys):
    """The budget of an amplitude is shared out over its terms: a share below one QMC level
    is an input error that names the option, not a traceback."""
    f = DIAGRAMS / "amplitude" / "amplitude_box_triangles.toml"
    rc, stdout, err = run_main(capsys, "compute", f, "--method", "qmc", "--max-evals", "60000",
                               "--quiet")
    assert rc == 2 and one_line_error(err), err
    assert f"{f}: --max-evals: a term's share of the budget is too small" in err


def test_a_closed_output_pipe_ends_quietly(tmp_path):
    """`loopint show F | head -1` with Python's buffered stdout: no traceback and no
    'Exception ignored' message at exit, exit status 141 (128 + SIGPIPE)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env["LOOPINT_SERVER"] = ""
    p = subprocess.Popen([sys.executable, "-m", "loopint.cli", "show", str(BELOW)], cwd=ROOT,
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()                 # the reader goes away before anything is written
    err = p.stderr.read().decode()
    assert p.wait() == 141 and err == "", err
