#!/usr/bin/env python
"""Reference values of the physical test set by pySecDec (tests/data/physical_references.json).

pySecDec is NOT a dependency of loopint: this script runs in its own virtual environment, and
the JSON file carries the numbers with their source.  To regenerate (about an hour on 2
cores: the one-loop points take 1-5 minutes each, mostly the near-threshold box and the
pentagon; each two-loop vertex 10-15 minutes of integration at epsrel 1e-8)::

    python -m venv /work/pysecdec-venv && /work/pysecdec-venv/bin/pip install pySecDec==1.6.6
    /work/pysecdec-venv/bin/python tools/make_physical_references.py --workdir /tmp/psd-work
    # options: --only ID [ID ...] (merge those points into the existing file), --jobs 2

For every point of tests/physical_points.py (also those with an mpmath reference: pySecDec's
value there checks both), pySecDec 1.6.6 (S. Borowka et al., Comput. Phys. Commun. 222 (2018)
313) is run with

* ``LoopIntegralFromGraph`` on the point's graph, every scalar product of the external momenta
  replaced by its value in terms of the kinematic symbols (momentum conservation applied
  here), dimension ``D - 2*eps`` and ``requested_orders = [0]`` (every point is finite: the
  eps^0 coefficient is the D-dimensional integral in pySecDec's normalization, DESIGN.md 4.1);
  kinematic symbols whose value is 0 are put in as 0 (massless lines, light-like legs);
* ``loop_package(..., contour_deformation=True)``, ``make pylink``;
* ``IntegralLibrary.use_Qmc(transform="korobov3", fitfunction="polysingular")`` with
  ``epsrel`` = EPSREL[loops] (1e-10 one loop, 1e-8 two loops), ``epsabs`` = 1e-30, and a
  wall-clock limit per evaluation (WALL: 300 s one loop, 900 s two loops; a point that
  reaches it keeps the error pySecDec reports);

in both unit systems of the test set ("m = 1" and "GeV" = m * LAMBDA; the two-loop vertices in
"m = 1" only, their longest runs).  The file records the
definition, both values with the errors pySecDec reports (its standard-deviation estimates),
the seconds taken, the date of each point's run, and the settings and version (the file's
``date`` is that of its last update).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(ROOT, "tests", "data", "physical_references.json")

EPSREL = {1: 1e-10, 2: 1e-8}
EPSABS = 1e-30
MAXEVAL = {1: 10**10, 2: 10**11}
# wall-clock limit of one evaluation (s): the near-threshold box does not reach 1e-10 in
# minutes; the value then carries the error pySecDec reached (recorded)
WALL = {1: 300, 2: 900}
# the "GeV" evaluation (a check of pySecDec's own scaling) for these loop counts only: at two
# loops it would double the longest runs (the sunrise, cheap, runs in both)
QMC = dict(transform="korobov3", fitfunction="polysingular", verbosity=0, minn=10**4,
           minm=32)


def _points_module():
    spec = importlib.util.spec_from_file_location(
        "physical_points", os.path.join(ROOT, "tests", "physical_points.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def replacement_rules(graph: dict, values: dict):
    """All scalar products of the external momenta (the last one eliminated by momentum
    conservation, as loopint does), as (product, expression) pairs for pySecDec; kinematic
    symbols with value 0 are replaced by 0."""
    import sympy as sp
    names = [leg[0] for leg in graph["external_lines"]]
    indep, last = names[:-1], names[-1]
    zero = {sp.Symbol(k): 0 for k, v in values.items() if v == 0}
    gram = {}
    for key, expr in graph["scalar_products"].items():
        a, b = [t.strip() for t in key.split("*")]
        e = sp.sympify(expr).subs(zero)
        gram[(a, b)] = gram[(b, a)] = e

    def dot(u: dict, w: dict):
        return sp.expand(sum(cu * cw * gram[(a, b)] for a, cu in u.items()
                             for b, cw in w.items()))
    vec = {n: {n: 1} for n in indep}
    vec[last] = {n: -1 for n in indep}
    rules = []
    for i, a in enumerate(names):
        for b in names[i:]:
            rules.append((f"{a}*{b}", str(dot(vec[a], vec[b]))))
    return rules


def _internal_lines(graph: dict, values: dict):
    out = []
    for mass, (v1, v2) in graph["internal_lines"]:
        m = "0" if values.get(mass, None) == 0 else mass
        out.append([m, [v1, v2]])
    return out


def generate(point: dict, workdir: str, jobs: int) -> tuple[str, list, float]:
    """Write and compile the pySecDec package of a point; returns (library, parameters, s)."""
    P = _points_module()
    return generate_graph(point["diagram"], P.DIAGRAMS[point["diagram"]], point["kinematics"],
                          point["dimension"], workdir, jobs)


def generate_graph(diagram: str, graph: dict, values: dict, dimension, workdir: str,
                   jobs: int, contour_deformation: bool = True) -> tuple[str, list, float]:
    """Write and compile the pySecDec package of ``graph`` (internal_lines, external_lines,
    scalar_products as in a diagram file) at the kinematic ``values`` in ``dimension - 2 eps``
    dimensions, with or without pySecDec's contour deformation (a Euclidean point needs
    none); returns (library, parameters, seconds)."""
    import pySecDec as psd
    params = sorted(k for k, v in values.items() if v != 0)
    # one library per diagram and set of vanishing symbols: points that differ only in the
    # values of the others share it (the kinematics are run-time parameters)
    zeros = sorted(k for k, v in values.items() if v == 0)
    name = re.sub(r"[^A-Za-z0-9]", "_", "_".join([diagram, *zeros]))
    t0 = time.time()
    lib = os.path.join(workdir, name, f"{name}_pylink.so")
    if not os.path.exists(lib):
        li = psd.LoopIntegralFromGraph(
            internal_lines=_internal_lines(graph, values),
            external_lines=[list(x) for x in graph["external_lines"]],
            replacement_rules=replacement_rules(graph, values),
            regulators=["eps"], dimensionality=f"{dimension}-2*eps")
        cwd = os.getcwd()
        os.chdir(workdir)
        try:
            psd.loop_package(name=name, loop_integral=li, real_parameters=params,
                             requested_orders=[0], contour_deformation=contour_deformation,
                             form_work_space="500M", form_threads=jobs)
        finally:
            os.chdir(cwd)
        subprocess.run(["make", "-C", os.path.join(workdir, name), "pylink", f"-j{jobs}",
                        f"PYTHON={sys.executable}"], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    return lib, params, time.time() - t0


def evaluate(lib_path: str, params: list, values: dict, loops: int) -> dict:
    from pySecDec.integral_interface import IntegralLibrary
    lib = IntegralLibrary(lib_path)
    lib.use_Qmc(epsrel=EPSREL[loops], epsabs=EPSABS, maxeval=MAXEVAL[loops], **QMC)
    t0 = time.time()
    out = lib(real_parameters=[float(values[k]) for k in params], epsrel=EPSREL[loops],
              epsabs=EPSABS, maxeval=MAXEVAL[loops], wall_clock_limit=WALL[loops],
              format="json", verbose=False)
    seconds = time.time() - t0
    # (without prefactor, prefactor, with prefactor): the last one is the integral
    (series,) = out[2]["sums"].values()
    val, err = series[(0,)]
    return {"value": [val.real, val.imag], "error": [abs(err.real), abs(err.imag)],
            "seconds": round(seconds, 2)}


def _dumps(obj, level: int = 0) -> str:
    """JSON with one key per line and every list on one line (readable diffs)."""
    if isinstance(obj, dict) and obj:
        pad = " " * (level + 1)
        items = [f"{pad}{json.dumps(k)}: {_dumps(v, level + 1)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * level + "}"
    return json.dumps(obj)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workdir", default="/tmp/psd-work")
    ap.add_argument("--only", nargs="*", help="point ids (merged into the existing file)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default=OUT)
    a = ap.parse_args(argv)
    import pySecDec
    P = _points_module()
    os.makedirs(a.workdir, exist_ok=True)
    data = {"points": {}}
    if os.path.exists(a.out):
        with open(a.out) as f:
            data = json.load(f)
    todo = [p for p in P.POINTS if not a.only or p["id"] in a.only]
    for p in todo:
        print(f"{p['id']}: generating", flush=True)
        lib, params, gen_s = generate(p, a.workdir, a.jobs)
        kin1 = p["kinematics"]
        kin2 = P.scaled_kinematics(kin1)
        r1 = evaluate(lib, params, kin1, p["loops"])
        print(f"{p['id']}: m=1 {r1}", flush=True)
        r2 = None
        if p["loops"] == 1 or p["diagram"] == "sunrise_2L":
            r2 = evaluate(lib, params, kin2, p["loops"])
            print(f"{p['id']}: GeV {r2}", flush=True)
        graph = P.DIAGRAMS[p["diagram"]]
        data["points"][p["id"]] = {
            "note": p["note"],
            "definition": {"internal_lines": _internal_lines(graph, kin1),
                           "external_lines": graph["external_lines"],
                           "replacement_rules": replacement_rules(graph, kin1),
                           "powers": [1] * p["propagators"], "dimension": p["dimension"],
                           "loops": p["loops"],
                           "normalization": "prod_l d^Dk_l/(i pi^(D/2)) prod_j "
                                            "1/(q_j^2 - m_j^2 + i0)"},
            "kinematics": kin1, "kinematics_GeV": kin2, "lambda": P.LAMBDA,
            "mass_dimension": P.mass_dimension(p),
            "value": r1["value"], "error": r1["error"], "seconds": r1["seconds"],
            **({} if r2 is None else {"value_GeV": r2["value"], "error_GeV": r2["error"],
                                      "seconds_GeV": r2["seconds"]}),
            "generation_and_compile_seconds": round(gen_s, 1),
            "date": datetime.date.today().isoformat(),
            "settings": {"epsrel": EPSREL[p["loops"]], "epsabs": EPSABS,
                         "maxeval": MAXEVAL[p["loops"]], "wall_clock_limit": WALL[p["loops"]],
                         "integrator": "Qmc", **QMC,
                         "contour_deformation": True, "requested_orders": [0],
                         "dimensionality": f"{p['dimension']}-2*eps"},
        }
        data.update({
            "source": f"pySecDec {pySecDec.__version__} (S. Borowka et al., Comput. Phys. "
                      "Commun. 222 (2018) 313): loop_package with contour deformation, "
                      "make pylink, IntegralLibrary.use_Qmc; errors are pySecDec's "
                      "(standard-deviation) estimates",
            "pysecdec_version": pySecDec.__version__,
            "command": "/work/pysecdec-venv/bin/python tools/make_physical_references.py",
            "generator": "tools/make_physical_references.py",
            "date": datetime.date.today().isoformat(),
            "machine": "2-core CPU"})
        data["points"] = {q["id"]: data["points"][q["id"]] for q in P.POINTS
                          if q["id"] in data["points"]}
        os.makedirs(os.path.dirname(a.out), exist_ok=True)
        tmp = a.out + ".tmp"
        with open(tmp, "w") as f:
            f.write(_dumps(data) + "\n")
        os.replace(tmp, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
