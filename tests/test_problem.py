"""Reading diagram files (loopint/problem.py; DESIGN 4.2): load(path) -> Problem, Settings,
SpecError.  The full catalogue of bad files is exercised through the command line in
test_cli_show.py; here: the bundled library loads, the three input forms agree, settings
and kinematics are validated, and every SpecError names the file and the key."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import sympy

from loopint.diagram import Diagram
from loopint.errors import SpecError
from loopint.problem import (Problem, Settings, check_kinematics, load, problem_from_dict,
                             validate_settings)

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted((ROOT / "diagrams").glob("*.toml"))

TRIANGLE = '''
[diagram]
name = "tri"
dimension = 4
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


def write(tmp_path, text, name="case.toml"):
    f = tmp_path / name
    f.write_text(text)
    return f


def refused(tmp_path, text, key, fragment=""):
    """load() raises SpecError whose message starts with the file and names the key."""
    f = write(tmp_path, text)
    with pytest.raises(SpecError) as e:
        load(f)
    msg = str(e.value)
    assert msg.startswith(f"{f}: "), msg
    assert key in msg, msg
    assert fragment in msg, msg
    return msg


# --------------------------------------------------------------------------- the library
@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_bundled_files_load(path):
    p = load(path)
    assert isinstance(p, Problem) and p.path == str(path)
    assert set(p.diagram.kinematic_symbols) <= set(p.kinematics)
    assert all(isinstance(v, float) and math.isfinite(v) for v in p.kinematics.values())
    assert p.settings.prefactor == "pysecdec"
    if p.reference is not None:
        assert isinstance(p.reference.value, complex) and p.reference.source


def test_bundled_references_state_their_source():
    """DESIGN 2: a reference value where one is known, and where it came from.  (The pentagon
    file has none yet: REFERENCES.md asks for a cross-checked value at its physical point.)"""
    for path in FILES:
        p = load(path)
        if p.reference is not None:
            assert len(p.reference.source) > 10, path


def test_reference_values_match_references_md():
    """Spot checks against REFERENCES.md (closed forms recomputed here with mpmath)."""
    import mpmath
    mpmath.mp.dps = 30
    below = load(ROOT / "diagrams" / "triangle_below_threshold.toml")
    assert below.reference.value == pytest.approx(complex(-2 * mpmath.asin(mpmath.sqrt(0.25)) ** 2),
                                                  rel=1e-15)
    above = load(ROOT / "diagrams" / "triangle_above_threshold.toml")
    b = mpmath.sqrt(1 - 4 / mpmath.mpf(10))
    want = (mpmath.log((1 + b) / (1 - b)) - 1j * mpmath.pi) ** 2 / 20
    assert above.reference.value == pytest.approx(complex(want), rel=1e-15)
    t51 = load(ROOT / "diagrams" / "table51_2L.toml")
    # bare Table 5.1 value 8.5351398153893e-2 includes Gamma(3) = 2; pySecDec prefactor -2
    assert t51.reference.value.real == pytest.approx(-8.5351398153893e-2, rel=1e-13)


# --------------------------------------------------------------------------- the three forms
def test_graph_propagator_and_polynomial_files_agree(tmp_path):
    g = load(write(tmp_path, TRIANGLE, "g.toml")).diagram
    prop = load(write(tmp_path, '''
[diagram]
loop_momenta = ["k"]
external_momenta = ["p1", "p2"]
propagators = ["k**2 - m**2", "(k + p2)**2 - m**2", "(k - p1)**2 - m**2"]
[diagram.scalar_products]
"p1*p1" = "0"
"p2*p2" = "0"
"p1*p2" = "s/2"
[kinematics]
s = 1.0
m = 1.0
''', "p.toml")).diagram
    poly = load(write(tmp_path, f'''
[diagram]
loops = 1
variables = ["x1", "x2", "x3"]
U = "x1 + x2 + x3"
F = "{g.F}"
[kinematics]
s = 1.0
m = 1.0
''', "u.toml")).diagram
    for d in (prop, poly):
        assert sympy.expand(d.U - g.U) == 0 and sympy.expand(d.F - g.F) == 0
        assert (d.U_exponent, d.F_exponent) == (g.U_exponent, g.F_exponent)
    assert (g.form, prop.form, poly.form) == ("graph", "propagators", "polynomials")
    assert g.name == "tri" and prop.name == "p"          # default name: the file's stem


@pytest.mark.parametrize("edit, key, fragment", [
    (lambda t: t.replace("[diagram]\n", '[diagram]\nloop_momenta = ["k"]\n'), "diagram.loop_momenta",
     "does not belong to the graph form"),
    (lambda t: t.replace("[diagram]\n", '[diagram]\npropagators = ["k**2"]\n'), "diagram",
     "give exactly one of"),
    (lambda t: t.replace("[diagram]\n", '[diagram]\nU = "x1"\n'), "diagram", "give exactly one of"),
    (lambda t: t.replace('name = "tri"', "name = 3"), "diagram.name", "must be a string"),
    (lambda t: t.replace("dimension = 4", 'dimension = "four"'), "diagram.dimension", "positive number"),
    (lambda t: t.replace("dimension = 4", "dimension = -2"), "diagram.dimension", "positive number"),
    (lambda t: t.replace("dimension = 4", "dimension = nan"), "diagram.dimension", "positive number"),
    (lambda t: t.replace("[diagram.scalar_products]", "[diagram.scalar_products]\n'p1*p3' = '0'"),
     "diagram.scalar_products", "eliminated momentum"),
])
def test_form_and_structure_errors(tmp_path, edit, key, fragment):
    refused(tmp_path, edit(TRIANGLE), key, fragment)


def test_polynomial_form_needs_its_keys(tmp_path):
    refused(tmp_path, '[diagram]\nU = "x1+x2"\nF = "x1*x2"\nvariables = ["x1", "x2"]\n',
            "diagram.loops", "missing")
    refused(tmp_path, '[diagram]\nU = "x1+x2"\nF = "x1*x2"\nvariables = ["x1", "x2"]\nloops = 1\n'
            '[diagram.scalar_products]\n"p*p" = "1"\n', "diagram.scalar_products", "not used")
    refused(tmp_path, '[diagram]\nU = "x1+x2"\nF = "x1*x2*x3"\nvariables = ["x1", "x2"]\nloops = 1\n',
            "diagram.F", "unknown symbol 'x3'")
    refused(tmp_path, '[diagram]\nU = "x1+x2"\nF = "x1*x2"\nvariables = ["x1", "x1"]\nloops = 1\n',
            "diagram.variables", "repeated")


def test_missing_kinematic_value_is_explained(tmp_path):
    msg = refused(tmp_path, TRIANGLE.replace("s = 1.0\n", ""), "diagram.scalar_products",
                  "unknown symbol 's'")
    assert "[kinematics]" in msg


# --------------------------------------------------------------------------- settings
def test_settings_defaults_and_tables(tmp_path):
    p = load(write(tmp_path, TRIANGLE + '''
[integration]
method = "qmc"
rtol = 1e-8
domain = "sectors"
transform = "korobov3"
prefactor = "none"
[regulator]
delta = 0.5
q = 1.5
terms = 12
min_terms = 4
[reference]
value = [1.0, -2.0]
error = [1e-6, 2e-6]
source = "made up"
'''))
    s = p.settings
    assert (s.method, s.rtol, s.domain, s.transform, s.prefactor) == ("qmc", 1e-8, "sectors",
                                                                     "korobov3", "none")
    assert (s.delta, s.delta_q, s.delta_terms, s.delta_min_terms) == (0.5, 1.5, 12, 4)
    assert p.reference.value == 1 - 2j and p.reference.error == 2e-6
    d = Settings()
    assert (d.method, d.delta, d.delta_q, d.prefactor, d.precision) == ("auto", "auto", 1.2,
                                                                       "pysecdec", "float64")
    assert d.updated(rtol=1e-3, method=None).rtol == 1e-3
    assert d.to_dict()["delta_terms"] == 20


@pytest.mark.parametrize("table, line, key", [
    ("integration", 'method = "magic"', "integration.method"),
    ("integration", "rtol = -1e-6", "integration.rtol"),
    ("integration", "rtol = 1e-20", "integration.rtol"),
    ("integration", 'rtol = "tight"', "integration.rtol"),
    ("integration", "max_evals = 0", "integration.max_evals"),
    ("integration", "max_evals = 1.5", "integration.max_evals"),
    ("integration", 'precision = "float16"', "integration.precision"),
    ("integration", 'domain = "cube"', "integration.domain"),
    ("integration", 'transform = "tanh"', "integration.transform"),
    ("integration", 'prefactor = "feynman"', "integration.prefactor"),
    ("integration", "seed = -1", "integration.seed"),
    ("integration", "methd = 'qmc'", "integration.methd"),
    ("integration", "delta = 0.1", "integration.delta"),
    ("regulator", 'delta = "small"', "regulator.delta"),
    ("regulator", "delta = -0.1", "regulator.delta"),
    ("regulator", "q = 1.0", "regulator.q"),
    ("regulator", "terms = 100", "regulator.terms"),
    ("regulator", 'contour = "wiggle"', "regulator.contour"),
    ("regulator", "lambda = -1", "regulator.lambda"),
    ("regulator", "lambda = 0", "regulator.lambda"),
    ("regulator", "foo = 1", "regulator.foo"),
    ("reference", "value = [1.0, 2.0, 3.0]", "reference.value"),
    ("reference", 'value = "big"', "reference.value"),
    ("reference", "error = 1e-3", "reference.value"),        # value missing
    ("reference", "colour = 1", "reference.colour"),
])
def test_bad_settings_name_table_and_key(tmp_path, table, line, key):
    refused(tmp_path, TRIANGLE + f"\n[{table}]\n{line}\n", key)


def test_unknown_integration_setting_lists_the_keys_of_that_table(tmp_path):
    """A misspelled [integration] key names the keys [integration] takes, not the regulator's
    (which [integration] refuses with a pointer to [regulator])."""
    msg = refused(tmp_path, TRIANGLE + "\n[integration]\nrtoll = 1e-8\n", "integration.rtoll",
                  "unknown setting")
    known = msg.split("known: ")[1]
    assert "rtol" in known and "method" in known
    assert not any(k in known for k in ("delta", "contour", "cross_check", "eps_order"))
    refused(tmp_path, TRIANGLE + "\n[integration]\ncontour = 'none'\n", "integration.contour",
            "belong in [regulator]")


def test_validate_settings_directly():
    assert validate_settings({"rtol": 1e-3}).rtol == 1e-3
    with pytest.raises(SpecError, match="unknown setting"):
        validate_settings({"tolerance": 1e-3})
    with pytest.raises(SpecError, match="rtol and atol cannot both be 0"):
        validate_settings({"rtol": 0.0, "atol": 0.0})
    with pytest.raises(SpecError, match="delta_terms"):
        validate_settings({"delta_min_terms": 30, "delta_terms": 10})


# --------------------------------------------------------------------------- kinematics
def test_kinematic_arrays(tmp_path):
    p = load(write(tmp_path, TRIANGLE.replace("s = 1.0", "s = [1.0, 2.0, 3]")))
    assert isinstance(p.kinematics["s"], np.ndarray) and p.kinematics["s"].tolist() == [1, 2, 3]
    for bad, fragment in [("[1.0, 2.0, nan]", "finite"), ("[]", "1-D list"), ("[true, false]", "1-D list"),
                          ('["a", "b"]', "1-D list"), ("[[1.0, 2.0], [3.0]]", "1-D list"),
                          ("[[1.0, 2.0], [3.0, 4.0]]", "1-D list")]:
        refused(tmp_path, TRIANGLE.replace("s = 1.0", f"s = {bad}"), "kinematics.s", fragment)
    refused(tmp_path, TRIANGLE.replace("s = 1.0", "s = [1.0, 2.0]").replace("m = 1.0", "m = [1.0, 2.0, 3.0]"),
            "kinematics", "different lengths")


def test_check_kinematics_for_the_python_api():
    d = load(ROOT / "diagrams" / "triangle_below_threshold.toml").diagram
    with pytest.raises(SpecError, match=r"kinematics: missing value for s"):
        check_kinematics(d, {"m": 1.0})
    with pytest.raises(SpecError, match="kinematics.m: mass m is negative"):
        check_kinematics(d, {"m": -1.0, "s": 1.0})
    with pytest.raises(SpecError, match="kinematics.s: must be finite"):
        check_kinematics(d, {"m": 1.0, "s": math.inf})
    out = check_kinematics(d, {"m": 1, "s": np.linspace(0, 1, 4)})
    assert out["m"] == 1.0 and out["s"].shape == (4,)
    out = check_kinematics(d, {"m": np.int64(1), "s": np.float32(0.5)})   # NumPy scalars
    assert out == {"m": 1.0, "s": 0.5} and all(type(v) is float for v in out.values())
    import jax.numpy as jnp
    out = check_kinematics(d, {"m": np.array(1.0), "s": jnp.asarray([0.5, 1.0])})  # 0-d, JAX
    assert out["m"] == 1.0 and list(out["s"]) == [0.5, 1.0]
    with pytest.raises(SpecError, match="kinematics.s: must be a number"):
        check_kinematics(d, {"m": 1.0, "s": np.bool_(True)})
    bubble = Diagram.from_graph([["0", [1, 2]], ["0", [2, 1]]], [["p", 1], ["q", 2]],
                                {"p*p": "s"}, dimension=3)
    with pytest.raises(SpecError, match="scaleless integral at this kinematic point"):
        check_kinematics(bubble, {"s": 0.0})
    p = load(ROOT / "diagrams" / "triangle_below_threshold.toml")
    assert p.with_kinematics(s=2.0).kinematics["s"] == 2.0
    with pytest.raises(SpecError, match="kinematics.s"):
        p.with_kinematics(s="two")


def test_messages_without_a_path():
    import tomllib
    with pytest.raises(SpecError) as e:
        problem_from_dict(tomllib.loads(TRIANGLE.replace("m = 1.0", "m = -2.0")))
    assert str(e.value).startswith("kinematics.m: ")


def test_file_level_errors(tmp_path):
    missing = tmp_path / "nope.toml"
    with pytest.raises(SpecError, match=r"nope.toml: cannot read file"):
        load(missing)
    f = tmp_path / "latin1.toml"
    f.write_bytes(b'[diagram]\nname = "caf\xe9"\n')
    with pytest.raises(SpecError, match=r"latin1.toml: not UTF-8"):
        load(f)
    bom = tmp_path / "bom.toml"      # a byte-order mark before the text is not TOML's
    bom.write_bytes(b"\xef\xbb\xbf" + TRIANGLE.encode())
    import tomllib
    assert load(bom).kinematics == problem_from_dict(tomllib.loads(TRIANGLE)).kinematics
    big = tmp_path / "big.toml"
    big.write_text("# " + "x" * 1_100_000 + "\n" + TRIANGLE)
    with pytest.raises(SpecError, match=r"big.toml: file larger than"):
        load(big)
    refused(tmp_path, "[diagram\nname = 1\n", "malformed TOML", "line 1")
    refused(tmp_path, "[kinematics]\ns = 1.0\n", "diagram", "missing [diagram] table")
    refused(tmp_path, TRIANGLE + "\nstray = 1\n".replace("stray", "[kinematics2]\nstray"),
            "kinematics2", "unknown table")
    refused(tmp_path, "title = 'x'\n" + TRIANGLE, "title", "unknown table or key")


def test_a_zero_denominator_is_named_not_left_as_a_free_symbol(tmp_path):
    """A scalar product s/(m**2 - 1/100) at m = 0.1 divides by zero (exactly: the floats are
    taken as the rationals they print as); in a file the key is named, through the Python
    API (one point or a scan) the denominator and the point."""
    refused(tmp_path, TRIANGLE.replace('"s/2"', '"s/(m**2 - 1/100)"').replace("m = 1.0", "m = 0.1"),
            "diagram.scalar_products.'p1*p2'", "divides by zero at this kinematic point")
    d = Diagram.from_graph([["m", [1, 2]], ["m", [2, 3]], ["m", [3, 1]]],
                           [["p1", 1], ["p2", 2], ["p3", 3]],
                           {"p1*p1": "0", "p2*p2": "0", "p1*p2": "s/(m - 1)"})
    with pytest.raises(SpecError, match=r"^kinematics: F divides by zero .*m - 1 = 0 at m = 1"):
        check_kinematics(d, {"s": 1.0, "m": 1.0})
    with pytest.raises(SpecError, match=r"m - 1 = 0 at m = 1.0 \(point 2\)"):
        check_kinematics(d, {"s": 1.0, "m": np.array([0.0, 0.5, 1.0, 2.0])})
    assert check_kinematics(d, {"s": 1.0, "m": np.array([0.0, 2.0])})["m"].shape == (2,)
