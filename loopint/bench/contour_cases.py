"""Benchmark of the deformed contour's QMC options (:data:`loopint.plan.CONTOUR_QMC`).

Each variant of lattice and periodizing transform in :data:`VARIANTS` (the first is the
default) runs, with ``contour="deform"`` and seeds 1..6 (warm: a seed-100 run compiles first):

* ``k5``: ``diagrams/ladder_vertex_2L_k5.toml`` at rtol 1e-6 (its pySecDec reference);
* ``k4.5``: the same ladder at k^2/m_t^2 = 4.5, just above its 4 m_t^2 threshold, at rtol
  1e-6 (no reference: ``spread`` compares the seeds);
* ``elliptic``: pySecDec's example ``elliptic2L_physical``, the two-loop box with an elliptic
  sunrise subtopology at s = 90, t = -2.5, p4^2 = 1.6, m^2 = 1, at rtol 1e-5, defined here by
  its propagators as in pySecDec; its reference is the physical test set's point
  ``elliptic2L_s90`` (the same integral from its graph: pySecDec 1.6.6 at epsrel 1e-8,
  ``tests/data/physical_references.json``, read from the source checkout);

and, with ``--scan``, the 100-point ladder scan of :mod:`loopint.bench.scan_cases` at rtol 1e-4.

    python -m loopint.bench.contour_cases [--scan] [--json out.json]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from .. import plan
from ..compute import compute, device_name
from ..diagram import Diagram
from ..problem import load
from .physical_cases import points_module

VARIANTS = (("cbc", "korobov3"), ("cbc", "korobov5"), ("embedded", "korobov3"))
SEEDS = range(1, 7)
HERE = os.path.dirname(__file__)
K5 = os.path.normpath(os.path.join(HERE, "..", "..", "diagrams", "ladder_vertex_2L_k5.toml"))


def elliptic() -> tuple[Diagram, dict]:
    """pySecDec's ``elliptic2L_physical`` and its kinematic point."""
    d = Diagram.from_propagators(
        ["k1", "k2"],
        ["k1**2 - msq", "(k1 + p1 + p2)**2 - msq", "(k2 + p1 + p2)**2 - msq",
         "(k1 + p1)**2 - msq", "(k1 - k2)**2", "(k2 - p3)**2 - msq"],
        external_momenta=["p1", "p2", "p3"],
        scalar_products={"p1*p1": "0", "p2*p2": "0", "p3*p3": "0", "p1*p2": "s/2",
                         "p2*p3": "pp4/2 - s/2 - t/2", "p1*p3": "t/2"},
        name="elliptic-2L-physical")
    return d, {"s": 90.0, "t": -2.5, "pp4": 1.6, "msq": 1.0}


def _with(variant):
    """Set the contour's QMC options to ``variant``; returns the previous ones."""
    old = dict(plan.CONTOUR_QMC)
    plan.CONTOUR_QMC.update(lattice=variant[0], periodize=variant[1])
    return old


def _seeds(name, target, kin, rtol, variant, reference, ref_error=0.0) -> dict:
    """Seeds 1..6 of one point; ``true/err (max)``: the largest deviation from ``reference``
    of a converged run's real or imaginary part, in units of its estimate plus the
    reference's error."""
    compute(target, kin, rtol=rtol, contour="deform", seed=100)
    secs, evals, conv, values, worst = [], [], 0, [], 0.0
    for seed in SEEDS:
        t0 = time.perf_counter()
        r = compute(target, kin, rtol=rtol, contour="deform", seed=seed)
        secs.append(time.perf_counter() - t0)
        evals.append(r.evaluations)
        conv += bool(r.converged)
        v, e = complex(r.value), complex(r.error)
        values.append(v)
        if reference is not None and r.converged:
            worst = max(worst, abs(v.real - reference.real) / (e.real + ref_error),
                        abs(v.imag - reference.imag) / (e.imag + ref_error))
    values = np.array(values)
    return {"case": f"{name} rtol {rtol:g}", "method": f"{variant[0]} {variant[1]}",
            "converged": f"{conv}/{len(SEEDS)}", "evaluations": f"{min(evals):.2g}-{max(evals):.2g}",
            "seconds": f"{min(secs):.2f}-{max(secs):.2f}",
            "value": complex(values.mean()),
            "spread": float(max(np.ptp(values.real), np.ptp(values.imag))),
            "true/err (max)": worst if reference is not None else "-", "device": device_name()}


def run(scan: bool = False) -> list[dict]:
    from . import format_table, scan_cases
    k5 = load(K5)
    ref, ref_error = complex(k5.reference.value), float(k5.reference.error)
    ell, ell_kin = elliptic()
    pp = points_module()
    ell_ref, ell_error, _ = pp.reference(pp.POINTS_BY_ID["elliptic2L_s90"])
    rows = []
    for variant in VARIANTS:
        old = _with(variant)
        try:
            rows.append(_seeds("k5", k5, None, 1e-6, variant, ref, ref_error))
            rows.append(_seeds("k4.5", k5, {**k5.kinematics, "k2": 4.5}, 1e-6, variant, None))
            rows.append(_seeds("elliptic", ell, ell_kin, 1e-5, variant, ell_ref, ell_error))
            if scan:
                for r in scan_cases.run(points=(0, 0, 100)):
                    rows.append({**r, "method": f"{variant[0]} {variant[1]}"})
        finally:
            plan.CONTOUR_QMC.clear()
            plan.CONTOUR_QMC.update(old)
        per = 4 if scan else 3
        print(format_table(rows[-per:], header=len(rows) <= per), flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scan", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    rows = run(a.scan)
    if a.json:
        from ..io import write_json_atomic
        write_json_atomic(a.json, {"rows": rows, "date": time.strftime("%Y-%m-%d")})
    return 0


if __name__ == "__main__":
    sys.exit(main())
