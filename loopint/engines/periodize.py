"""Periodizing transformations of the unit interval for lattice rules.

A rank-1 lattice rule integrates smooth *periodic* functions with errors that fall like
``N^(-alpha/2)`` or faster, but a non-periodic integrand (one whose values or derivatives do not
match on opposite faces of the cube) loses this and converges only like ``N^(-1)``.  The cure
is a change of variables ``x_j = phi(t_j)`` applied to every coordinate,

    int_[0,1]^d f(x) dx = int_[0,1]^d f(phi(t)) prod_j phi'(t_j) dt,

with ``phi`` increasing, ``phi(0) = 0``, ``phi(1) = 1`` and ``phi'`` vanishing at both ends
so that the new integrand is periodic (Sloan & Joe, *Lattice Methods for Multiple
Integration*, 1994, section 2.12; Kuo, Nuyens, "Application of QMC ...", 2016).

Implemented (each a :class:`Periodization`; look them up with :func:`get`):

- ``"korobov<r>"`` (``korobov3`` is the default of :mod:`loopint.engines.qmc`): the polynomial
  (Korobov) transform of degree ``2r+1``,
  ``phi'(t) = t^r (1-t)^r / B(r+1, r+1)``, ``phi(t) = I_t(r+1, r+1)`` (regularized incomplete
  beta function, a polynomial).  ``r = 3``: ``phi(t) = t^4 (35 - 84 t + 70 t^2 - 20 t^3)``,
  ``phi'(t) = 140 t^3 (1-t)^3``.  Periodizes derivatives up to order ``r``.
- ``"sidi<m>"`` / ``"sidi"`` (= ``sidi2``): Sidi's sin^m transform (A. Sidi, "A new variable
  transformation for numerical integration", 1993),
  ``phi'(t) = sin^m(pi t) / int_0^1 sin^m(pi u) du``;
  ``m = 2``: ``phi(t) = t - sin(2 pi t)/(2 pi)``.
  ``phi(t)`` is evaluated from the recursion
  ``S_m(t) = -sin^(m-1)(pi t) cos(pi t)/(m pi) + (m-1)/m S_(m-2)(t)``,
  ``S_0 = t``, ``S_1 = (1 - cos(pi t))/pi``.
- ``"baker"``: the baker's (tent) transform ``phi(t) = 1 - |2t - 1|``, Jacobian 1: it does not
  periodize but symmetrizes; tent-transformed lattice rules reach ``O(N^(-2+eps))`` for smooth
  non-periodic integrands (Hickernell, "Obtaining O(N^(-2+eps)) convergence for lattice
  quadrature rules", 2002).
- ``"none"``: the identity.

These maps are small and generic; the lowering layer owns boundary transforms of diagrams.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

import jax.numpy as jnp

from ..spec.transform import parse_transform


@dataclasses.dataclass(frozen=True)
class Periodization:
    """A coordinate-wise change of variables ``x = phi(t)`` with Jacobian ``phi'(t)``.

    ``apply(t)`` takes lattice points ``t[..., d]`` in ``[0, 1)`` and returns ``(x, w)`` with
    ``x`` of the same shape and ``w[...] = prod_j phi'(t_j)``.
    """

    name: str
    phi: Callable
    dphi: Callable | None       # None: Jacobian identically 1

    def apply(self, t):
        if self.dphi is None:
            return self.phi(t), jnp.ones((), t.dtype)
        return self.phi(t), jnp.prod(self.dphi(t), axis=-1)


def korobov(r: int) -> Periodization:
    """Korobov polynomial transform of order ``r``: ``phi' = t^r (1-t)^r / B(r+1, r+1)``."""
    if not (isinstance(r, int) and r >= 1):
        raise ValueError(f"korobov transform needs an integer order r >= 1, got {r!r}")
    n = 2 * r + 1
    norm = 1.0 / (math.factorial(r) ** 2 / math.factorial(n))  # 1 / B(r+1, r+1)
    binom = [math.comb(n, j) for j in range(n + 1)]

    def phi(t):
        # I_t(r+1, r+1) = sum_{j=r+1}^{2r+1} C(2r+1, j) t^j (1-t)^(2r+1-j); evaluated on the
        # nearer half and reflected, so that 1 - x keeps its relative accuracy near t = 1.
        s = jnp.minimum(t, 1.0 - t)
        u = 1.0 - s
        acc = jnp.zeros_like(s)
        for j in range(r + 1, n + 1):
            acc = acc + binom[j] * s**j * u ** (n - j)
        return jnp.where(t <= 0.5, acc, 1.0 - acc)

    def dphi(t):
        return norm * (t * (1.0 - t)) ** r

    return Periodization(f"korobov{r}", phi, dphi)


def sidi(m: int = 2) -> Periodization:
    """Sidi's sin^m transform: ``phi'(t) = sin^m(pi t) / int_0^1 sin^m``."""
    if not (isinstance(m, int) and m >= 1):
        raise ValueError(f"sidi transform needs an integer order m >= 1, got {m!r}")
    # int_0^1 sin^m(pi u) du = Gamma((m+1)/2) / (sqrt(pi) Gamma(m/2 + 1))
    total = math.gamma((m + 1) / 2) / (math.sqrt(math.pi) * math.gamma(m / 2 + 1))

    def partial(t):
        s, c = jnp.sin(jnp.pi * t), jnp.cos(jnp.pi * t)
        lo = (t, (1.0 - c) / jnp.pi)        # S_0, S_1
        s_prev2, s_prev1 = lo
        if m == 1:
            return s_prev1
        out = None
        for k in range(2, m + 1):
            sk = -(s ** (k - 1)) * c / (k * jnp.pi) + (k - 1) / k * s_prev2
            s_prev2, s_prev1 = s_prev1, sk
            out = sk
        return out

    def phi(t):
        # symmetric evaluation as for korobov: phi(t) = 1 - phi(1 - t)
        # (the recursion cancels near t = 0: absolute error ~1e-20, clipped to stay in [0, 1])
        tt = jnp.minimum(t, 1.0 - t)
        v = jnp.clip(partial(tt) / total, 0.0, 0.5)
        return jnp.where(t <= 0.5, v, 1.0 - v)

    def dphi(t):
        return jnp.sin(jnp.pi * t) ** m / total

    return Periodization(f"sidi{m}", phi, dphi)


def baker() -> Periodization:
    """Baker's (tent) transform ``phi(t) = 1 - |2t - 1|`` (measure preserving, Jacobian 1)."""
    return Periodization("baker", lambda t: 1.0 - jnp.abs(2.0 * t - 1.0), None)


def identity() -> Periodization:
    return Periodization("none", lambda t: t, None)


def get(name: str) -> Periodization:
    """Look up a transform by name: ``korobov<r>``, ``sidi`` / ``sidi<m>``, ``baker``, ``none``
    (:func:`~loopint.spec.transform.parse_transform`)."""
    if isinstance(name, Periodization):
        return name
    kind, order = parse_transform(name)
    if kind == "korobov":
        return korobov(order)
    if kind == "sidi":
        return sidi(order)
    return baker() if kind == "baker" else identity()
