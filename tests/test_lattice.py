"""Lattice generating vectors: number theory, fast CBC against brute force, Korobov search, cache.

References: the criterion is recomputed directly (``p2_error``, O(n d)) and the brute-force CBC
and Korobov searches are written out here, independently of the FFT-based construction.
"""

import json

import numpy as np
import pytest

from loopint import cache
from loopint.engines import lattice


@pytest.fixture(autouse=True)
def tmp_cache(tmp_path, monkeypatch):
    """Keep every test's lattice cache in a temporary directory, and the memo empty."""
    monkeypatch.setenv("LOOPINT_CACHE_DIR", str(tmp_path))
    lattice._MEMO.clear()
    yield tmp_path
    lattice._MEMO.clear()


def test_primes_and_ladder():
    small = [p for p in range(2, 200) if all(p % q for q in range(2, int(p**0.5) + 1))]
    assert [p for p in range(200) if lattice.is_prime(p)] == small
    assert lattice.is_prime(2**31 - 1) and not lattice.is_prime(2**32 + 1)
    lad = lattice.ladder()
    for k, n in zip(lattice.LADDER_LOG2, lad):
        assert lattice.is_prime(n) and n <= 2**k
        assert all(not lattice.is_prime(m) for m in range(n + 1, 2**k + 1))
    assert lad[:4] == [1021, 2039, 4093, 8191]


@pytest.mark.parametrize("n", [3, 101, 1021, 65521])
def test_primitive_root(n):
    g = lattice.primitive_root(n)
    # g generates Z_n^*: its order is n - 1
    seen, x = set(), 1
    for _ in range(n - 1):
        x = x * g % n
        seen.add(x)
    assert len(seen) == n - 1


def _brute_cbc_min(prefix, n, gamma):
    return min(lattice.p2_error(list(prefix) + [c], n, gamma[:len(prefix) + 1])
               for c in range(1, n))


@pytest.mark.parametrize("n,d,gamma", [(101, 5, 0.1), (257, 4, (1.0, 0.5, 0.25, 0.125)),
                                       (127, 6, 1.0)])
def test_fast_cbc_matches_brute_force(n, d, gamma):
    """Each component of the fast (FFT) CBC attains the brute-force minimum of e^2."""
    g = np.broadcast_to(np.asarray(gamma, float), (d,))
    z = lattice.cbc(n, d, gamma)
    assert z[0] == 1 and z.dtype == np.int64 and np.all((z > 0) & (z <= n // 2))
    for s in range(2, d + 1):
        got = lattice.p2_error(z[:s], n, g[:s])
        best = _brute_cbc_min(z[:s - 1], n, g)
        assert got == pytest.approx(best, rel=1e-10, abs=1e-15)


def test_fast_cbc_safe_prime():
    """n = 2039 = 2 * 1019 + 1: n - 1 has a large prime factor, the case the power-of-two
    linear convolution exists for; every component still attains the brute-force minimum."""
    n, d = 2039, 3
    z = lattice.cbc(n, d)
    g = np.full(d, lattice.DEFAULT_GAMMA)
    for s in range(2, d + 1):
        got = lattice.p2_error(z[:s], n, g[:s])
        assert got == pytest.approx(_brute_cbc_min(z[:s - 1], n, g), rel=1e-10, abs=1e-15)


def test_cbc_beats_random_vectors():
    n, d = 1021, 8
    e_cbc = lattice.p2_error(lattice.cbc(n, d), n)
    rng = np.random.default_rng(1)
    e_rand = [lattice.p2_error(rng.integers(1, n, d), n) for _ in range(50)]
    assert e_cbc < np.min(e_rand)


def test_p2_error_closed_form_one_dimension():
    # d = 1, z = 1: e^2 = gamma * 2 pi^2 * (1/n) sum_k B2(k/n) = gamma * 2 pi^2 / (6 n^2)
    n, gamma = 97, 0.3
    expected = gamma * np.pi**2 / (3 * n**2)
    assert lattice.p2_error([1], n, gamma) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("n", [251, 256])     # a prime and a power of two (odd a only)
def test_korobov_full_search(n):
    d = 4
    z, a = lattice.korobov(n, d, 0.5)
    best = min(lattice.p2_error(lattice.korobov_vector(n, d, b), n, 0.5)
               for b in range(1, n) if np.gcd(b, n) == 1)
    assert lattice.p2_error(z, n, 0.5) == pytest.approx(best, rel=1e-12)
    assert list(z) == [pow(a, j, n) for j in range(d)]


def test_lattice_rule_integrates_characters():
    """(1/n) sum_k exp(2 pi i h.x_k) is 1 on the dual lattice (h.z = 0 mod n) and 0 off it."""
    n, d = 1021, 3
    z = lattice.generating_vector(n, d)
    k = np.arange(n)[:, None]
    x = (k * z[None, :] % n) / n
    for h in [(1, 0, 0), (2, -3, 1), (5, 7, -2)]:
        s = np.mean(np.exp(2j * np.pi * x @ np.asarray(h)))
        on = (np.dot(h, z) % n) == 0
        assert abs(s - (1.0 if on else 0.0)) < 1e-9
    h_dual = (int(z[1]), -1, 0)  # h.z = z1*1 - z1 = 0 mod n
    assert abs(np.mean(np.exp(2j * np.pi * x @ np.asarray(h_dual))) - 1) < 1e-9


def test_cache_written_reused_and_extended(tmp_cache):
    """Weights without a shipped table: built, written, read back, extended."""
    n, g = 2039, 0.1
    z4 = lattice.generating_vector(n, 4, gamma=g)
    files = list((tmp_cache / "lattice").glob("cbc_n2039_*.json"))
    assert len(files) == 1
    data = json.loads(files[0].read_text())
    assert data["n"] == n and data["z"] == [int(v) for v in z4]
    assert data["e2"] == pytest.approx(lattice.p2_error(z4, n, g), rel=1e-12)
    # a fresh process (empty memo) reads the file: tamper with it to prove it is read
    data["z"] = [1, 3, 5, 7]
    files[0].write_text(json.dumps(data))
    lattice._MEMO.clear()
    assert list(lattice.generating_vector(n, 3, gamma=g)) == [1, 3, 5]
    # asking for more dimensions extends the stored prefix (CBC is extensible in d)
    z6 = lattice.generating_vector(n, 6, gamma=g)
    assert list(z6[:4]) == [1, 3, 5, 7]
    assert list(z6) == list(lattice.cbc(n, 6, g, start=[1, 3, 5, 7]))


def test_shipped_prime_table(tmp_cache):
    """The package's CBC vectors for the default weights: one per ladder point 2^10..2^28,
    read, not built (nothing memoized, nothing written).  Equal weights make ties between
    candidates (the FFT's rounding picks one), so a vector built here may differ from the
    shipped one in its components but not in its quality: e^2 equal to 1e-12 for the first
    eight ladder points in 8 dimensions.  More dimensions than shipped extend the table."""
    from loopint.engines.rules import lattice_prime as t
    assert t.GAMMA == lattice.DEFAULT_GAMMA and t.DIMENSIONS >= 32
    assert sorted(t.Z) == lattice.ladder(range(10, 29))
    for n, z in t.Z.items():
        z = np.asarray(z)
        assert len(z) == t.DIMENSIONS and z[0] == 1 and np.all((z >= 1) & (z <= n // 2))
    assert list(lattice.generating_vector(1021, 7)) == list(t.Z[1021][:7])
    assert lattice._MEMO == {} and not (tmp_cache / "lattice").exists()
    for n in lattice.ladder(range(10, 18)):
        assert lattice.p2_error(t.Z[n][:8], n) == pytest.approx(
            lattice.p2_error(lattice.cbc(n, 8), n), rel=1e-12)
    more = lattice.generating_vector(1021, t.DIMENSIONS + 2)
    assert list(more) == list(lattice.cbc(1021, t.DIMENSIONS + 2, start=t.Z[1021]))


def test_cache_dir_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv("LOOPINT_CACHE_DIR", str(tmp_path / "a"))
    assert cache.cache_dir() == tmp_path / "a"
    monkeypatch.delenv("LOOPINT_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert cache.cache_dir() == tmp_path / "x" / "loopint"
    monkeypatch.setenv("LOOPINT_CACHE_DIR", "")        # disk caches off: memory only
    assert cache.cache_dir() is None
    z = lattice.generating_vector(1021, 3)
    assert list(lattice.generating_vector(1021, 2)) == list(z[:2])
    assert not (tmp_path / "x" / "loopint").exists()


def test_bad_arguments():
    with pytest.raises(ValueError):
        lattice.cbc(100, 3)
    with pytest.raises(ValueError):
        lattice.generating_vector(101, 3, method="sobol")
    with pytest.raises(ValueError):
        lattice.generating_vector(101, 3, gamma=(1.0, 0.5))


# ----------------------------------------------------------------------------------------------
# embedded sequences in base 2

def _worst_ratios(prefix, m_min, m_max, gamma):
    """Brute force: for every odd candidate, max over levels of (e^2 + floor) relative to the
    smallest over candidates (the criterion of ``embedded_cbc``, written out directly)."""
    cands = list(range(1, 1 << m_max, 2))
    e = np.array([[lattice.p2_error(list(prefix) + [c], 1 << m, gamma[:len(prefix) + 1])
                   for m in range(m_min, m_max + 1)] for c in cands]) + lattice.E2_FLOOR
    return dict(zip(cands, np.max(e / e.min(axis=0), axis=1)))


@pytest.mark.parametrize("m_max,d,gamma", [(9, 5, 0.5), (8, 4, (1.0, 0.5, 0.25, 0.125))])
def test_embedded_cbc_matches_brute_force(m_max, d, gamma):
    """Each component attains the brute-force minimum of the worst relative error over the
    levels 2^3..2^m_max (ties between equivalent lattices may be broken either way)."""
    g = np.broadcast_to(np.asarray(gamma, float), (d,))
    z = lattice.embedded_cbc(m_max, d, gamma, m_min=3)
    assert z[0] == 1 and np.all(z % 2 == 1) and np.all(z < 2**m_max)
    for s in range(1, d):
        worst = _worst_ratios(z[:s], 3, m_max, g)
        assert worst[int(z[s])] == pytest.approx(min(worst.values()), rel=1e-12)


def test_embedded_levels_close_to_dedicated_rules():
    """Every level 2^10..2^16 of one embedded sequence (d = 8) is within 25% in e^2 of the
    fast-CBC rule built for that level alone (the largest prime below 2^m)."""
    d = 8
    z = lattice.embedded_cbc(16, d, m_min=10)
    for m in range(10, 17):
        n, p = 1 << m, lattice.prime_below(1 << m)
        own = lattice.p2_error(z, n)
        assert own < 1.25 * lattice.p2_error(lattice.cbc(p, d), p)     # 1.05-1.09 measured


def test_shipped_embedded_table():
    """The package's table: the documented size and top, odd components; d up to its
    dimensions is read, not built (nothing memoized).  Balancing 19 levels costs each level
    a little: e^2 within 2.5 times the rule built for that level alone (at most 2.1 measured
    for d = 4, 6, 8 and 2^10..2^20)."""
    from loopint.engines.rules import lattice_base2 as t
    assert t.M == lattice.EMBEDDED_LOG2 and t.GAMMA == lattice.DEFAULT_GAMMA
    assert len(t.Z) == t.DIMENSIONS >= 32
    z = np.asarray(t.Z)
    assert z[0] == 1 and np.all(z % 2 == 1) and np.all(z < 2**t.M)
    assert list(lattice.embedded_vector(7)) == list(t.Z[:7]) and lattice._MEMO == {}
    for d in (4, 8):
        for m in (10, 13, 16):
            p = lattice.prime_below(1 << m)
            assert lattice.p2_error(z[:d], 1 << m) < 2.5 * lattice.p2_error(lattice.cbc(p, d), p)


def test_embedded_vector_built_cached_and_extended(tmp_cache):
    """A vector is built, written to the cache, read back and extended from it."""
    z3 = lattice.embedded_vector(3, 12, gamma=0.1)
    assert list(z3) == list(lattice.embedded_cbc(12, 3, 0.1))
    files = list((tmp_cache / "lattice").glob("embedded_*.json"))
    assert len(files) == 1 and json.loads(files[0].read_text())["m_max"] == 12
    lattice._MEMO.clear()
    z5 = lattice.embedded_vector(5, 12, gamma=0.1)
    assert list(z5[:3]) == list(z3) and list(z5) == list(lattice.embedded_cbc(12, 5, 0.1))
