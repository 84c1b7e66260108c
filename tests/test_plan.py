"""The run plan (loopint/plan.py): what loopint.compute decides once from its Settings.

Covered: the LRU memo and the content-keyed caches of lowered integrands, decompositions and
convergence verdicts; the policy functions (method_for, contour_method, domain_for,
make_engine, engine_domain, physical_methods) and the SpecErrors they raise; RunPlan.at on
bundled diagram files (regions, ndim, prefactor, the stages' method, domain, engine and
tolerances, the delta schedule).  Expected values come from the policy as documented in
Settings and engines.choose_method, the pySecDec prefactor formula evaluated here with
math.gamma, and the closed form of C0 below threshold.  Nothing here runs a long
integration: the stages are built, and only two 2-D cubatures run (the triangle, x y).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from loopint import engines, plan
from loopint.contour import ContourIntegrand
from loopint.diagram import Diagram
from loopint.engines.base import Box, Simplex
from loopint.errors import SpecError
from loopint.plan import (DELTA_RTOL_FACTOR, DELTA_RTOL_FACTOR_CUBATURE, LRU, PILOT_CANDIDATES,
                          DeltaSchedule,
                          RunPlan, contour_method, domain_for, engine_domain, has_blowups,
                          integrand, make_engine, method_for, physical_methods,
                          support_groups, verdict)
from loopint.problem import Settings, load

ROOT = Path(__file__).resolve().parents[1]
DIAGRAMS = ROOT / "diagrams"
CUBE_METHODS = ("cubature", "pagani", "qmc", "mc")


def settings(**kw) -> Settings:
    """Validated Settings with some fields replaced."""
    return Settings().updated(**kw)


def problem(stem: str):
    return load(DIAGRAMS / f"{stem}.toml")


def plan_at(prob, s: Settings | None = None) -> RunPlan:
    """The plan compute() builds for a problem whose points share one support group."""
    probe = integrand(prob.diagram, "simplex", "none", "float64")
    kin = probe.kinematics_array(prob.kinematics)
    groups = support_groups(probe, kin)
    assert len(groups) == 1
    return RunPlan.at(prob, s or prob.settings, probe, *groups[0][:2], kin)


def pysecdec_prefactor(nu: int, loops: int, dimension: float, powers=None) -> float:
    """(-1)^nu Gamma(nu - L D/2) / prod Gamma(nu_j), pySecDec's normalization."""
    den = math.prod(math.gamma(p) for p in (powers or [1] * nu))
    return (-1) ** nu * math.gamma(nu - loops * dimension / 2) / den


@pytest.fixture(scope="module")
def below():
    return problem("triangle_below_threshold")


@pytest.fixture(scope="module")
def above():
    return problem("triangle_above_threshold")


@pytest.fixture(scope="module")
def massless_triangle():
    """U vanishes beyond the primary faces (massless lines): has blow-ups."""
    return problem("triangle_massless_offshell").diagram


@pytest.fixture(scope="module")
def singular_triangle():
    """The on-shell massless triangle at D = 4.1: convergent, with integrable boundary
    singularities (exponent D/2 - 3 = -0.95 on the faces x2 -> 0 and x3 -> 0)."""
    return Diagram.from_graph(
        internal_lines=[["0", [1, 2]], ["0", [2, 3]], ["0", [3, 1]]],
        external_lines=[["p1", 1], ["p2", 2], ["p3", 3]],
        scalar_products={"p1*p1": "0", "p2*p2": "0", "p1*p2": "s/2"}, dimension=4.1)


# --------------------------------------------------------------------------- LRU
class Maker:
    """A ``make`` for LRU.get that counts its calls and returns a fresh object each time."""

    def __init__(self):
        self.calls = 0

    def __call__(self):
        self.calls += 1
        return object()


def test_lru_returns_the_kept_value_without_calling_make_again():
    lru, make = LRU(4), Maker()
    first = lru.get("a", make)
    assert lru.get("a", make) is first
    assert make.calls == 1


def test_lru_evicts_the_least_recently_used_entry():
    lru = LRU(2)
    a, b = lru.get("a", object), lru.get("b", object)
    assert lru.get("a", object) is a          # "a" is now more recent than "b"
    lru.get("c", object)                       # over size: drops "b", the least recent
    assert lru.get("a", object) is a
    assert lru.get("b", object) is not b       # made anew


def test_lru_without_refresh_evicts_the_oldest_insertion():
    lru = LRU(2)
    a = lru.get("a", object)
    lru.get("b", object)
    lru.get("c", object)
    make = Maker()
    assert lru.get("a", make) is not a and make.calls == 1


def test_lru_never_holds_more_than_size_entries():
    lru = LRU(3)
    for k in range(10):
        lru.get(k, object)
        assert len(lru) <= 3
    assert [k for k, _ in lru.items()] == [7, 8, 9]


def test_lru_keeps_nothing_when_make_raises():
    lru = LRU(2)

    def fail():
        raise ValueError("no value")

    with pytest.raises(ValueError):
        lru.get("a", fail)
    make = Maker()
    lru.get("a", make)
    assert make.calls == 1


# --------------------------------------------------------------------------- content caches
@pytest.fixture
def restored_caches():
    """Snapshots the module's caches and puts their entries back after the test, so that
    filling them with test keys does not evict other tests' integrands."""
    caches = (plan.INTEGRANDS, plan.BLOWUPS, plan.VERDICTS)
    saved = [c.items() for c in caches]
    yield caches
    for c, items in zip(caches, saved):
        c.clear()
        for key, value in items:
            c.get(key, lambda value=value: value)


def test_integrand_is_shared_by_diagrams_with_the_same_content(below, above):
    again = problem("triangle_below_threshold")
    assert again.diagram is not below.diagram
    ig = integrand(below.diagram, "sequential", "none", "float64")
    assert integrand(again.diagram, "sequential", "none", "float64") is ig
    # The two triangle files differ only in their kinematic values: same polynomials.
    assert integrand(above.diagram, "sequential", "none", "float64") is ig


def test_integrand_differs_by_domain_transform_precision_and_kind(below, massless_triangle):
    d = below.diagram
    ig = integrand(d, "sequential", "none", "float64")
    others = [integrand(d, "decomposed", "none", "float64"),
              integrand(d, "sequential", "korobov3", "float64"),
              integrand(d, "sequential", "none", "float32"),
              integrand(d, "sequential", "none", "float64", kind=ContourIntegrand),
              integrand(massless_triangle, "sequential", "none", "float64")]
    assert len({id(x) for x in [ig, *others]}) == 6
    assert [x.domain for x in others[:2]] == ["decomposed", "sequential"]
    assert others[1].transform.name == "korobov3"
    assert others[2].precision == "float32"
    assert isinstance(others[3], ContourIntegrand)


def test_verdict_and_blowups_are_cached_by_content(massless_triangle):
    again = problem("triangle_massless_offshell").diagram
    assert again is not massless_triangle
    assert verdict(again) is verdict(massless_triangle)
    assert has_blowups(massless_triangle) is True
    assert has_blowups(problem("triangle_below_threshold").diagram) is False


@pytest.mark.parametrize("name,size", [("INTEGRANDS", 32), ("BLOWUPS", 64),
                                       ("VERDICTS", 64)])
def test_content_caches_stay_within_their_size(restored_caches, name, size):
    cache = getattr(plan, name)
    assert cache.size == size
    for k in range(size + 10):
        cache.get(("test_plan", k), object)
    assert len(cache) == size
    assert ("test_plan", 9) not in cache and ("test_plan", 10) in cache


def test_an_evicted_integrand_is_lowered_anew(restored_caches, below):
    ig = integrand(below.diagram, "sequential", "sidi2", "float64")
    for k in range(plan.INTEGRANDS.size):
        plan.INTEGRANDS.get(("test_plan", k), object)
    assert integrand(below.diagram, "sequential", "sidi2", "float64") is not ig


# --------------------------------------------------------------------------- method
@pytest.mark.parametrize("method", engines.METHODS)
@pytest.mark.parametrize("regulated", [False, True])
def test_method_for_keeps_an_explicit_method(method, regulated, massless_triangle):
    assert method_for(settings(method=method), 4, regulated, massless_triangle) == method


@pytest.mark.parametrize("ndim", range(1, 9))
def test_method_for_auto_follows_choose_method(ndim, massless_triangle):
    s = settings()
    assert method_for(s, ndim, False) == engines.choose_method(ndim, "feynman")
    assert method_for(s, ndim, False, points=40) == \
        engines.choose_method(ndim, "feynman", points=40)
    assert method_for(s, ndim, True) == engines.choose_method(ndim, "regulated")
    # A diagram with blow-ups has its delta terms integrated over the decomposed sectors.
    assert method_for(s, ndim, True, massless_triangle) == \
        engines.choose_method(ndim, "regulated", decomposed=True)
    assert contour_method(s, ndim) == engines.choose_method(ndim, "contour")


def test_method_auto_matches_the_documented_policy(massless_triangle, below):
    # Settings' docstring: iterated up to d = 2 (cubature for several points), the pilot's
    # choice between lattices and cubature from d = 3; the regulated region iterated,
    # cubature for decomposed sectors up to d = 6; contour cubature up to 4.
    s = settings()
    assert [method_for(s, d, False) for d in (1, 2, 3, 6)] == \
        ["iterated", "iterated", "pilot", "pilot"]
    assert [method_for(s, d, False, points=5) for d in (2, 3)] == ["cubature", "pilot"]
    assert make_engine("pilot", s, 4).candidates == tuple(
        make_engine(m, s, 4) for m in PILOT_CANDIDATES)
    assert method_for(s, 6, True, below.diagram) == "iterated"
    assert [method_for(s, d, True, massless_triangle) for d in (6, 7)] == ["cubature", "iterated"]
    assert [contour_method(s, d) for d in (4, 5)] == ["cubature", "qmc"]


@pytest.mark.parametrize("method", CUBE_METHODS)
def test_contour_method_keeps_an_explicit_cube_method(method):
    assert contour_method(settings(method=method), 3) == method


def test_contour_method_refuses_iterated():
    with pytest.raises(SpecError, match=r"^method: .*'iterated'"):
        contour_method(settings(method="iterated"), 2)


# --------------------------------------------------------------------------- domain
def test_domain_auto_is_the_simplex_for_iterated_and_the_sequential_cube_otherwise(below):
    s = settings()
    assert domain_for(s, "iterated") == "simplex"
    assert domain_for(s, "iterated", below.diagram) == "simplex"
    for m in CUBE_METHODS:
        assert domain_for(s, m) == "sequential"
        assert domain_for(s, m, below.diagram) == "sequential"


@pytest.mark.parametrize("method", ("iterated",) + CUBE_METHODS)
def test_domain_auto_is_decomposed_with_blowups_or_boundary_singularities(
        method, massless_triangle, singular_triangle):
    assert domain_for(settings(), method, massless_triangle) == "decomposed"
    assert domain_for(settings(), method, singular_triangle) == "decomposed"


def test_domain_explicit_is_kept(below):
    assert domain_for(settings(domain="simplex"), "iterated", below.diagram) == "simplex"
    assert domain_for(settings(domain="decomposed"), "iterated", below.diagram) == "decomposed"
    for d in ("sequential", "sectors", "decomposed"):
        assert domain_for(settings(domain=d), "cubature", below.diagram) == d


@pytest.mark.parametrize("method", CUBE_METHODS)
def test_domain_simplex_with_a_cube_method_is_refused(method):
    with pytest.raises(SpecError, match=rf"^domain: 'simplex' needs method 'iterated' "
                                        rf"\(got '{method}'\)"):
        domain_for(settings(domain="simplex"), method)


@pytest.mark.parametrize("domain", ["sequential", "sectors"])
def test_iterated_with_a_cube_domain_is_refused(domain):
    with pytest.raises(SpecError, match=rf"^domain: .*iterated.*'{domain}'"):
        domain_for(settings(domain=domain), "iterated")


@pytest.mark.parametrize("domain", ["sequential", "sectors"])
def test_boundary_singularities_refuse_domains_other_than_decomposed(domain, singular_triangle):
    with pytest.raises(SpecError, match=rf"^domain: '{domain}' cannot be used here"):
        domain_for(settings(domain=domain), "cubature", singular_triangle)


# --------------------------------------------------------------------------- engine
@pytest.mark.parametrize("method", engines.METHODS)
def test_make_engine_builds_the_named_engine(method):
    e = make_engine(method, settings(), 2)
    assert isinstance(e, engines.ENGINES[method]) and e.name == method
    assert e.precision == "float64"
    assert make_engine(method, settings(precision="float32"), 2).precision == "float32"


@pytest.mark.parametrize("method", CUBE_METHODS)
@pytest.mark.parametrize("regulated", [False, True])
def test_cube_engines_skip_the_boundary_probe(method, regulated):
    assert engines.get(method).boundary_check is True       # the engine's own default
    assert make_engine(method, settings(), 3, regulated=regulated).boundary_check is False


@pytest.mark.parametrize("method", ["qmc", "mc"])
def test_random_engines_get_the_seed(method):
    assert make_engine(method, settings(seed=12345), 3).seed == 12345


@pytest.mark.parametrize("regulated", [True, False])
def test_cubature_uses_the_global_error_estimate_from_two_dimensions(regulated):
    s = settings()
    assert make_engine("cubature", s, 2, regulated=regulated).estimate_for(2) == "global"
    assert make_engine("cubature", s, 6, regulated=regulated).estimate_for(6) == "global"
    assert make_engine("cubature", s, 1, regulated=regulated).estimate_for(1) == "local"
    # a delta term sweeps whenever due: the extrapolation amplifies its error
    assert make_engine("cubature", s, 5, regulated=regulated).defer_sweeps is not regulated


def test_regulated_iterated_uses_absolute_inner_tolerances_and_gk21():
    default = engines.get("iterated")
    e = make_engine("iterated", settings(), 2, regulated=True)
    assert (e.inner_tolerance, e.rules) == ("absolute", "gk21")
    d = make_engine("iterated", settings(), 2, regulated=False)
    assert (d.inner_tolerance, d.rules) == (default.inner_tolerance, default.rules)
    assert d.inner_tolerance != "absolute"


@pytest.mark.parametrize("method", ["cubature", "qmc"])
def test_stop_on_nonfinite_is_passed_on(method):
    assert make_engine(method, settings(), 2).stop_on_nonfinite is False
    assert make_engine(method, settings(), 2, stop_on_nonfinite=True).stop_on_nonfinite is True


def test_engine_domain_is_the_simplex_only_for_iterated_on_the_simplex():
    assert engine_domain("iterated", "simplex", 3) == Simplex(3)
    cube = Box((0.0, 0.0, 0.0), (1.0, 1.0, 1.0))
    assert engine_domain("iterated", "decomposed", 3) == cube
    for m in CUBE_METHODS:
        for d in ("sequential", "sectors", "decomposed"):
            assert engine_domain(m, d, 3) == cube


# --------------------------------------------------------------------------- physical methods
def test_physical_methods_default_is_contour_then_delta(above):
    assert physical_methods(above.diagram, settings()) == (("contour", "delta"), "")


def test_physical_methods_follow_the_contour_setting(above):
    assert physical_methods(above.diagram, settings(contour="none")) == (("delta",), "")
    assert physical_methods(above.diagram, settings(contour="deform")) == (("contour",), "")
    # both sector domains carry the contour
    for domain in ("sectors", "decomposed"):
        assert physical_methods(above.diagram, settings(domain=domain)) == \
            (("contour", "delta"), "")


@pytest.mark.parametrize("kw,why", [
    (dict(method="iterated"), "method 'iterated' integrates the delta sequence only"),
    (dict(delta=0.5), "delta0 = 0.5 given"),
    (dict(domain="sequential"), "domain 'sequential' is not a domain of the contour"),
])
def test_physical_methods_without_the_contour_say_why(above, kw, why):
    how, reason = physical_methods(above.diagram, settings(**kw))
    assert how == ("delta",) and why in reason
    with pytest.raises(SpecError, match=r"^cross_check: needs both methods") as e:
        physical_methods(above.diagram, settings(cross_check=True, **kw))
    assert why in str(e.value)


def test_physical_methods_boundary_singularities_use_the_delta_sequence(singular_triangle):
    how, reason = physical_methods(singular_triangle, settings())
    assert how == ("delta",) and "boundary singularities" in reason
    with pytest.raises(SpecError, match=r"^cross_check:"):
        physical_methods(singular_triangle, settings(cross_check=True))


# --------------------------------------------------------------------------- RunPlan.at
def test_plan_of_a_euclidean_file(below):
    p = plan_at(below)
    s = below.settings
    assert [r.kind for r in p.regions] == ["euclidean"]
    assert p.ndim == 2 == len(p.diagram.variables) - 1
    # three unit-power lines, one loop, D = 4: (-1)^3 Gamma(1) = -1
    assert p.prefactor == pysecdec_prefactor(3, 1, 4) == -1
    d = p.direct
    # the Euclidean point: iterated over the decomposed (primary) sectors, every face at t = 0
    assert (d.method, d.domain, d.engine_domain) == ("iterated", "decomposed", Box.cube(2))
    assert (d.rtol, d.atol, d.max_evals) == (s.rtol, 0.0, s.max_evals) == (1e-6, 0.0, 10**9)
    assert d.engine.inner_tolerance == engines.get("iterated").inner_tolerance
    assert d.integrand is integrand(p.diagram, "decomposed", "none", "float64")
    assert p.direct is d                       # built once


def test_plan_of_a_physical_file(above):
    p = plan_at(above)
    s = above.settings
    assert s.rtol == 1e-6
    assert [r.kind for r in p.regions] == ["physical"]
    assert p.ndim == 2 and p.prefactor == -1
    assert p.physical == (("contour", "delta"), "")
    dl = p.delta
    assert (dl.method, dl.domain, dl.engine_domain) == ("iterated", "simplex", Simplex(2))
    assert dl.rtol == pytest.approx(s.rtol * DELTA_RTOL_FACTOR, rel=1e-15)
    assert (dl.engine.inner_tolerance, dl.engine.rules) == ("absolute", "gk21")
    c = p.contour
    assert (c.method, c.domain, c.engine_domain) == ("cubature", "sectors", Box.cube(2))
    assert isinstance(c.integrand, ContourIntegrand) and c.integrand.domain == "sectors"
    assert c.engine.stop_on_nonfinite is True and c.engine.boundary_check is False
    assert (c.rtol, c.atol, c.max_evals) == (s.rtol, 0.0, s.max_evals)
    assert p.schedule == DeltaSchedule("auto", 1.2, 20, 6, s.rtol, 0.0)


def test_plan_of_a_batch_classifies_each_point(below):
    p = plan_at(below.with_kinematics(s=[1.0, 10.0, -2.0]))
    assert [r.kind for r in p.regions] == ["euclidean", "physical", "euclidean"]
    assert p.kin.shape == (3, 2)


def test_delta_terms_by_cubature_get_the_cubature_factor():
    """The two-loop ladder above threshold: blow-ups, so cubature over the decomposed
    sectors in 5 dimensions; its contour by lattices (5 > 4 dimensions), also over the
    decomposed sectors."""
    prob = problem("ladder_vertex_2L_k5")
    p = plan_at(prob)
    rtol = prob.settings.rtol
    assert [r.kind for r in p.regions] == ["physical"] and p.ndim == 5
    # six unit-power lines, two loops, D = 4: (+1) Gamma(2) = 1
    assert p.prefactor == pysecdec_prefactor(6, 2, 4) == 1
    dl = p.delta
    assert (dl.method, dl.domain, dl.engine_domain) == ("cubature", "decomposed", Box.cube(5))
    assert dl.rtol == pytest.approx(rtol * DELTA_RTOL_FACTOR_CUBATURE, rel=1e-15)
    assert dl.engine.estimate_for(5) == "global" and dl.engine.boundary_check is False
    assert p.contour.method == "qmc" and p.contour.engine.seed == prob.settings.seed
    assert (p.contour.engine.lattice, p.contour.engine.periodize) == ("cbc", "korobov3")
    assert p.contour.domain == p.contour.integrand.domain == "decomposed"
    assert plan_at(prob, prob.settings.updated(domain="sectors")).contour.domain == "sectors"


def test_boundary_transforms_by_stage():
    """transform "auto": Sidi's map on the deformed contour for cubature (the triangle above
    threshold), none for its lattices (the ladder's contour) and for the delta terms; a named
    transform is used everywhere it is given."""
    tri = problem("triangle_above_threshold")
    p = plan_at(tri)
    assert p.contour.method == "cubature"
    assert p.contour.integrand.transform.name == plan.CONTOUR_TRANSFORM == "sidi2"
    assert p.delta.integrand.transform.name == "none"
    lad = plan_at(problem("ladder_vertex_2L_k5"))
    assert lad.contour.method == "qmc" and lad.contour.integrand.transform.name == "none"
    named = plan_at(tri, tri.settings.updated(transform="korobov2"))
    assert named.contour.integrand.transform.name == "korobov2"
    assert plan_at(tri, tri.settings.updated(transform="none")).contour.integrand.transform.name == "none"
    with pytest.raises(SpecError, match="or auto"):
        settings(transform="sidey")


def test_bare_atol_divides_out_the_prefactor():
    """Table 5.1: seven unit-power lines, two loops, D = 4: prefactor -Gamma(3) = -2 (the
    file's comment); the delta terms (cubature over decomposed sectors) get atol / 20."""
    prob = problem("table51_2L")
    s = prob.settings.updated(atol=1e-9)
    p = plan_at(prob, s)
    assert p.prefactor == pysecdec_prefactor(7, 2, 4) == -2
    assert p.ndim == 6 and [r.kind for r in p.regions] == ["euclidean"]
    assert p.bare_atol == pytest.approx(5e-10, rel=1e-15)
    assert p.direct.atol == p.bare_atol and p.direct.rtol == 1e-8
    assert p.direct.method == "pilot" and p.direct.domain == "decomposed"
    assert p.delta.method == "cubature"
    assert p.delta.atol == pytest.approx(1e-9 * DELTA_RTOL_FACTOR_CUBATURE / 2, rel=1e-15)
    assert p.schedule.atol == p.bare_atol
    bare = plan_at(prob, s.updated(prefactor="none"))
    assert bare.prefactor == 1 and bare.bare_atol == 1e-9


def test_schedule_carries_the_regulator_settings(above):
    s = settings(rtol=1e-5, atol=3e-9, delta=0.3, delta_q=1.5, delta_terms=30,
                 delta_min_terms=8)
    p = plan_at(above, s)
    assert p.schedule == DeltaSchedule(0.3, 1.5, 30, 8, 1e-5, 3e-9)   # |prefactor| = 1


def test_delta_rtol_is_floored_at_1e_13(above):
    p = plan_at(above, settings(rtol=1e-14))
    assert p.delta.method == "iterated" and p.delta.rtol == 1e-13


def test_regions_follow_a_forced_delta(below, above):
    # A number forces the delta sequence, even at a Euclidean point.
    forced = plan_at(below, settings(delta=0.5))
    assert [r.kind for r in forced.regions] == ["physical"]
    # delta = 0 integrates a physical point directly, marked 'forced'.
    zero = plan_at(above, settings(delta=0))
    assert [r.kind for r in zero.regions] == ["forced"]
    assert [r.kind for r in plan_at(below, settings(delta=0)).regions] == ["euclidean"]


def test_stages_are_built_and_checked_on_first_use(above):
    # The plan is made; the refusal comes from the stage that needs the setting.
    p = plan_at(above, settings(method="iterated", domain="sequential"))
    with pytest.raises(SpecError, match=r"^domain: "):
        p.direct
    with pytest.raises(SpecError, match=r"^method: "):
        plan_at(above, settings(method="iterated", contour="deform")).contour


def test_contour_stage_refuses_a_domain_other_than_sectors(above, singular_triangle):
    with pytest.raises(SpecError, match=r"^domain: the deformed contour is integrated over "
                                        r"the domains sectors, decomposed, not 'sequential'"):
        plan_at(above, settings(domain="sequential")).contour
    assert plan_at(above, settings(domain="decomposed")).contour.domain == "decomposed"
    p = plan_at(above)
    p_singular = RunPlan(p.problem, p.settings, singular_triangle, p.kin, p.regions,
                         p.prefactor, p.ndim)
    with pytest.raises(SpecError, match=r"^contour: "):
        p_singular.contour


def test_domain_sectors_leaves_the_contour_alone_and_refuses_a_cross_check(above):
    """With domain 'sectors' the delta sequence's engine for this diagram (iterated) cannot
    run, so the contour has no fallback and a cross-check is refused before any integration."""
    with pytest.raises(SpecError) as e:
        plan_at(above, settings(domain="sectors", cross_check=True)).physical
    assert str(e.value).startswith("cross_check:")
    assert plan_at(above, settings(domain="sectors")).physical == (("contour",), "")


# --------------------------------------------------------------------------- Stage.integrate
def test_direct_stage_integrates_the_triangle_below_threshold(below):
    """A 2-D cubature: C0(0, 0, s; m, m, m) = -(2/s) arcsin^2(sqrt(s / (4 m^2))) at s = m = 1
    (the file's closed form), from the bare integral times the plan's prefactor."""
    p = plan_at(below, settings(method="cubature", rtol=1e-8))
    stage = p.direct
    assert (stage.method, stage.domain, stage.engine_domain) == \
        ("cubature", "sequential", Box.cube(2))
    r = stage.integrate(stage.integrand.bind(p.kin, [0.0], real=True))
    exact = -2.0 * math.asin(0.5) ** 2
    assert r.converged, r.status
    (value,) = r.value                     # one component: one point, one delta
    assert abs(value * p.prefactor - exact) <= 1e-7 * abs(exact)


def test_stage_integrate_options_apply_to_one_run(below):
    stage = plan_at(below, settings(method="cubature")).direct
    r = stage.integrate(lambda x: x[:, 0] * x[:, 1], error_estimate="local")
    assert r.converged and abs(r.value - 0.25) <= 1e-12 and r.info["error_estimate"] == "local"
    assert stage.engine.error_estimate == "auto"           # the stage's engine is unchanged
    with pytest.raises(TypeError):
        stage.integrate(lambda x: x[:, 0], no_such_option=1)
