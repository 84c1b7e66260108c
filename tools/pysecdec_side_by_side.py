#!/usr/bin/env python
"""loopint and pySecDec side by side on this machine's CPU: Laurent coefficients of cases of
tests/dimreg_points.py, or the finite value of a diagram file, at one relative tolerance each.

For every case NAME:RTOL (NAME a case of tests/dimreg_points.py, or the path of a diagram file
given as a graph, e.g. diagrams/ladder_vertex_2L_k5.toml, whose finite part pySecDec computes,
with contour deformation at a physical point, tools/make_physical_references.py):

* pySecDec 1.6.6 (its own virtual environment, ``--pysecdec-python``; see
  tools/make_dimreg_references.py, whose ``generate`` and ``evaluate`` are used): the seconds
  to generate and compile its integral library (FORM, the C++ compiler) in an empty
  ``--workdir``, and the seconds of its Qmc integration with ``epsrel = RTOL``;
* loopint: a fresh process with the compilation cache off (``LOOPINT_CACHE_DIR=""``): the
  seconds of its first ``loopint.compute`` (``cold``: tracing, compilation and the run), then
  of a second call in the same process (``warm``); ``rtol = RTOL``;
* for both, the largest |c_j - reference| over the orders, relative to max_j |c_j| (the
  references of tests/dimreg_points.py, or the file's ``[reference]``).

    python tools/pysecdec_side_by_side.py --pysecdec-python /work/pysecdec-venv/bin/python \\
        --workdir /tmp/psd-side D0_eucl:1e-8 V2P_eucl:1e-5 diagrams/ladder_vertex_2L_k1.toml:1e-6

prints a Markdown table (and ``--json FILE`` writes the rows).  Without ``--pysecdec-python``
only loopint's columns are measured (pySecDec's do not change with loopint's code).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

PYSECDEC_JOB = r"""
import json, sys, time
sys.path.insert(0, {tools!r})
import make_dimreg_references as m
P = m._points_module()
case = P.CASES_BY_NAME[{name!r}]
m.EPSREL = {{1: {rtol!r}, 2: {rtol!r}}}
m.WALL = {{1: {wall!r}, 2: {wall!r}}}
lib, params, gen = m.generate(case, {workdir!r}, {jobs!r})
out = m.evaluate(lib, params, case["kinematics"], case["loops"])
out["generate_seconds"] = gen
print("RESULT " + json.dumps(out))
"""

PYSECDEC_FILE_JOB = r"""
import json, sys, tomllib
sys.path.insert(0, {tools!r})
import make_physical_references as m
spec = tomllib.load(open({path!r}, "rb"))
graph = {{k: spec["diagram"][k] for k in ("internal_lines", "external_lines", "scalar_products")}}
values = spec["kinematics"]
m.EPSREL = {{1: {rtol!r}, 2: {rtol!r}}}
m.WALL = {{1: {wall!r}, 2: {wall!r}}}
lib, params, gen = m.generate_graph(spec["diagram"]["name"], graph, values,
                                    spec["diagram"]["dimension"], {workdir!r}, {jobs!r},
                                    contour_deformation={contour!r})
out = m.evaluate(lib, params, values, 2)
out["generate_seconds"] = gen
out["coefficients"] = {{"0": out["value"]}}
print("RESULT " + json.dumps(out))
"""

LOOPINT_FILE_JOB = r"""
import json, sys, time
t0 = time.perf_counter()
import loopint
p = loopint.load({path!r})
t_import = time.perf_counter() - t0
times, r = [], None
for _ in range(2):
    t = time.perf_counter()
    r = loopint.compute(p, rtol={rtol!r})
    times.append(time.perf_counter() - t)
v = complex(r.value)
out = {{"cold": times[0], "warm": times[1], "import": t_import, "converged": r.converged,
       "evaluations": r.evaluations, "method": r.method,
       "coefficients": {{"0": [v.real, v.imag]}}}}
print("RESULT " + json.dumps(out))
"""

LOOPINT_JOB = r"""
import json, sys, time
sys.path.insert(0, {tests!r})
t0 = time.perf_counter()
import loopint
import dimreg_points as P
case = P.CASES_BY_NAME[{name!r}]
d = loopint.Diagram.from_graph(internal_lines=case["internal_lines"],
                               external_lines=case["external_lines"],
                               scalar_products=case["scalar_products"],
                               dimension=P.DIMENSION, powers=case["powers"])
t_import = time.perf_counter() - t0
times, r = [], None
for _ in range(2):
    t = time.perf_counter()
    r = loopint.compute(d, kinematics=case["kinematics"], eps_order=case["eps_order"],
                        rtol={rtol!r})
    times.append(time.perf_counter() - t)
out = {{"cold": times[0], "warm": times[1], "import": t_import, "converged": r.converged,
       "evaluations": r.evaluations, "method": r.method,
       "coefficients": {{str(j): [complex(v).real, complex(v).imag]
                        for j, v in r.coefficients.items()}}}}
print("RESULT " + json.dumps(out))
"""


def _run_job(python: str, code: str, env=None) -> dict:
    p = subprocess.run([python, "-c", code], capture_output=True, text=True, env=env)
    lines = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
    if p.returncode != 0 or not lines:
        raise RuntimeError(f"{python} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULT "):])


def _physical(path: str) -> bool:
    """Whether the diagram file's point is physical (F changes sign on the simplex)."""
    sys.path.insert(0, ROOT)
    import loopint
    p = loopint.load(path)
    return p.diagram.region(p.kinematics).kind != "euclidean"


def _true_error(coefficients: dict, reference: dict) -> float:
    got = {int(j): complex(*v) for j, v in coefficients.items()}
    scale = max(abs(v) for v in reference.values())
    return max(abs(got.get(j, float("nan")) - v) for j, v in reference.items()) / scale


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cases", nargs="+",
                    help="NAME:RTOL (a case of tests/dimreg_points.py or a diagram file)")
    ap.add_argument("--pysecdec-python",
                    help="pySecDec's Python (without it, loopint's columns alone)")
    ap.add_argument("--workdir", help="pySecDec's work folder (default: a new temporary one)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--wall", type=int, default=1800, help="pySecDec's wall-clock limit (s)")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import dimreg_points as P

    workdir = a.workdir or (tempfile.mkdtemp(prefix="psd-side-") if a.pysecdec_python else "")
    if workdir:
        os.makedirs(workdir, exist_ok=True)
    env = dict(os.environ, LOOPINT_CACHE_DIR="",
               PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    rows = []
    for item in a.cases:
        name, rtol = item.rsplit(":", 1)
        rtol = float(rtol)
        if name.endswith(".toml"):
            path = os.path.abspath(name)
            with open(path, "rb") as fh:
                ref = {0: complex(*tomllib.load(fh)["reference"]["value"])}
            # pySecDec deforms the contour only where loopint's region test says it must
            contour = _physical(path)
            psd = a.pysecdec_python and _run_job(a.pysecdec_python, PYSECDEC_FILE_JOB.format(
                tools=HERE, path=path, rtol=rtol, wall=a.wall, workdir=workdir, jobs=a.jobs,
                contour=contour))
            li = _run_job(sys.executable, LOOPINT_FILE_JOB.format(path=path, rtol=rtol),
                          env=env)
            name = os.path.splitext(os.path.basename(name))[0]
        else:
            case = P.CASES_BY_NAME[name]
            ref, _, _ = P.reference(case)
            psd = a.pysecdec_python and _run_job(a.pysecdec_python, PYSECDEC_JOB.format(
                tools=HERE, name=name, rtol=rtol, wall=a.wall, workdir=workdir, jobs=a.jobs))
            li = _run_job(sys.executable, LOOPINT_JOB.format(
                tests=os.path.join(ROOT, "tests"), name=name, rtol=rtol), env=env)
        nan = float("nan")
        row = {"case": name, "rtol": rtol,
               "pysecdec_generate_s": psd["generate_seconds"] if psd else nan,
               "pysecdec_integrate_s": psd["seconds"] if psd else nan,
               "pysecdec_true_error": _true_error(psd["coefficients"], ref) if psd else nan,
               "loopint_cold_s": li["cold"], "loopint_warm_s": li["warm"],
               "loopint_import_s": li["import"], "loopint_method": li["method"],
               "loopint_converged": li["converged"],
               "loopint_true_error": _true_error(li["coefficients"], ref)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    print("\n| case | rtol | pySecDec generate + build (s) | pySecDec integrate (s) | "
          "pySecDec true error | loopint cold (s) | loopint warm (s) | loopint true error |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['case']} | {r['rtol']:g} | {r['pysecdec_generate_s']:.1f} | "
              f"{r['pysecdec_integrate_s']:.1f} | {r['pysecdec_true_error']:.1e} | "
              f"{r['loopint_cold_s']:.1f} | {r['loopint_warm_s']:.2f} | "
              f"{r['loopint_true_error']:.1e} |")
    if a.json:
        tmp = a.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump([{k: None if v != v else v for k, v in r.items()} for r in rows], f,
                      indent=1)
        os.replace(tmp, a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
