"""Amplitudes (loopint/amplitude.py): weighted sums of integrals with a shared error budget.

References: the one-loop triangles in D = 4 and bubbles in D = 2 in closed form / 1-D mpmath
(tests/physical_points.py, 30 digits), the boxes computed on their own at rtol 1e-12; the sum
is checked against sum_i c_i I_i of those, its error estimate against the true error.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import loopint
from loopint.amplitude import amplitude, build, load_amplitude, share_budget
from loopint.bench.amplitude_case import each_at_rtol
from loopint.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parent))
import physical_points as pp  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "diagrams" / "amplitude"
BUNDLED = FOLDER / "amplitude_box_triangles.toml"
KIN = {"s": -5.0, "t": -6.0, "q1": -1.0, "q2": -2.0, "q3": -3.0, "q4": -4.0, "m": 1.0}

# triangle file -> its invariants (p1^2, p2^2, p3^2) in the symbols of KIN
TRIANGLES = {"triangle_s34.toml": ("s", "q3", "q4"), "triangle_1t4.toml": ("q1", "t", "q4"),
             "triangle_12s.toml": ("q1", "q2", "s"), "triangle_23t.toml": ("q2", "q3", "t")}


def triangle_ref(name, kin):
    a, b, c = (kin[x] for x in TRIANGLES[name])
    return pp.triangle_d4(a, b, c, kin["m"], kin["m"], kin["m"])


def bubble_ref(inv, kin):
    return pp.bubble_d2(kin[inv], kin["m"], kin["m"])


def bubble_diagram():
    return loopint.Diagram.from_graph(internal_lines=[["m", [1, 2]], ["m", [2, 1]]],
                                      external_lines=[["p1", 1], ["p2", 2]],
                                      scalar_products={"p1*p1": "s"}, dimension=2)


# ------------------------------------------------------------------------------- the rule
def test_share_budget_gives_small_terms_looser_relative_tolerances():
    """Equal costs: shares sum to tau, and share/|T| falls as |T| grows (alpha = 2: share
    proportional to s^(1/3) with s = r |T| the pilot's errors at a common relative error r)."""
    T = np.array([1.0, 1e-2, 1e-4])
    s = 1e-3 * T[:, None]
    sigma, kept, _ = share_budget(s, [1000, 1000, 1000], np.array([1e-6]), [2.0] * 3,
                                        frozen=[False] * 3)
    assert not kept.any()
    assert sigma.sum() == pytest.approx(1e-6, rel=1e-12)
    rel = sigma[:, 0] / T
    assert rel[0] < rel[1] < rel[2]
    assert sigma[1, 0] / sigma[0, 0] == pytest.approx((1e-2) ** (1 / 3), rel=1e-9)
    # a term already within its share keeps its error, and the rest is shared again
    s2 = np.array([[1e-4], [1e-12], [1e-4]])
    sigma2, kept2, offered2 = share_budget(s2, [1, 1, 1], np.array([1e-6]), [2.0] * 3)
    assert kept2[1, 0] and not kept2[0, 0] and not kept2[2, 0]
    assert sigma2[1, 0] == 1e-12 and offered2[1, 0] >= 1e-12
    assert sigma2.sum() == pytest.approx(1e-6, rel=1e-12)


# ------------------------------------------------------------------------------- correctness
@pytest.fixture(scope="module")
def box_reference():
    """The box at rtol 1e-12 on its own (independent of the amplitude's runs)."""
    r = loopint.compute(loopint.load(FOLDER / "box.toml"), rtol=1e-12)
    assert r.converged
    return complex(r.value), abs(r.error)


def test_sum_against_closed_forms(box_reference):
    """Terms given as files, a Problem and a Diagram; coefficients as expressions and
    numbers; the sum within its error of the reference, the error within its tolerance."""
    terms = [("s*t/2", str(FOLDER / "box.toml")),
             ("-t", str(FOLDER / "triangle_s34.toml")),
             ("-s/100", loopint.load(FOLDER / "triangle_1t4.toml")),
             (0.25, str(FOLDER / "triangle_12s.toml")),
             ("(s - 4*m**2)/(s - t)/1000", bubble_diagram())]
    r = amplitude(terms, KIN, rtol=1e-9)
    ref = (KIN["s"] * KIN["t"] / 2 * box_reference[0]
           - KIN["t"] * triangle_ref("triangle_s34.toml", KIN)
           - KIN["s"] / 100 * triangle_ref("triangle_1t4.toml", KIN)
           + 0.25 * triangle_ref("triangle_12s.toml", KIN)
           + (KIN["s"] - 4) / (KIN["s"] - KIN["t"]) / 1000 * bubble_ref("s", KIN))
    assert r.converged, r.status
    true = abs(complex(r.value) - ref)
    est = abs(complex(r.error))
    assert est <= r.tolerance
    assert true <= 2 * est + 1e-15 * abs(ref), (true, est)
    assert true <= 1e-9 * abs(ref)
    assert len(r.terms) == 5 and r.terms[4].name and r.terms[0].file.endswith("box.toml")
    for t in r.terms:                     # each term's contribution is c * I
        assert complex(t.contribution) == pytest.approx(complex(t.coefficient_value) *
                                                        complex(t.value), rel=1e-14)
    d = json.loads(json.dumps(r.to_dict()))
    assert d["converged"] and len(d["terms"]) == 5 and d["value"][0] == r.value.real


def test_budget_gives_large_terms_tighter_tolerances():
    """Two triangles, weights 1 and 1e-4: the small term's relative tolerance (3e-6) is looser
    than rtol, the large one's tighter, and the small one, whose pilot at 1e-6 already meets
    it, is not recomputed after its pilot."""
    r = amplitude([("1", str(FOLDER / "triangle_s34.toml")),
                   ("1/10000", str(FOLDER / "triangle_1t4.toml"))], KIN, rtol=1e-9,
                  pilot_rtol=1e-6)
    assert r.converged, r.status
    big, small = r.table()
    assert big["relative_tolerance"] < 1e-9 < small["relative_tolerance"]
    assert r.terms[1].runs == 1 and r.terms[0].runs == 2
    ref = triangle_ref("triangle_s34.toml", KIN) + 1e-4 * triangle_ref("triangle_1t4.toml", KIN)
    assert abs(complex(r.value) - ref) <= 2 * abs(complex(r.error))


def test_fewer_evaluations_than_each_term_at_rtol():
    """The box with weight 1 and the D = 6 and dotted boxes with weights 1e-4: the small
    terms are done at their pilots, so the sum costs less than every box at rtol; and it is
    as accurate as needed."""
    terms = [("1", str(FOLDER / "box.toml")), ("1/10000", str(FOLDER / "box_d6.toml")),
             ("1/10000", str(FOLDER / "box_dot.toml"))]
    r = amplitude(terms, KIN, rtol=1e-8, method="iterated")
    each = each_at_rtol(build(terms, KIN), 1e-8, method="iterated")
    assert r.converged, r.status
    assert r.evaluations < 0.8 * each["evaluations"], (r.evaluations, each["evaluations"])
    assert abs(complex(r.value) - each["value"]) <= abs(complex(r.error)) + abs(each["error"])


def test_batched_points_against_closed_forms():
    """s as an array: one batched computation per integral, tau per point."""
    kin = dict(KIN, s=np.array([-5.0, -2.0, -0.5]))
    r = amplitude([("-t", str(FOLDER / "triangle_12s.toml")),
                   ("s/10", str(FOLDER / "bubble_d2_s.toml")),
                   ("q1", str(FOLDER / "bubble_d2_q1.toml"))], kin, rtol=1e-8)
    assert r.converged, r.status
    assert np.shape(r.value) == (3,)
    for k, s in enumerate(kin["s"]):
        pk = dict(KIN, s=s)
        ref = (-pk["t"] * triangle_ref("triangle_12s.toml", pk) + s / 10 * bubble_ref("s", pk)
               + pk["q1"] * bubble_ref("q1", pk))
        assert abs(r.value[k] - ref) <= max(2 * abs(r.error[k]), 1e-14 * abs(ref))
        assert abs(r.error[k]) <= r.tolerance[k]


def test_unconverged_term_is_named():
    r = amplitude([("1", str(FOLDER / "box.toml")), ("1", str(FOLDER / "bubble_d2_s.toml"))],
                  KIN, rtol=1e-10, max_evals=2000)
    assert not r.converged and r.error_kind == "lower bound"
    assert "terms[0]" in r.status and "box-D4" in r.status


def test_zero_coefficient_is_not_computed():
    r = amplitude([("s - s", str(FOLDER / "box.toml")), ("1", str(FOLDER / "bubble_d2_s.toml"))],
                  KIN, rtol=1e-8)
    assert r.converged and r.terms[0].runs == 0 and r.terms[0].evaluations == 0
    assert complex(r.value) == pytest.approx(bubble_ref("s", KIN), rel=1e-8)


# ------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("terms, kin, words", [
    ([], KIN, ["terms", "empty amplitude"]),
    ([("s*u", str(FOLDER / "box.toml"))], KIN, ["terms[0]", "unknown symbol 'u'"]),
    ([("1", "no/such/file.toml")], KIN, ["terms[0]", "not found"]),
    ([("1/(s + 5)", str(FOLDER / "bubble_d2_s.toml"))], KIN, ["terms[0]", "not finite"]),
    ([("__import__('os')", str(FOLDER / "box.toml"))], KIN, ["terms[0]"]),
    ([("1", bubble_diagram())], {"s": -5.0}, ["terms[0]", "no value for m"]),
])
def test_bad_input_api(terms, kin, words):
    with pytest.raises(loopint.SpecError) as e:
        amplitude(terms, kin)
    for w in words:
        assert w in str(e.value), str(e.value)


def write(tmp_path, text, name="amp.toml"):
    (tmp_path / "box.toml").write_text((FOLDER / "bubble_d2_s.toml").read_text())
    p = tmp_path / name
    p.write_text(text)
    return p


GOOD_TERM = '[[amplitude.term]]\ncoefficient = "s/2"\ndiagram = "box.toml"\n'
KIN_TABLE = "[kinematics]\ns = -5.0\nm = 1.0\n"


@pytest.mark.parametrize("text, words", [
    ('[amplitude]\nname = "x"\n' + KIN_TABLE, ["amplitude.term", "empty amplitude"]),
    ('[amplitude]\n[[amplitude.term]]\ncoefficient = "s*u"\ndiagram = "box.toml"\n' + KIN_TABLE,
     ["amplitude.term[0].coefficient", "unknown symbol 'u'"]),
    ('[amplitude]\n' + GOOD_TERM + '[[amplitude.term]]\ncoefficient = 1\ndiagram = "nope.toml"\n'
     + KIN_TABLE, ["amplitude.term[1].diagram", "not found"]),
    ('[amplitude]\n[[amplitude.term]]\ncoefficient = 1\n' + KIN_TABLE,
     ["amplitude.term[0].diagram", "missing"]),
    ('[amplitude]\n[[amplitude.term]]\ncoefficient = 1\ndiagram = "box.toml"\nweight = 2\n'
     + KIN_TABLE, ["amplitude.term[0].weight", "unknown key"]),
    ('[amplitude]\n' + GOOD_TERM + KIN_TABLE + "[integration]\nrtol = -1\n",
     ["integration.rtol"]),
    ('[amplitude]\n' + GOOD_TERM + KIN_TABLE + "[integration]\nspeed = 1\n",
     ["integration.speed", "unknown setting"]),
    ('[amplitude]\n' + GOOD_TERM + KIN_TABLE + "[diagram]\nname = 'x'\n",
     ["diagram", "unknown table"]),
])
def test_bad_input_file_and_cli(tmp_path, capsys, text, words):
    p = write(tmp_path, text)
    with pytest.raises(loopint.SpecError) as e:
        load_amplitude(p)
    for w in words:
        assert w in str(e.value), str(e.value)
    assert str(p) in str(e.value)
    rc = main(["compute", str(p), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2
    for w in words:
        assert w in err, err


def test_term_file_error_is_prefixed_with_the_key(tmp_path, capsys):
    p = write(tmp_path, '[amplitude]\n[[amplitude.term]]\ncoefficient = 1\ndiagram = "bad.toml"\n'
              + KIN_TABLE)
    (tmp_path / "bad.toml").write_text("[diagram]\ninternal_lines = 3\n")
    rc = main(["compute", str(p), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and "amplitude.term[0].diagram" in err and "bad.toml" in err


def test_cli_compute_bundled_amplitude(tmp_path, capsys):
    out = tmp_path / "amp.json"
    rc = main(["compute", str(BUNDLED), "--rtol", "1e-6", "--json", str(out), "--quiet"])
    text = capsys.readouterr().out
    assert rc == 0, text
    d = json.loads(out.read_text())
    assert d["converged"] and d["rtol"] == 1e-6 and len(d["terms"]) == 11
    assert "amplitude.term[10]" in text and "box-D4" in text
    # the printed value is the JSON's, and the sum of the terms' contributions
    assert sum(t["contribution"][0] for t in d["terms"]) == pytest.approx(d["value"][0],
                                                                          rel=1e-14)
    assert np.hypot(*d["error"]) <= d["tolerance"]


def test_cancelling_sum_meets_its_relative_tolerance():
    """Two terms that cancel to 1 %: tau = rtol |A| is 100 times below rtol |T_i|, so the
    terms are refined beyond rtol; the sum is within tau of the closed form."""
    r = amplitude([("1", str(FOLDER / "triangle_s34.toml")),
                   ("-99/100", str(FOLDER / "triangle_s34.toml"))], KIN, rtol=1e-7)
    ref = 0.01 * triangle_ref("triangle_s34.toml", KIN)
    assert r.converged, r.status
    assert abs(complex(r.error)) <= r.tolerance
    assert abs(complex(r.value) - ref) <= max(2 * abs(complex(r.error)), 1e-15)
    assert all(row["relative_tolerance"] < 1e-7 for row in r.table())


def test_exact_cancellation_is_not_reported_converged():
    """A sum that is exactly zero has tau = rtol * 0 = 0 without atol: it cannot converge,
    and says so; with an atol it does."""
    terms = [("1", str(FOLDER / "bubble_d2_s.toml")), ("-1", str(FOLDER / "bubble_d2_s.toml"))]
    r = amplitude(terms, KIN, rtol=1e-8)
    assert not r.converged and "above its tolerance" in r.status
    r = amplitude(terms, KIN, rtol=1e-8, atol=1e-6)
    assert r.converged and abs(complex(r.value)) <= 1e-6
