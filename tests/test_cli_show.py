"""The command line: `loopint show` and the error paths of `show` / `compute` (DESIGN 4.2-4.3).

* `python3 -m loopint.cli show FILE` on every bundled diagram, as real subprocesses (run
  concurrently), exits 0 and prints L, N, D, U, F, exponents, prefactor and region.
* Bad files: each case writes a small TOML to tmp_path and runs the CLI's `main` on
  `show FILE` and on `compute FILE --json out.json`; both must exit 2 with one line on stderr
  that names the file and the key, print nothing on stdout, write no out.json (nor its
  checkpoint), and be quick (< 2 s; they fail before anything is integrated).  `main` is
  called in-process (the same code path minus interpreter start-up, ~2 s each); a few cases
  also run as real subprocesses to cover the entry point itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from loopint.cli import main

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted((ROOT / "diagrams").glob("*.toml"))
EUCLIDEAN = {"box_massless_offshell", "elliptic2L_euclidean", "ladder_vertex_2L_k1",
             "sunrise_2L_D2", "table51_2L", "triangle_below_threshold",
             "triangle_massless_offshell"}

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
s = 1.0
m = 1.0
'''


def product(expr):
    """The triangle with the p1*p2 product replaced by ``expr`` (no double quotes in it)."""
    return TRIANGLE.replace('"p1*p2" = "s/2"', f'"p1*p2" = "{expr}"')


SP = "diagram.scalar_products.'p1*p2'"
MASSLESS_BUBBLE = '''
[diagram]
dimension = 3
internal_lines = [["0", [1, 2]], ["0", [2, 1]]]
external_lines = [["p", 1], ["q", 2]]
[diagram.scalar_products]
"p*p" = "s"
[kinematics]
s = 0.0
'''

# id: (file text, key that stderr must name, fragment of the reason)
BAD = {
    "malformed TOML": ("[diagram\nname = 'x'\n", "malformed TOML", "line 1"),
    "unknown table": (TRIANGLE + "\n[colour]\nred = 1\n", "colour", "unknown table"),
    "unknown key": (TRIANGLE.replace("[diagram]\n", "[diagram]\ncolour = 3\n"), "diagram.colour",
                    "unknown key"),
    "unknown setting": (TRIANGLE + "\n[integration]\nmethd = 'qmc'\n", "integration.methd",
                        "unknown setting"),
    "unknown symbol": (product("t/2"), SP, "unknown symbol 't'"),
    "__import__": (product("__import__('os').system('touch pwned')"), SP, "unexpected character"),
    "attribute access": (product("s.real"), SP, "unexpected character '.'"),
    "lambda": (product("(lambda: 1)()"), SP, "unexpected character ':'"),
    "function call": (product("exp(s)"), SP, "function calls are not allowed"),
    "code in a mass": (TRIANGLE.replace('[["m", [1, 2]]', '''[["open('x').read()", [1, 2]]'''),
                       "diagram.internal_lines[0] mass", "unexpected character"),
    "code as a kinematic value": (TRIANGLE.replace("s = 1.0", "s = \"__import__('os')\""),
                                  "kinematics.s", "must be a number"),
    "9**9**9": (product("9**9**9"), SP, "out of range"),
    "100 kB expression": (product("+".join(["s"] * 50_000)), SP, "longer than"),
    "deep nesting": (product("(" * 5000 + "s" + ")" * 5000), SP, "nested deeper"),
    "power tower of a sum": (product("((s+m)**64)**64"), SP, "too large"),
    "64-line banana": (TRIANGLE.replace('[["m", [1, 2]], ["m", [2, 3]], ["m", [3, 1]]]',
                                        "[" + ", ".join(['["m", [1, 2]]'] * 64) + "]").replace(
        '["p3", 3]', '["p3", 1]'), "diagram.internal_lines", "too large"),
    "momentum used twice": (TRIANGLE.replace('["p3", 3]', '["p1", 3]'), "diagram.external_lines[2]",
                            "appears twice"),
    "product of the eliminated momentum": (TRIANGLE.replace('"p1*p1" = "0"', '"p1*p3" = "0"'),
                                           "diagram.scalar_products", "eliminated momentum"),
    "product missing": (TRIANGLE.replace('"p2*p2" = "0"\n', ""), "diagram.scalar_products",
                        "missing 'p2*p2'"),
    "product surplus": (TRIANGLE.replace('"p2*p2" = "0"', '"p2*p2" = "0"\n"p2*p1" = "0"'),
                        "diagram.scalar_products", "given twice"),
    "product of an unknown momentum": (TRIANGLE.replace('"p2*p2" = "0"', '"p2*p2" = "0"\n"p2*q" = "0"'),
                                       "diagram.scalar_products", "'q'"),
    "leg on a vertex no line touches": (TRIANGLE.replace('["p3", 3]', '["p3", 4]'),
                                        "diagram.external_lines[2]", "does not exist"),
    "disconnected graph": (TRIANGLE.replace(
        '[["m", [1, 2]], ["m", [2, 3]], ["m", [3, 1]]]',
        '[["m", [1, 2]], ["m", [2, 1]], ["m", [3, 4]], ["m", [4, 3]]]').replace(
        '["p3", 3]', '["p3", 1]'), "diagram.internal_lines", "disconnected"),
    "kinematic value missing": (TRIANGLE.replace("s = 1.0\n", ""), SP, "[kinematics]"),
    "kinematic value a string": (TRIANGLE.replace("s = 1.0", 's = "one"'), "kinematics.s",
                                 "must be a number"),
    "kinematic value NaN": (TRIANGLE.replace("s = 1.0", "s = nan"), "kinematics.s", "finite"),
    "kinematic value inf": (TRIANGLE.replace("s = 1.0", "s = -inf"), "kinematics.s", "finite"),
    "negative mass": (TRIANGLE.replace("m = 1.0", "m = -1.0"), "kinematics.m", "negative"),
    "powers too short": (TRIANGLE.replace("[diagram]\n", "[diagram]\npowers = [1, 1]\n"),
                         "diagram.powers", "2 entries for 3 lines"),
    "negative power": (TRIANGLE.replace("[diagram]\n", "[diagram]\npowers = [1, -1, 1]\n"),
                       "diagram.powers[1]", "negative power"),
    "overall UV divergence": (TRIANGLE.replace("[diagram]\n", "[diagram]\ndimension = 6\n"),
                              "diagram.dimension", "overall UV divergence"),
    "scaleless": (MASSLESS_BUBBLE.replace('"s"', '"0"').replace("s = 0.0\n", ""), "diagram",
                  "scaleless"),
    "scaleless at the kinematic point": (MASSLESS_BUBBLE, "kinematics", "scaleless"),
    "no diagram": ("[kinematics]\ns = 1.0\n", "diagram", "missing [diagram]"),
    "two forms": (TRIANGLE.replace("[diagram]\n", '[diagram]\nU = "x1"\n'), "diagram",
                  "give exactly one of"),
}
SLOW_LIMIT = 2.0      # seconds, for every refusal (all happen before any integration)


def _run_main(capsys, argv):
    t0 = time.perf_counter()
    try:
        rc = main(argv)
    except SystemExit as e:                     # argparse usage errors
        rc = e.code
    dt = time.perf_counter() - t0
    out, err = capsys.readouterr()
    return rc, out, err, dt


@pytest.mark.parametrize("case", list(BAD))
def test_bad_file_exits_2_naming_file_and_key(case, tmp_path, capsys, monkeypatch):
    text, key, fragment = BAD[case]
    monkeypatch.chdir(tmp_path)                 # a 'touch pwned' would land here
    f = tmp_path / "bad.toml"
    f.write_text(text)
    rc, out, err, dt = _run_main(capsys, ["show", str(f)])
    assert rc == 2, (out, err)
    assert out == ""
    assert err.startswith("loopint: error: ") and err.count("\n") == 1, err
    assert str(f) in err and key in err and fragment in err, err
    assert dt < SLOW_LIMIT
    js = tmp_path / "out.json"
    rc, out, err, dt = _run_main(capsys, ["compute", str(f), "--json", str(js), "--quiet"])
    assert rc == 2 and str(f) in err and key in err, err
    assert not js.exists() and not Path(f"{js}.partial").exists()
    assert dt < SLOW_LIMIT
    assert not (tmp_path / "pwned").exists()


def test_usage_errors(tmp_path, capsys):
    rc, _, err, _ = _run_main(capsys, ["show"])
    assert rc == 2 and "file" in err
    rc, _, err, _ = _run_main(capsys, [])
    assert rc == 2
    rc, _, err, _ = _run_main(capsys, ["show", str(tmp_path / "absent.toml")])
    assert rc == 2 and "absent.toml: cannot read file" in err
    good = tmp_path / "good.toml"
    good.write_text(TRIANGLE)
    rc, _, err, _ = _run_main(capsys, ["compute", str(good), "--json", str(tmp_path / "no" / "o.json")])
    assert rc == 2 and "folder does not exist" in err
    assert not (tmp_path / "no").exists()


def test_show_in_process_prints_the_diagram(tmp_path, capsys):
    f = tmp_path / "tri.toml"
    f.write_text(TRIANGLE)
    rc, out, err, _ = _run_main(capsys, ["show", str(f)])
    assert rc == 0 and err == ""
    lines = {ln[:12].strip(): ln[12:].strip() for ln in out.splitlines() if ln[:12].strip()}
    assert lines["loops L"] == "1" and lines["dimension D"] == "4"
    assert lines["U"] == "x1 + x2 + x3"
    assert lines["exponents"] == "U^(-1) / (F - i0)^(1)"
    assert lines["prefactor"] == "-1   (pysecdec)"
    assert lines["region"].startswith("Euclidean")
    # a batched scan file has no single region; show still works
    f.write_text(TRIANGLE.replace("s = 1.0", "s = [1.0, 10.0]"))
    rc, out, _, _ = _run_main(capsys, ["show", str(f)])
    assert rc == 0 and "region" not in out


# --------------------------------------------------------------------------- real subprocesses
SUBPROCESS_BAD = {
    "malformed TOML": ["show"],
    "__import__": ["compute", "--json", "OUT"],
    "deep nesting": ["show"],
}


@pytest.fixture(scope="module")
def subprocess_runs(tmp_path_factory):
    """All CLI subprocesses of this module, started together (they are import-bound)."""
    tmp = tmp_path_factory.mktemp("cli")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               JAX_PLATFORMS="cpu")
    jobs = {}
    for f in FILES:
        jobs[f.stem] = ([sys.executable, "-m", "loopint.cli", "show", str(f)], None)
    for case, argv in SUBPROCESS_BAD.items():
        f = tmp / f"{case.replace(' ', '_')}.toml"
        f.write_text(BAD[case][0])
        out = tmp / f"{f.stem}.json"
        cmd = [sys.executable, "-m", "loopint.cli", argv[0], str(f)] + \
            [str(out) if a == "OUT" else a for a in argv[1:]]
        jobs[case] = (cmd, out)
    procs = {k: subprocess.Popen(cmd, cwd=tmp, env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
             for k, (cmd, _) in jobs.items()}
    results = {}
    for k, p in procs.items():
        out, err = p.communicate(timeout=300)
        results[k] = (p.returncode, out, err, jobs[k][1])
    return results, tmp


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_show_every_bundled_diagram(subprocess_runs, path):
    rc, out, err, _ = subprocess_runs[0][path.stem]
    assert rc == 0, err
    assert "Traceback" not in err
    for label in ("loops L", "lines N", "dimension D", "U  ", "F  ", "exponents", "prefactor",
                  "kinematics", "region"):
        assert label in out, (label, out)
    region = [ln for ln in out.splitlines() if ln.startswith("region")][0]
    assert region.split()[1].startswith("Euclidean" if path.stem in EUCLIDEAN else "physical")


@pytest.mark.parametrize("case", list(SUBPROCESS_BAD))
def test_subprocess_bad_input(subprocess_runs, case):
    results, tmp = subprocess_runs
    rc, out, err, js = results[case]
    assert rc == 2 and out == ""
    assert err.startswith("loopint: error: ") and "Traceback" not in err
    assert f"{case.replace(' ', '_')}.toml" in err and BAD[case][1] in err
    if js is not None:
        assert not js.exists()
    assert not (tmp / "pwned").exists()
