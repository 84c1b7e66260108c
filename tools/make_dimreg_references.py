#!/usr/bin/env python
"""Reference values of the dimensional-regularization test set by pySecDec
(tests/data/dimreg_references.json).

pySecDec is NOT a dependency of loopint: this script runs in its own virtual environment, and
the JSON file carries the numbers with their source.  To regenerate (on 2 cores: the
one-loop cases about a minute each, mostly FORM and the compiler; the two-loop massless
vertices 5-15 minutes each, triangle2L_psd 25 minutes)::

    python -m venv /work/pysecdec-venv && /work/pysecdec-venv/bin/pip install pySecDec==1.6.6
    /work/pysecdec-venv/bin/python tools/make_dimreg_references.py --workdir /tmp/psd-dimreg
    # options: --only NAME [NAME ...] (merge those cases into the existing file), --jobs 2,
    # --wall SECONDS (instead of WALL: triangle2L_psd stops at the 900 s limit with
    # errors 1.8e-4 at eps^0; a longer --wall lowers them)

For every case of tests/dimreg_points.py (also those with an mpmath reference: pySecDec's
value there checks both) except the physical massless two-loop vertices (CONTINUED_FROM:
their check is the Euclidean partner's value continued exactly), pySecDec 1.6.6
(S. Borowka et al., Comput. Phys. Commun. 222 (2018) 313) is run with

* ``LoopIntegralFromGraph`` on the case's graph, every scalar product of the external
  momenta replaced by its value in terms of the kinematic symbols (momentum conservation
  applied as in tools/make_physical_references.py), ``powerlist`` = the case's powers,
  ``dimensionality = "4-2*eps"``, ``regulators = ["eps"]`` and
  ``requested_orders = [eps_order]``: pySecDec's result "with prefactor" is the integral in
  the normalization of DESIGN.md section 4.1, the prefactor (-1)^nu Gamma(nu - L D/2)/prod
  Gamma(nu_j) expanded in eps with nothing pulled out; kinematic symbols whose value is 0
  are put in as 0;
* ``loop_package(..., contour_deformation = (region == "physical"))``, ``make pylink``;
* ``IntegralLibrary.use_Qmc(transform="korobov3", fitfunction="polysingular")`` with
  ``epsrel`` = EPSREL[loops], ``epsabs`` = 1e-30 and a wall-clock limit per evaluation
  (WALL[loops]; a case that reaches it keeps the error pySecDec reports);

in "m = 1" units and, for the one-loop cases and the sunrises, again in "GeV" units (every
mass times LAMBDA = 150, every invariant times LAMBDA^2): a check of ``rescale`` (the
coefficients mix under a change of units).  The file records the definition, every
coefficient with the errors pySecDec reports (its standard-deviation estimates, real and
imaginary part), the seconds taken, the settings and version; a case pySecDec could not do
records why ("failure").
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
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(ROOT, "tests", "data", "dimreg_references.json")

EPSREL = {1: 1e-10, 2: 1e-8}
EPSABS = 1e-30
MAXEVAL = {1: 10**10, 2: 10**11}
WALL = {1: 300, 2: 900}
QMC = dict(transform="korobov3", fitfunction="polysingular", verbosity=0, minn=10**4,
           minm=32)
DIMENSIONALITY = "4-2*eps"


def _load(name: str, path: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _points_module():
    return _load("dimreg_points", os.path.join(ROOT, "tests", "dimreg_points.py"))


# the scalar-product rules and the JSON layout are those of the physical test set's generator
_physical = _load("make_physical_references", os.path.join(HERE, "make_physical_references.py"))
replacement_rules = _physical.replacement_rules
_internal_lines = _physical._internal_lines
_dumps = _physical._dumps


def library_name(case: dict) -> str:
    """Cases that differ only in the values of nonzero symbols share a library."""
    zeros = sorted(k for k, v in case["kinematics"].items() if v == 0)
    powers = "p" + "".join(str(p) for p in case["powers"])
    cd = "cd" if case["region"] == "physical" else "nocd"
    return re.sub(r"[^A-Za-z0-9]", "_", "_".join(
        [case["diagram"], *zeros, powers, cd, f"o{case['eps_order']}".replace("-", "m")]))


def generate(case: dict, workdir: str, jobs: int) -> tuple[str, list, float]:
    """Write and compile the pySecDec package of a case; returns (library, parameters, s)."""
    import pySecDec as psd
    values = case["kinematics"]
    params = sorted(k for k, v in values.items() if v != 0)
    name = library_name(case)
    t0 = time.time()
    lib = os.path.join(workdir, name, f"{name}_pylink.so")
    if not os.path.exists(lib):
        li = psd.LoopIntegralFromGraph(
            internal_lines=_internal_lines(case, values),
            external_lines=[list(x) for x in case["external_lines"]],
            replacement_rules=replacement_rules(case, values),
            powerlist=list(case["powers"]),
            regulators=["eps"], dimensionality=DIMENSIONALITY)
        cwd = os.getcwd()
        os.chdir(workdir)
        try:
            psd.loop_package(name=name, loop_integral=li, real_parameters=params,
                             requested_orders=[case["eps_order"]],
                             contour_deformation=case["region"] == "physical",
                             form_work_space="500M", form_threads=jobs)
        finally:
            os.chdir(cwd)
        subprocess.run(["make", "-C", os.path.join(workdir, name), "pylink", f"-j{jobs}",
                        f"PYTHON={sys.executable}"], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    return lib, params, time.time() - t0


def evaluate(lib_path: str, params: list, values: dict, loops: int) -> dict:
    """Every order pySecDec returns: {"coefficients": {j: [re, im]}, "errors": {j: [re, im]}}."""
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
    coeffs, errors = {}, {}
    for (j,), (val, err) in sorted(series.items()):
        coeffs[str(j)] = [val.real, val.imag]
        errors[str(j)] = [abs(err.real), abs(err.imag)]
    return {"coefficients": coeffs, "errors": errors, "seconds": round(seconds, 2)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workdir", default="/tmp/psd-dimreg")
    ap.add_argument("--only", nargs="*", help="case names (merged into the existing file)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--wall", type=int, help="wall-clock limit per evaluation (s), instead of "
                                              "WALL[loops]")
    a = ap.parse_args(argv)
    if a.wall:
        WALL.update({1: a.wall, 2: a.wall})
    import pySecDec
    P = _points_module()
    os.makedirs(a.workdir, exist_ok=True)
    data = {"cases": {}}
    if os.path.exists(a.out):
        with open(a.out) as f:
            data = json.load(f)
    todo = [c for c in P.CASES if (not a.only or c["name"] in a.only)
            and c["name"] not in P.CONTINUED_FROM]
    for c in todo:
        name = c["name"]
        kin1 = c["kinematics"]
        kin2 = P.scaled_kinematics(kin1)
        entry = {
            "note": c["note"],
            "definition": {"internal_lines": _internal_lines(c, kin1),
                           "external_lines": c["external_lines"],
                           "replacement_rules": replacement_rules(c, kin1),
                           "powers": c["powers"], "dimension": DIMENSIONALITY,
                           "loops": c["loops"],
                           "normalization": "prod_l d^Dk_l/(i pi^(D/2)) prod_j "
                                            "1/(q_j^2 - m_j^2 + i0)^nu_j, pySecDec's prefactor "
                                            "expanded in eps"},
            "kinematics": kin1, "kinematics_GeV": kin2, "lambda": P.LAMBDA,
            "eps_order": c["eps_order"], "region": c["region"],
            "settings": {"epsrel": EPSREL[c["loops"]], "epsabs": EPSABS,
                         "maxeval": MAXEVAL[c["loops"]], "wall_clock_limit": WALL[c["loops"]],
                         "integrator": "Qmc", **QMC,
                         "contour_deformation": c["region"] == "physical",
                         "requested_orders": [c["eps_order"]],
                         "dimensionality": DIMENSIONALITY, "library": library_name(c)},
        }
        try:
            print(f"{name}: generating {library_name(c)}", flush=True)
            lib, params, gen_s = generate(c, a.workdir, a.jobs)
            entry["generation_and_compile_seconds"] = round(gen_s, 1)
            r1 = evaluate(lib, params, kin1, c["loops"])
            print(f"{name}: m=1 {r1}", flush=True)
            entry.update(r1)
            if c["loops"] == 1 or c["diagram"].startswith("sunrise"):
                r2 = evaluate(lib, params, kin2, c["loops"])
                print(f"{name}: GeV {r2}", flush=True)
                entry.update({"coefficients_GeV": r2["coefficients"],
                              "errors_GeV": r2["errors"], "seconds_GeV": r2["seconds"]})
        except Exception as e:        # recorded, the other cases go on
            traceback.print_exc()
            entry["failure"] = f"{type(e).__name__}: {e}"
            print(f"{name}: FAILED {entry['failure']}", flush=True)
        data["cases"][name] = entry
        data.update({
            "source": f"pySecDec {pySecDec.__version__} (S. Borowka et al., Comput. Phys. "
                      "Commun. 222 (2018) 313): loop_package (contour deformation for the "
                      "physical cases), make pylink, IntegralLibrary.use_Qmc; errors are "
                      "pySecDec's (standard-deviation) estimates",
            "pysecdec_version": pySecDec.__version__,
            "command": "/work/pysecdec-venv/bin/python tools/make_dimreg_references.py",
            "generator": "tools/make_dimreg_references.py",
            "date": datetime.date.today().isoformat(),
            "machine": "2-core CPU"})
        data["cases"] = {q["name"]: data["cases"][q["name"]] for q in P.CASES
                         if q["name"] in data["cases"]}
        os.makedirs(os.path.dirname(a.out), exist_ok=True)
        tmp = a.out + ".tmp"
        with open(tmp, "w") as f:
            f.write(_dumps(data) + "\n")
        os.replace(tmp, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
