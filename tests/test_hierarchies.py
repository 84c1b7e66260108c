"""Masses many orders of magnitude apart: a light mass is a scale, not a zero.

A coefficient of F that is small without cancelling (the square of a light mass) keeps its
monomial (:data:`loopint.divergence.ZERO_COEFFICIENT` compares a coefficient with its own
terms, not with the largest coefficient), so that a photon mass regulates the soft
singularity it is there for and a light line changes the value; the Euclidean points are
integrated over the decomposed sectors, where every face lies at t = 0 and floating point
resolves scales down to 1e-14, without extrapolation toward the ends (which would continue
the massless behaviour below the resolved scales).  References: closed forms and one-
dimensional mpmath integrals (``tests/physical_points.py``), each in two unit systems.
"""

import math

import mpmath
import pytest

import loopint
from loopint.divergence import analyze, divergence_message
from physical_points import bubble_d2, triangle_d4

BUBBLE = dict(internal_lines=[["m1", [1, 2]], ["m2", [2, 1]]],
              external_lines=[["p1", 1], ["p2", 2]], scalar_products={"p1*p1": "psq"})
VERTEX = dict(internal_lines=[["lam", [1, 2]], ["me", [2, 3]], ["me", [3, 1]]],
              external_lines=[["p1", 1], ["p2", 2], ["p3", 3]],
              scalar_products={"p1*p1": "p1sq", "p2*p2": "me**2",
                               "p1*p2": "(s - p1sq - me**2)/2"})


def bubble_d3(s, m1, m2, dps=30) -> float:
    """The one-loop bubble in D = 3, Euclidean (s < 0), pySecDec's normalization:
    Gamma(1/2) int_0^1 du F^(-1/2), F = -s u(1-u) + m1^2 (1-u) + m2^2 u, by mpmath.quad
    split at the scale m1^2/(m2^2 - s) where F's constant term takes over."""
    with mpmath.workdps(dps):
        s, m1, m2 = (mpmath.mpf(v) for v in (s, m1, m2))
        scale = m1 ** 2 / (m2 ** 2 - s)
        pts = [0] + [p for p in (scale, 100 * scale, 1e4 * scale) if p < 1] + [1]
        f = lambda u: (-s * u * (1 - u) + m1 ** 2 * (1 - u) + m2 ** 2 * u) ** -0.5  # noqa: E731
        return float(mpmath.sqrt(mpmath.pi) * mpmath.quad(f, pts))


def test_a_light_mass_keeps_its_monomial_and_a_cancellation_to_round_off_does_not():
    """A photon mass of 1e-7 beside m_e = 1 regulates the soft singularity: its monomials
    lam^2 x1^2 and lam^2 x1 x2 stay (convergent), while the on-shell combination
    lam^2 + m_e^2 - p1^2 of x1 x3, 1e-14 of its terms, counts as on-shell; photon mass 0 is
    soft divergent (the error points to dimensional regularization); an on-shell leg given
    as floats whose squares differ by round-off (p1^2 = 0.3, m_e = sqrt(0.3)) drops the
    monomial as an exact zero would."""
    d = loopint.Diagram.from_graph(**VERTEX, dimension=4)
    light = analyze(d, {"lam": 1e-7, "me": 1.0, "p1sq": 1.0, "s": -1.0})
    assert light.convergent and light.vanishing_coefficients == ("F:x1*x3",)
    massless = analyze(d, {"lam": 0.0, "me": 1.0, "p1sq": 1.0, "s": -1.0})
    assert not massless.convergent and "soft" in massless.kinds
    assert set(massless.vanishing_coefficients) == {"F:x1^2", "F:x1*x2", "F:x1*x3"}
    assert 'dimension = "4 - 2*eps"' in divergence_message(massless)
    me = math.sqrt(0.3)
    assert me * me != 0.3                      # the two floats differ in the last bits
    rounded = analyze(d, {"lam": 0.0, "me": me, "p1sq": 0.3, "s": -1.0})
    exact = analyze(d, {"lam": 0.0, "me": 1.0, "p1sq": 1.0, "s": -1.0})
    assert rounded.vanishing_coefficients == exact.vanishing_coefficients != ()
    assert rounded.convergent == exact.convergent


@pytest.mark.parametrize("scale", [1.0, 100.0])
def test_qed_vertex_with_a_small_photon_mass(scale):
    """The on-shell vertex (p1^2 = p2^2 = m_e^2, s = -m_e^2) with photon mass 1e-7 m_e: finite,
    converged to rtol 1e-6 within the tolerance of the 1-D mpmath reference, in units m_e = 1
    and m_e = 100 (the value scales as mass^-2)."""
    d = loopint.Diagram.from_graph(**VERTEX, dimension=4)
    kin = {"lam": 1e-7 * scale, "me": scale, "p1sq": scale ** 2, "s": -scale ** 2}
    ref = triangle_d4(1, 1, -1, 1e-7, 1, 1).real / scale ** 2
    r = loopint.compute(d, kinematics=kin, rtol=1e-6)
    assert r.converged, r.status
    assert abs(complex(r.value) - ref) <= 1e-6 * abs(ref)


@pytest.mark.parametrize("scale", [1.0, 100.0])
def test_bubble_in_three_dimensions_feels_a_light_mass(scale):
    """D = 3 bubble, m1 = 1e-7, m2 = 1, s = -1 at rtol 1e-10: the value depends on m1
    linearly (6.4e-8 of it), so a run that extrapolates the massless behaviour or drops
    m1^2 is off by 6e-8 while it claims 1e-10.  Converged within the tolerance, in both
    unit systems (the value scales as mass^-1), with the same number of evaluations."""
    d = loopint.Diagram.from_graph(**BUBBLE, dimension=3)
    ref = bubble_d3(-1, 1e-7, 1)
    assert abs(ref - bubble_d3(-1, 0, 1)) > 1e-8 * ref          # m1 matters at this rtol
    runs = []
    for s in (1.0, scale):
        r = loopint.compute(d, kinematics={"psq": -s * s, "m1": 1e-7 * s, "m2": s},
                            rtol=1e-10)
        assert r.converged, r.status
        assert abs(complex(r.value) * s - ref) <= 1e-10 * ref
        runs.append(r.evaluations)
    assert abs(runs[1] - runs[0]) <= 0.1 * runs[0]


@pytest.mark.parametrize("scale", [1.0, 100.0])
def test_bubble_in_two_dimensions_across_twelve_orders_of_magnitude(scale):
    """D = 2 bubble with masses 1e-3 and 1e3 (F from 1e-6 to 1e6 over the simplex) at
    s = -1, rtol 1e-8: converged within the tolerance of the closed form, and its error
    estimate covers the true error (the simplex's far faces cannot resolve the scale)."""
    d = loopint.Diagram.from_graph(**BUBBLE, dimension=2)
    ref = bubble_d2(-1, 1e-3, 1e3).real / scale ** 2
    r = loopint.compute(d, kinematics={"psq": -scale ** 2, "m1": 1e-3 * scale,
                                       "m2": 1e3 * scale}, rtol=1e-8)
    assert r.converged, r.status
    true = abs(complex(r.value) - ref)
    assert true <= 1e-8 * abs(ref) and true <= abs(complex(r.error)) + 1e-15 * abs(ref)
