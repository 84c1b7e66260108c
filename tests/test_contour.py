"""Contour deformation (``contour = "deform"``): the physical region at delta = 0 on a deformed
contour in the primary sectors, a second method beside the delta sequence.

Checked against closed forms (C0 above threshold), against the undeformed integral where no
deformation is needed (Euclidean points, 2 and 3 dimensions: the Jacobian determinant), for
independence of the deformation strength, and for an invalid deformation being reported.
"""

import os

import numpy as np
import pytest

import loopint
from loopint.engines import cubature
from loopint.lower import Integrand
from loopint.problem import load

HERE = os.path.dirname(__file__)
DIAGRAMS = os.path.join(HERE, "..", "diagrams")


def _cube(f, ndim, rtol):
    return cubature.integrate_box(f, np.zeros(ndim), np.ones(ndim), rtol=rtol, max_evals=10**8)


def test_c0_above_threshold_matches_closed_form():
    p = load(os.path.join(DIAGRAMS, "triangle_above_threshold.toml"))
    r = loopint.compute(p, contour="deform", rtol=1e-9)
    ref = p.reference.value
    assert r.converged and r.region == "physical" and r.table == []
    assert r.info["regulated"]["contour"] == "deform"
    diff = r.value - ref
    assert abs(diff) <= 1e-9 * abs(ref)
    # honest: each part's true error within 3x its estimate (plus round-off)
    assert abs(diff.real) <= 3 * r.error.real + 1e-14
    assert abs(diff.imag) <= 3 * r.error.imag + 1e-14


def test_result_does_not_depend_on_lambda():
    p = load(os.path.join(DIAGRAMS, "triangle_above_threshold.toml"))
    ig = Integrand(p.diagram, domain="sectors")
    lam = ig.deformation_lambda(p.kinematics)
    assert 0 < lam <= 1
    vals = []
    for scale in (1.0, 0.3):
        r = _cube(ig.bind_deformed(p.kinematics, scale * lam), ig.ndim, 1e-9)
        assert r.converged
        vals.append(complex(np.asarray(r.value).reshape(-1)[0]))
    assert abs(vals[0] - vals[1]) <= 1e-8 * abs(vals[0])


@pytest.mark.parametrize("fname", ["triangle_below_threshold.toml", "box_massless_offshell.toml"])
def test_deformation_leaves_euclidean_integrals_unchanged(fname):
    """Where F > 0 no deformation is needed, but any valid one must give the same number:
    checks the complex Jacobian det(dz/dt) (2x2 and 3x3) and the complex U, F."""
    p = load(os.path.join(DIAGRAMS, fname))
    ig = Integrand(p.diagram, domain="sectors")
    kin = ig.kinematics_array(p.kinematics)
    plain = _cube(ig.bind(kin, [0.0]), ig.ndim, 1e-9)
    deformed = _cube(ig.bind_deformed(kin, 0.5 * ig.deformation_lambda(kin)), ig.ndim, 1e-9)
    assert plain.converged and deformed.converged
    a = complex(np.asarray(plain.value).reshape(-1)[0])
    b = complex(np.asarray(deformed.value).reshape(-1)[0])
    assert abs(a - b) <= 1e-8 * abs(a)


def test_wrong_direction_is_reported_not_converged():
    """lam < 0 moves the contour to Im F > 0 (the wrong side of the pole): NaN points,
    counted by the engine, never a converged number."""
    p = load(os.path.join(DIAGRAMS, "triangle_above_threshold.toml"))
    ig = Integrand(p.diagram, domain="sectors")
    r = _cube(ig.bind_deformed(p.kinematics, -0.3), ig.ndim, 1e-6)
    assert not r.converged
    assert "nonfinite" in r.status


def test_refusals():
    p = load(os.path.join(DIAGRAMS, "triangle_above_threshold.toml"))
    with pytest.raises(ValueError, match="sectors"):
        Integrand(p.diagram, domain="sequential").bind_deformed(p.kinematics, 0.1)
    ig = Integrand(p.diagram, domain="sectors")
    with pytest.raises(ValueError, match="one kinematic point"):
        ig.bind_deformed({"s": [10.0, 12.0], "m": 1.0}, 0.1)
    with pytest.raises(ValueError, match="cube engine"):
        loopint.compute(p, contour="deform", method="iterated")


def test_cli_contour(capsys):
    from loopint.cli import main
    f = os.path.join(DIAGRAMS, "triangle_above_threshold.toml")
    assert main(["compute", f, "--contour", "deform", "--method", "iterated", "--quiet"]) == 2
    assert "cube engine" in capsys.readouterr().err
    assert main(["compute", f, "--contour", "deform", "--rtol", "1e-8", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "converged" in out and "cubature" in out
