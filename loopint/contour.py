"""``loopint.contour``: physical points at delta = 0 on a deformed integration contour.

The second method for the physical region, beside the delta sequence
(:mod:`loopint.delta_sequence`): the Feynman parameters move into the complex plane in the
direction that gives F the Feynman prescription -i0 (:meth:`ContourIntegrand.bind_deformed`),
so by Cauchy's theorem the integral at delta = 0 is the physical value itself, computed by
one cube engine run per point (:func:`contour_points`).  With ``contour = "auto"`` the points
where the contour does not converge go to the delta sequence, and ``cross_check`` computes
both and compares them (:func:`combine_physical`).
"""

from __future__ import annotations

import dataclasses
import logging
from functools import lru_cache, partial
from typing import Mapping

import jax
import jax.numpy as jnp
import numpy as np
import sympy

from .derivatives import blocks, split, with_derivatives
from .engines import regions
from .engines.base import Status
from .lower import _T_MIN, Integrand, PolySet, kronecker_points, power_complex, power_real
from .result import scale_error

log = logging.getLogger(__name__)

# A contour run whose integrand met a sign violation (NaN) is repeated this many times, each
# with lambda times CONTOUR_SHRINK, before the point is left to the delta sequence.
CONTOUR_RETRIES = 2
CONTOUR_SHRINK = 0.25

# A cross-check fails when the contour and the delta sequence differ by more than this many
# combined standard errors (their estimates added in quadrature).
CROSS_CHECK_SIGMAS = 5.0


CONTOUR_DOMAINS = ("sectors", "decomposed")


class ContourIntegrand(Integrand):
    """An :class:`~loopint.lower.Integrand` that can also be bound on the deformed contour
    (:meth:`bind_deformed`, with a strength from :meth:`deformation_lambda`), seen through
    the primary sectors (``domain="sectors"``) or through the decomposed sectors
    (``domain="decomposed"``, :mod:`loopint.sectors`)."""

    def __init__(self, diagram, *, domain: str = "sequential", transform: str = "none",
                 precision: str = "float64"):
        super().__init__(diagram, domain=domain, transform=transform, precision=precision)
        self._derivset = None            # U, F and their derivatives: built on first deformation
        self._quadratic = None           # U linear and F quadratic: see _local_strength

    def bind_deformed(self, kinematics: Mapping[str, object] | np.ndarray, lam: float):
        """The integrand at delta = 0 on a deformed contour (a second method for the physical
        region, beside the delta sequence): ``f(u) -> [n, K]`` complex for the kinematic
        points ``[K, s]``, each on its own contour when ``lam`` is an array ``[K]``.

        The deformation is projective: with
        V = F/U (homogeneous of degree 1), every Feynman parameter moves to

            z_k = x_k (1 - i Lam(x) dV/dx_k(x)),

        homogeneous of degree 1 in x, so it is one deformation of the projective integration
        cycle (the coordinate faces x_k = 0 stay in place) seen through each sector's chart
        x_l = 1; the artificial sector boundaries x_k = 1 move with everything else.  The
        strength Lam(x) is ``lam``, except at one loop where V is flat on the scale of the
        parameters (near a face on which V vanishes to second order and a threshold close to
        it), where it grows so that they still move by about a tenth of their value
        (:func:`local_strength`).  To first order Im V(z) = -Lam sum_k x_k (dV/dx_k)^2
        <= 0, the Feynman prescription F - i0, so by Cauchy's theorem the integral is the
        delta -> 0 limit itself (the deformation of feyntrop, Borinsky, Munch and Tellander
        2023).  On a chart x_l = 1 the pulled-back
        measure is det(dz/dx) with the full N x N Jacobian (Euler: (dz/dx) x = z), built from
        the first and second derivatives of U and F, generated symbolically like U and F.  A
        point where the deformation fails (Im V(z) > 0: lam too large, or negative) returns
        NaN, which the engines count and report: such a result is never "converged".

        With ``domain="decomposed"`` the same contour is integrated through the sectors of
        :mod:`loopint.sectors`: each is a real monomial map x = t^A of a primary chart with
        Jacobian t^J, applied before the deformation (which is defined pointwise in x), so
        the integral is the same.  Where U or F vanish on the boundary (subloops, massless
        lines) the deformed integrand of the primary charts behaves like r^-k g(direction)
        near the faces: bounded after the charts' measure, but not smooth, and a lattice
        rule then converges like 1/n at best.  In the blown-up coordinates it is a monomial
        times a smooth function (pySecDec deforms after sector decomposition for the same
        reason; Borowka et al. 2018).  On pySecDec's elliptic two-loop box a lattice rule of
        2^16 points is more than ten times more accurate there than on the primary charts of
        the same contour (``tests/test_contour.py``).
        """
        if self.domain not in CONTOUR_DOMAINS:
            raise ValueError(f"contour deformation is implemented for the domains "
                             f"{CONTOUR_DOMAINS}, not {self.domain!r}")
        if self.domain == "decomposed" and self._subtractions is not None:
            raise ValueError("contour deformation over the decomposed sectors needs an integrand "
                             "bounded at the faces (no sector exponent between -1 and 0)")
        kin = self._kin(kinematics)
        kin = np.asarray(kin, dtype=np.float64)
        self._derivatives()
        lams = np.broadcast_to(np.asarray(lam, np.float64), (kin.shape[0],))
        flat = (self._flat_at_a_corner(kin, lams) if self._local_strength()
                else np.zeros(kin.shape[0], bool))
        # kappa = 0 gives the fixed strength exactly: a point of a batch that takes the local
        # strength's kernel for another point is evaluated as it would be alone
        kappa = jnp.asarray(np.where(flat, LOCAL_KAPPA, 0.0), self.rdtype)
        kj, lj = jnp.asarray(kin, self.rdtype), jnp.asarray(lams, self.rdtype)
        if kin.shape[0] == 1 and np.ndim(lam) == 0:
            if flat[0]:
                return jax.tree_util.Partial(self._deformed_eval_local, kj, lj[0], kappa[0])
            return jax.tree_util.Partial(self._deformed_eval, kj, lj[0])
        if flat.any():
            return jax.tree_util.Partial(self._deformed_points_local, kj, lj, kappa)
        return jax.tree_util.Partial(self._deformed_points, kj, lj)

    def _deformed_points(self, kin, lam, u):
        """Several kinematic points ``kin[K, s]``, each on its own contour (``lam[K]``):
        ``[n, K]``, the one-point integrand mapped over the points."""
        one = jax.vmap(lambda k, l: self._deformed_eval(k[None, :], l, u)[:, 0], out_axes=1)
        return one(kin, lam)

    def _deformed_points_local(self, kin, lam, kappa, u):
        """:meth:`_deformed_points` with :func:`local_strength` (``kappa[K]``; 0: lam)."""
        one = jax.vmap(lambda k, l, c: self._deformed_eval(k[None, :], l, u, c)[:, 0],
                       out_axes=1)
        return one(kin, lam, kappa)

    def _deformed_eval_local(self, kin, lam, kappa, u):
        return self._deformed_eval(kin, lam, u, kappa)

    def _flat_at_a_corner(self, kin: np.ndarray, lam: np.ndarray) -> np.ndarray:
        """For each point of ``kin[K, s]`` (strengths ``lam[K]``), whether
        :func:`local_strength` grows the strength by more than about 2 % at a vertex of the
        simplex: at one loop V is flat only near faces on which it nearly vanishes, whose
        vertices are then flat too (the gradient is linear along such a face).  Elsewhere the
        point is bound with the fixed strength, whose kernel is cheaper (on a CPU 1.7 times
        for the pentagon's)."""
        worst = np.asarray(self._corner_flatness(jnp.asarray(kin, self.rdtype),
                                                 jnp.asarray(lam, self.rdtype)))
        return worst < LOCAL_TRIGGER * LOCAL_KAPPA

    @partial(jax.jit, static_argnums=0)
    def _corner_flatness(self, kin, lam):
        """min over the vertices x = e_i of lam sqrt(g^2 + h^2) (:func:`local_strength`), for
        each point of ``kin[K, s]``: ``[K]``."""
        N = self.N
        corners = [jnp.eye(N, dtype=self.rdtype)[:, k] for k in range(N)]

        def one(k, l):
            v, H, _, _ = self._deformation_terms(corners, k[None, :])
            _, h2 = _hessian_rows(corners, H)
            return jnp.min(l * jnp.sqrt(sum(t * t for t in v) + h2))
        return jax.vmap(one)(kin, lam)

    def deformation_lambda(self, kinematics: Mapping[str, object] | np.ndarray,
                           n: int = 4096, pilot: "LatticePilot | None" = None) -> float:
        """A deformation strength for :meth:`bind_deformed`, from a deterministic pilot sample.

        lam is dimensionful (V = F/U has the units of the kinematics), so candidates are taken
        relative to lam0 = 1 / max |dV/dx_k| over a Kronecker grid of ``n`` points in every
        sector: lam = c lam0 for c = 1/4 .. 16 in factors of 2.  A candidate is valid when the
        deformation holds (Im V(z) <= 0, no NaN) at every grid point, and eligible when the
        next larger one is valid too (a margin against the points the grid misses).  The
        eligible candidate with the smallest sample variance of the integrand (real plus
        imaginary) wins: the variance is what cubature pays for.  With ``pilot`` (a
        :class:`LatticePilot`, for a QMC run) the eligible candidate with the smallest error
        estimate of that small randomized lattice rule wins instead, and its points must be
        valid too: a lattice rule pays for the integrand's roughness, which the variance
        does not see (on the decomposed sectors of pySecDec's elliptic two-loop box 2^20
        lattice points are more than ten times more accurate at the lattice pilot's strength
        than at the smallest variance's, ``tests/test_contour.py``).  When none is eligible,
        lam0/4 is halved until valid.
        """
        kin = self._kin(kinematics)
        kin = jnp.asarray(np.asarray(kin, dtype=np.float64), self.rdtype)
        self._derivatives()
        t = jnp.asarray(kronecker_points(n, self.ndim), self.rdtype)
        ahead = ("contour candidates", id(self), kin.shape, t.shape)
        if regions.ahead_enabled(None):     # compiled while the first pilot compiles and runs
            cands = jnp.zeros((len(LAMBDA_FACTORS),), self.rdtype)
            regions.AHEAD.submit(ahead, partial(regions.compile_for, type(self)._candidates_jit,
                                                (self, kin, cands, t)))
        worst = float(self._pilot_max_v(kin, t))
        lam0 = 1.0 / worst if worst > 0 else 1.0
        ok, var = [], []
        cands = jnp.asarray([c * lam0 for c in LAMBDA_FACTORS], self.rdtype)
        regions.AHEAD.wait(ahead)
        for vals in np.asarray(self._candidates_jit(kin, cands, t)):
            ok.append(bool(np.all(np.isfinite(vals))))
            var.append(float(np.var(vals.real) + np.var(vals.imag)) if ok[-1] else np.inf)
        if pilot is not None:       # the lattice rule's error replaces the variance
            x, w = pilot.nodes(self.ndim)
            # in slices of the grid's shape: the compiled pilot serves both
            vals = np.concatenate([np.asarray(self._candidates_jit(kin, cands, xs))
                                   for xs in _slices(x, n, self.rdtype)], axis=1)
            score = pilot.error(vals.T * w[:, None])                       # [candidates]
            ok = [o and bool(np.isfinite(e)) for o, e in zip(ok, score)]
            var = [float(e) if o else np.inf for o, e in zip(ok, score)]
        best = _best_factor(ok, var)
        if best is not None:
            return float(best * lam0)
        lam = LAMBDA_FACTORS[0] * lam0
        for _ in range(30):
            lam *= 0.5
            if bool(np.all(np.isfinite(np.asarray(self._deformed_jit(kin, lam, t))))):
                break
        return float(lam)

    def deformation_lambdas(self, kin: np.ndarray, n: int = 4096,
                            pilot: "LatticePilot | None" = None) -> np.ndarray:
        """:meth:`deformation_lambda` of every point of ``kin[K, s]``, each pilot evaluated for
        all points at once (one call per candidate)."""
        kin = jnp.asarray(np.asarray(kin, dtype=np.float64), self.rdtype)
        self._derivatives()
        t = jnp.asarray(kronecker_points(n, self.ndim), self.rdtype)
        worst = np.asarray(self._pilot_max_v_points(kin, t))
        lam0 = np.where(worst > 0, 1.0 / np.where(worst > 0, worst, 1.0), 1.0)
        if pilot is not None:
            x, w = pilot.nodes(self.ndim)
        factors = np.asarray(LAMBDA_FACTORS)
        # validity and sample variance of every candidate at every point, reduced on the device
        ok, var = (np.array(a) for a in self._variances_jit(kin, factors[:, None] * lam0, t))
        if pilot is not None:       # the lattice rule's error replaces the variance
            for i, c in enumerate(factors):
                vals = np.concatenate([np.asarray(self._deformed_points_jit(
                    kin, np.asarray(c * lam0), xs)) for xs in _slices(x, n, self.rdtype)])
                v = pilot.error(vals * w[:, None])
                ok[i] &= np.isfinite(v)
                var[i] = v
        var = np.where(ok, var, np.inf)                                 # [factors, K]
        lam = np.empty(kin.shape[0])
        for k in range(kin.shape[0]):
            best = _best_factor(ok[:, k], var[:, k])
            if best is not None:
                lam[k] = best * lam0[k]
            else:       # none eligible: halved below the smallest candidate until valid
                lam[k] = self.deformation_lambda(np.asarray(kin[k:k + 1]), n)
        return lam

    @partial(jax.jit, static_argnums=0)
    def _deformed_points_jit(self, kin, lam, u):
        return self._deformed_points(kin, lam, u)

    @partial(jax.jit, static_argnums=0)
    def _variances_jit(self, kin, lams, u):
        """For the strengths ``lams[c, K]`` of the points ``kin[K, s]``: whether the integrand
        is finite at every point ``u`` and its sample variance (real plus imaginary part),
        both ``[c, K]``; one candidate at a time, so memory stays that of one evaluation."""
        def candidate(lam):
            vals = self._deformed_points(kin, lam, u)                  # [n, K]
            return (jnp.all(jnp.isfinite(vals), axis=0),
                    jnp.var(vals.real, axis=0) + jnp.var(vals.imag, axis=0))
        return jax.lax.map(candidate, lams)

    @partial(jax.jit, static_argnums=0)
    def _pilot_max_v(self, kin, t):
        """max_k |dV/dx_k| over the points t of every sector."""
        def sector(carry, idx):
            x = self._sector_columns(t, idx)
            v = self._deformation_terms(x, kin)[0]
            return jnp.maximum(carry, jnp.max(jnp.abs(jnp.stack(v)))), None
        out, _ = jax.lax.scan(sector, jnp.zeros((), self.rdtype), self._sector_index())
        return out

    @partial(jax.jit, static_argnums=0)
    def _pilot_max_v_points(self, kin, t):
        """:meth:`_pilot_max_v` of every point of ``kin[K, s]``: ``[K]``."""
        return jax.vmap(lambda k: self._pilot_max_v(k[None, :], t))(kin)

    @partial(jax.jit, static_argnums=0)
    def _deformed_jit(self, kin, lam, u):
        return self._deformed_eval(kin, lam, u)

    @partial(jax.jit, static_argnums=0)
    def _candidates_jit(self, kin, lams, u):
        """The one-point integrand at ``u`` for every strength of ``lams``: ``[len(lams), n]``
        (one call for a pilot's candidates)."""
        return jax.vmap(lambda lam: self._deformed_eval(kin, lam, u)[:, 0])(lams)

    def _derivatives(self):
        """The generated set U, F, dU/dx_k, dF/dx_k, d2U/dx_k dx_j, d2F/dx_k dx_j (j <= k)."""
        if self._derivset is None:
            U, F, xs = self.diagram.U, self.diagram.F, self.xs
            polys = [U, F] + [sympy.diff(U, x) for x in xs] + [sympy.diff(F, x) for x in xs]
            pairs = [(k, j) for k in range(self.N) for j in range(k + 1)]
            polys += [sympy.diff(U, xs[k], xs[j]) for k, j in pairs]
            polys += [sympy.diff(F, xs[k], xs[j]) for k, j in pairs]
            self._derivset = (PolySet(polys, xs, self._sym_objs), pairs)
        return self._derivset

    def _local_strength(self) -> bool:
        """Whether the deformation can take :func:`local_strength`: where U is linear and F
        quadratic in x (one loop), the third derivatives of V that the strength's gradient
        needs are a closed form in its second ones; elsewhere the strength is lam.  A point
        takes it where :meth:`_flat_at_a_corner` says it matters."""
        if self._quadratic is None:
            xs = self.xs
            self._quadratic = (sympy.Poly(self.diagram.U, *xs).total_degree() <= 1
                               and sympy.Poly(self.diagram.F, *xs).total_degree() <= 2)
        return self._quadratic

    def _sector_index(self):
        """[N, N] int32: row l lists, for x_1..x_N in sector l, the column of [t | 1] to use."""
        d = self.ndim
        return jnp.asarray([[k if k < l else (d if k == l else k - 1) for k in range(self.N)]
                            for l in range(self.N)], jnp.int32)

    def _sector_columns(self, t, idx):
        """The N Feynman parameters of a primary sector (x_l = 1) as columns: ``idx`` is a row
        of :meth:`_sector_index` (traced, so one scan body serves every sector)."""
        ext = jnp.concatenate([t, jnp.ones(t.shape[:1] + (1,), t.dtype)], axis=1)
        full = jnp.take(ext, idx, axis=1)
        return [full[:, k] for k in range(self.N)]

    def _deformation_terms(self, x, kin):
        """At real points (N columns), with V = F/U: v_k = dV/dx_k and the Hessian d2V/dx_k dx_j
        ([n] each; the Hessian as a dict over j <= k), and U and dU/dx_k."""
        dset, pairs = self._derivatives()
        N = self.N
        vals = dset(x, kin, self.rdtype, flat=True)                        # one point: [n] each
        U, F = vals[0], vals[1]
        Uk, Fk = vals[2:2 + N], vals[2 + N:2 + 2 * N]
        nP = len(pairs)
        Ukj = dict(zip(pairs, vals[2 + 2 * N:2 + 2 * N + nP]))
        Fkj = dict(zip(pairs, vals[2 + 2 * N + nP:]))
        # one reciprocal of U, then products: XLA keeps x / U as a division (not exact as a
        # product), and the N + N(N+1)/2 divisions per point and sector, duplicated into the
        # fusions of the Jacobian's entries, cost more than the rest of the integrand on a CPU
        r = 1.0 / U
        V = F * r
        v = [(Fk[k] - V * Uk[k]) * r for k in range(N)]
        H = {(k, j): (Fkj[k, j] - v[j] * Uk[k] - v[k] * Uk[j] - V * Ukj[k, j]) * r
             for k, j in pairs}
        return v, H, U, Uk

    def _deformed_at(self, x, jac, kin, lam, kappa=None):
        """The deformed integrand at real points given as N columns ``x`` (a chart of the
        projective simplex; ``jac``: the chart's Jacobian, or None): ``[n]`` complex, NaN
        where the deformation fails."""
        N = self.N
        # the contour is held fixed under derivatives in the kinematics (the integral does
        # not depend on it: loopint.derivatives)
        v, H, U, Uk = self._deformation_terms(x, jax.lax.stop_gradient(kin))
        # dz_k/dx_j = delta_kj - i A_kj,  A = lam (diag(v) + diag(x) H) + u dlam^T, u = x v
        A = [[x[k] * H[max(k, j), min(k, j)] + (v[k] if j == k else 0.0) for j in range(N)]
             for k in range(N)]
        if kappa is not None:
            lam, dlam = local_strength(x, v, H, U, Uk, lam, self.rdtype, kappa)
            A = [[lam * A[k][j] + x[k] * v[k] * dlam[j] for j in range(N)] for k in range(N)]
            det = det_identity_minus_i(A, 1.0)                            # [n]
        else:
            det = det_identity_minus_i(A, lam)
        z = [jax.lax.complex(x[k], -lam * x[k] * v[k]) for k in range(N)]
        if jac is not None:
            det = det * jac
        U, F = self._UF(z, kin, flat=True)
        val = self._x_powers(z, det) * power_real(U, self.a) * power_complex(F, self.b)
        imV = jnp.imag(F * jnp.conj(U))                                    # sign of Im(F/U)
        bad = imV > 1e-12 * jnp.abs(F) * jnp.abs(U)
        return jnp.where(bad, jnp.nan, val)

    def _deformed_eval(self, kin, lam, u, kappa=None):
        kin = jnp.asarray(kin, self.rdtype)
        u = jnp.asarray(u, self.rdtype)
        t, w = self._transform(u)
        # one traced sector body, scanned over the sectors: the program (and the GPU
        # compilation time) does not grow with their number
        if self.domain == "decomposed":
            # a sector's map x = t^A and its Jacobian t^J as one product exp(log t M^T), M the
            # exponents [N + 1, d], formed once per sector (exact powers picked by selects, as
            # the delta integrand forms them, are recomputed inside every fusion that reads
            # x).  The contraction over d is a matrix product on a CPU and an elementwise
            # product summed over d elsewhere, which a GPU fuses with the exponential (on an
            # H200 the k5 ladder's integrand then compiles and runs faster; on a CPU the
            # matrix product is the faster one).  The relative error, ~1e-14, moves the
            # point; map and Jacobian stay consistent.
            A, J = self._maps
            logt = jnp.log(jnp.maximum(t, _T_MIN.get(self.precision, 1e-20)))
            by_product = _contract_by_product()

            def sector(total, m):
                if by_product:
                    x = jnp.exp(logt @ m.T)                                # [n, N + 1]
                else:
                    x = jnp.exp(jnp.sum(logt[:, None, :] * m[None, :, :], axis=-1))
                cols = [x[:, j] for j in range(self.N)]
                return total + self._deformed_at(cols, x[:, self.N], kin, lam, kappa), None

            maps = jnp.asarray(np.concatenate([A, J[:, None, :]], axis=1), self.rdtype)
        else:
            def sector(total, idx):
                return total + self._deformed_at(self._sector_columns(t, idx), None, kin,
                                                 lam, kappa), None

            maps = self._sector_index()
        total, _ = jax.lax.scan(sector, jnp.zeros(t.shape[:1], self.cdtype), maps)
        if w is not None:
            total = total * w
        return total[:, None]


def _contract_by_product() -> bool:
    """Whether the decomposed sectors' maps contract ``log t`` with the exponents as a matrix
    product (on a CPU), not as an elementwise product summed (elsewhere)."""
    return jax.default_backend() == "cpu"


@partial(jax.jit, static_argnames="name")
def _periodized(t, *, name: str):
    """The transform ``name`` and its Jacobian at the points ``t``, as one compiled call (a
    GPU compiles every eager operation on its own)."""
    from .engines import periodize
    return periodize.get(name).apply(t)


@dataclasses.dataclass(frozen=True)
class LatticePilot:
    """A small randomized lattice rule on which :meth:`ContourIntegrand.deformation_lambda`
    compares the deformation strengths for a QMC run: the first ``points`` points of the
    embedded lattice sequence (:func:`loopint.engines.lattice.embedded_vector`) under
    ``shifts`` fixed pseudo-random shifts (a deterministic pilot), through the run's
    periodizing transform."""

    periodize: str
    points: int = 2**12
    shifts: int = 8

    @lru_cache(maxsize=16)
    def nodes(self, d: int) -> tuple[np.ndarray, np.ndarray]:
        """The pilot's points ``x[shifts * points, d]`` in the unit cube and their weights
        (the transform's Jacobian), shift by shift; made once per pilot and dimension (every
        point of a scan uses them)."""
        from .engines import lattice
        z = lattice.embedded_vector(d)
        k = np.arange(self.points, dtype=np.int64)
        t = ((k[:, None] * z[None, :]) % self.points) / self.points
        shifts = np.random.default_rng(PILOT_SEED).random((self.shifts, 1, d))
        t = np.mod(t[None] + shifts, 1.0).reshape(-1, d)
        x, w = _periodized(t, name=self.periodize)
        x = np.clip(np.asarray(x), np.finfo(np.float64).tiny, 1.0 - np.finfo(np.float64).epsneg)
        return x, np.broadcast_to(np.asarray(w, np.float64), (t.shape[0],))

    def error(self, wf: np.ndarray) -> np.ndarray:
        """The rule's error estimate (the standard error of the shifts' means, real and
        imaginary parts in quadrature) for values ``wf[shifts * points, ...]``; NaN where a
        value is not finite."""
        means = wf.reshape((self.shifts, self.points) + wf.shape[1:]).mean(axis=1)
        var = np.var(means.real, axis=0, ddof=1) + np.var(means.imag, axis=0, ddof=1)
        return np.sqrt(var / self.shifts)


def _slices(x: np.ndarray, n: int, dtype) -> list:
    """``x`` in consecutive slices of ``n`` rows, as device arrays (``len(x)`` a multiple of
    ``n``)."""
    if len(x) % n:
        raise ValueError(f"pilot of {len(x)} points is not a multiple of the grid's {n}")
    return [jnp.asarray(x[i:i + n], dtype) for i in range(0, len(x), n)]


PILOT_SEED = 20231  # the shifts of LatticePilot: fixed, so that a point's strength is reproducible


def pilot_for(stage) -> LatticePilot | None:
    """The pilot that chooses the deformation strength for ``stage``'s engine: a
    :class:`LatticePilot` through its transform for QMC, None (the variance) otherwise."""
    if stage.method != "qmc":
        return None
    return LatticePilot(stage.engine.periodize)


# Candidate deformation strengths, in units of 1 / max |dV/dx_k| over the pilot points.
LAMBDA_FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)


def _best_factor(ok, var) -> float | None:
    """Of :data:`LAMBDA_FACTORS`, the eligible one (valid, and the next larger valid too) with
    the smallest pilot variance; None when none is eligible."""
    eligible = [(var[i], LAMBDA_FACTORS[i]) for i in range(len(LAMBDA_FACTORS) - 1)
                if ok[i] and ok[i + 1]]
    return min(eligible)[1] if eligible else None


# The least relative shift of the Feynman parameters that the deformation's local strength
# keeps where V is flat (:func:`local_strength`).
LOCAL_KAPPA = 0.1
# The local strength's kernel is bound where lam sqrt(g^2 + h^2) falls below this many kappa at
# a vertex of the simplex (ContourIntegrand._flat_at_a_corner): the growth there exceeds 1.5 %.
LOCAL_TRIGGER = 2.0


def _hessian_rows(x, H):
    """R_l = sum_j H_lj^2 and h^2 = sum_l x_l^2 R_l (H as the dict over j <= k of
    :meth:`ContourIntegrand._deformation_terms`)."""
    N = len(x)
    R = [sum(H[max(l, j), min(l, j)] ** 2 for j in range(N)) for l in range(N)]
    return R, sum(x[l] * x[l] * R[l] for l in range(N))


def local_strength(x, v, H, U, Uk, lam, dtype, kappa=LOCAL_KAPPA):
    """The deformation's strength at each point and its gradient, for U linear and F quadratic
    in x (one loop):

        Lam = lam (1 + r^2)^(1/4),   r = kappa^2 / (lam^2 (g^2 + h^2) + mu^2),
        g^2 = sum_k (dV/dx_k)^2,   h^2 = sum_kj (x_k d2V/dx_k dx_j)^2,

    ``kappa`` = :data:`LOCAL_KAPPA` (may be traced; 0 gives Lam = lam exactly), ``mu^2`` the
    precision's machine epsilon (the growth
    stops at kappa/mu, 7e6 in float64); returns Lam ``[n]`` and dLam/dx_j (a list of ``[n]``).

    With a fixed strength the parameters move by ``x_k lam dV/dx_k``: ``lam g`` bounds the
    relative shift and ``lam (g + h)`` the Jacobian's departure from the identity.  Where both
    are small, V is flat on the scale of the parameters: near a face on which V vanishes to
    second order and a singularity of a reduced diagram close to that face (the vertex with a
    massless exchange and both legs at p^2 = m^2 (1 + 1e-6): F = rho (rho - 1e-6) + ...
    near the corner rho = 0, where g and h are ~1e-6).  A fixed-strength contour stays within
    ``lam g`` of the real one there, far closer than the scale of the integrand's structure,
    and leaves a near pole (that vertex's run stops at the region bound with an error as large
    as the value).  There Lam ~ kappa/sqrt(g^2 + h^2), so that the parameters move by up to
    about a tenth of their value (kappa g/sqrt(g^2 + h^2)); where ``lam sqrt(g^2 + h^2) >
    2 kappa`` it is lam within 2 %.  Little near a pinch inside the simplex (a normal threshold
    of two massive lines approached): there the gradient vanishes at the pinch but h does not,
    so Lam grows only as far as lam h allows, whereas a strength growing like 1/g
    would turn the contour's crossing of the real axis between the two close zeros of F into a
    step narrower than the zeros' distance, which no error estimate sees (with h left out, the
    D = 2 bubble 3e-11 above its threshold is "converged" far off at rtol 1e-4,
    ``tests/test_thresholds.py``).

    Where Lam is grown it hardly depends on lam, so a smaller lam (the retries after a sign
    violation, :data:`CONTOUR_SHRINK`) does not move the contour there: a violation inside such
    a region sends the point to the delta sequence.

    Lam is homogeneous of degree 0 (g and h are), so the deformation stays projective; it
    depends on x, and the Jacobian's rank-one term from dLam keeps Cauchy's theorem exact
    (:meth:`ContourIntegrand._deformed_at`).  dLam needs the third derivatives of V, with U
    linear and F quadratic d(d2V/dx_k dx_j)/dx_l = -(U_l H_kj + U_k H_jl + U_j H_kl)/U.  To
    first order Im V = -Lam sum_k x_k (dV/dx_k)^2 <= 0, as with a fixed strength."""
    kappa2 = kappa * kappa
    mu2 = float(jnp.finfo(dtype).eps)
    N = len(v)

    def Hm(k, j):
        return H[max(k, j), min(k, j)]
    R, h2 = _hessian_rows(x, H)
    x2 = [xk * xk for xk in x]
    D = lam * lam * (sum(t * t for t in v) + h2) + mu2
    iD = 1.0 / D
    r = kappa2 * iD
    q2 = jnp.sqrt(1.0 + r * r)
    q = jnp.sqrt(q2)                                                        # (1 + r^2)^(1/4)
    # dh^2/dx_l = 2 x_l R_l - (2/U) (U_l h^2 + sum_j b_j H_jl + sum_k x_k^2 e_k H_kl),
    # b_j = sum_k x_k^2 U_k H_kj, e_k = sum_j H_kj U_j
    b = [sum(x2[k] * Uk[k] * Hm(k, j) for k in range(N)) for j in range(N)]
    e = [sum(Hm(k, j) * Uk[j] for j in range(N)) for k in range(N)]
    iU = 1.0 / U
    # dD/dx_l / (2 lam^2) = (H v)_l + dh^2/dx_l / 2
    half = [sum(v[k] * Hm(k, l) for k in range(N)) + x[l] * R[l]
            - iU * (Uk[l] * h2 + sum(b[j] * Hm(j, l) + x2[j] * e[j] * Hm(j, l)
                                     for j in range(N)))
            for l in range(N)]
    # dLam/dx_l = lam dq/dD dD/dx_l = -lam^3 r^2 / (D q^3) * half_l
    c = -(lam * lam * lam) * r * r * iD / (q2 * q)
    return lam * q, [c * t for t in half]


def det_identity_minus_i(A, lam):
    """det(I - i lam A) for a batch of real N x N matrices given as nested lists of [n] arrays.

    Gaussian elimination without pivoting, unrolled into elementwise operations (XLA fuses
    them; no LAPACK call per point).  Safe without pivoting for the deformation's A = diag(v) +
    diag(x) H with H symmetric and x >= 0: A is similar, through the positive diagonal
    diag(x)^(1/2), to a real symmetric matrix, so I - i lam A has the pivots of a matrix whose
    Hermitian part is the identity; that class is closed under Schur complements, every pivot
    has real part >= 1 and elimination is stable.  The local strength adds a rank-one term,
    u dLam^T (:func:`local_strength`), outside that class; against numpy's pivoted LU the
    determinants agreed to 1.8e-14 relative at 4e4 points (uniform and log-uniform towards the
    faces) of every sector of each point of the physical test set, the strength grown up to
    1.4e6 times at the off-shell vertex with a massless exchange (``tests/test_contour.py``
    checks that vertex and the pentagon).
    """
    N = len(A)
    M = [[jax.lax.complex(jnp.full_like(A[k][j], 1.0 if j == k else 0.0), -lam * A[k][j])
          for j in range(N)] for k in range(N)]
    det = None
    for p in range(N):
        piv = M[p][p]
        det = piv if det is None else det * piv
        # 1/piv as conj(piv)/|piv|^2: one real division, without the scaling branches of a
        # complex division (|piv| >= Re piv >= 1, see above)
        re, im = jnp.real(piv), jnp.imag(piv)
        s = 1.0 / (re * re + im * im)
        inv = jax.lax.complex(re * s, -im * s)
        for k in range(p + 1, N):
            f = M[k][p] * inv
            for j in range(p + 1, N):
                M[k][j] = M[k][j] - f * M[p][j]
    return det




# ------------------------------------------------------------------ the contour path
def contour_points(stage, kin: np.ndarray, prefactor: complex, contour_lambda,
                   derivatives=None) -> dict:
    """Physical-region points ``kin[P, s]`` at delta = 0 on a deformed contour (``stage``: the
    plan's contour :class:`~loopint.plan.Stage`, whose integrand is a
    :class:`ContourIntegrand` on the primary or decomposed sectors).  ``contour_lambda``:
    ``"auto"`` (:meth:`ContourIntegrand.deformation_lambda`, with the lattice pilot for a QMC
    stage, :func:`pilot_for`; shrunk after a sign violation) or the
    strength.  Returns per point the value and error (prefactor applied), convergence,
    status and strength; with ``derivatives`` (a :class:`loopint.derivatives.Request`) also
    theirs (``derivatives[j, p]``, ``derivative_errors``), on the same contour.

    The first point is one engine run of its own.  When it was cheap (at most
    :data:`BATCH_MAX_EVALS` evaluations), the others are integrated together, up to
    :data:`CONTOUR_BATCH` at a time, as one vector integrand with a contour per point, within
    :data:`BATCH_BUDGET` times the first point's evaluations: for cheap integrals the cost of
    a run is its fixed overhead (pilots, compilation of nothing new, the engine's host loop),
    which a batch pays once.  A point of a batch is accepted when its own error estimates
    (value and derivatives) meet the tolerance; those finite but above it are batched again
    with a larger budget (:data:`BATCH_BUDGET`); the others (a sign violation, a point harder
    than the batches' budgets) get a run of their own, so no point holds the batch back."""
    P = kin.shape[0]
    B = blocks(derivatives)
    acc = _ContourPoints(P, B, prefactor)
    acc.one(stage, kin, 0, contour_lambda, derivatives)
    todo = list(range(1, P))
    if todo and acc.cost[0] <= BATCH_MAX_EVALS:
        budget = max(int(BATCH_BUDGET * acc.cost[0]), 1)
        rounds = todo
        while rounds:
            for start in range(0, len(rounds), CONTOUR_BATCH):
                acc.batch(stage, kin, rounds[start:start + CONTOUR_BATCH], contour_lambda,
                          derivatives, budget)
            # points finite but short of the tolerance at the budget: another round, with
            # BATCH_BUDGET times the budget, while batching pays (see BATCH_MAX_EVALS)
            budget = int(budget * BATCH_BUDGET)
            rounds = [i for i in rounds if acc.short[i]]
            if budget > BATCH_BUDGET * BATCH_MAX_EVALS:
                break
        todo = [i for i in todo if not acc.conv[i]]
    hint = _next_start(stage, acc.levels[0])
    for i in todo:
        acc.one(stage, kin, i, contour_lambda, derivatives, n_start=hint)
        hint = _next_start(stage, acc.levels[i])
    out = {"method": stage.method, "value": acc.value[0], "error": acc.error[0],
           "converged": acc.conv, "status": acc.status, "evaluations": acc.evaluations,
           "lambda": acc.lams}
    if derivatives is not None:
        out.update(derivatives=acc.value[1:], derivative_errors=acc.error[1:])
    return out


# Points of a physical batch integrated together (one vector integrand); its budget is this
# many times the evaluations of the batch's first point alone, and only points whose first
# run took at most BATCH_MAX_EVALS evaluations are batched (beyond that the integration, not
# the overhead of a run, is the cost).  Points of a batch whose estimates are finite but
# above the tolerance at its budget (past a threshold a scan's points need several times the
# first point's evaluations) are batched again with BATCH_BUDGET times the budget, while it
# stays within BATCH_BUDGET * BATCH_MAX_EVALS; they keep the strength chosen for them.
CONTOUR_BATCH = 512
BATCH_BUDGET = 4.0
BATCH_MAX_EVALS = 10**6
# Pilot points per batched point for its deformation strength: a quarter of a single point's
# (the batch's pilot would otherwise cost as much as its integration); a strength the pilot
# misjudges shows in the run (NaN, or an estimate above tolerance) and the point is rerun
# alone with the full pilot.
BATCH_PILOT = 1024


def _next_start(stage, n_last: int | None) -> int | None:
    """The first QMC level for the next point of a scan: a quarter of the last level of the
    previous point (``n_last``, None where it did not converge).  Neighbouring points of a
    scan need similar levels, and the levels below are host round trips that cost more than
    their evaluations.  A prime level is a rule of its own, so a run started there has the
    accuracy of one that climbed to it (with other shifts); on an embedded lattice sequence
    it evaluates exactly the points (and gives the estimate, to rounding) of one that climbed
    to it.  Either way the hint costs nothing for a point that gets there anyway, and one that
    would have stopped sooner pays for the hint's level instead of its own.  None (the
    engine's own start) for other engines."""
    if stage.method != "qmc" or not n_last:
        return None
    return max(int(stage.engine.n_start), int(n_last) // 4)


class _ContourPoints:
    """Per-point results of :func:`contour_points`, filled by single runs and batches."""

    def __init__(self, P: int, B: int, prefactor: complex):
        self.B, self.prefactor = B, prefactor
        self.value = np.zeros((B, P), complex)
        self.error = np.zeros((B, P), complex)
        self.conv = np.zeros(P, bool)
        self.status = [""] * P
        self.lams = [0.0] * P
        self.cost = np.zeros(P, np.int64)
        self.levels: list[int | None] = [None] * P     # a converged QMC run's last level
        self.short = np.zeros(P, bool)     # batched: finite, but above the tolerance
        self.evaluations = 0

    def one(self, stage, kin, i: int, contour_lambda, derivatives,
            n_start: int | None = None) -> None:
        """Point ``i`` by a run of its own, lambda shrunk after a sign violation;
        ``n_start``: the first QMC level (:func:`_next_start`), None for the engine's."""
        ig = stage.integrand
        point = kin[i:i + 1]
        options = {} if n_start is None else {"n_start": n_start}
        if contour_lambda == "auto":
            # the run's kernels compile (where the engine compiles ahead) during the pilot:
            # they depend on the strength's shape, not on its value
            stage.prepare(with_derivatives(derivatives, ig.bind_deformed(point, 1.0))[0],
                          **options)
        lam = (ig.deformation_lambda(point, pilot=pilot_for(stage)) if contour_lambda == "auto"
               else float(contour_lambda))
        for _ in range(CONTOUR_RETRIES + 1):
            f, w = with_derivatives(derivatives, ig.bind_deformed(point, lam))
            r = stage.integrate(f, **options)
            self.evaluations += r.evaluations
            self.cost[i] += r.evaluations
            # a point where Im V(z) > 0 (the pilot grid missed it) gives NaN: a smaller
            # deformation, unless lambda was given
            if r.code is not Status.NONFINITE or contour_lambda != "auto":
                break
            log.info("contour: sign violation at lambda = %.3g, retrying with %.3g", lam,
                     lam * CONTOUR_SHRINK)
            lam *= CONTOUR_SHRINK
        self.lams[i] = lam
        self.levels[i] = r.info.get("n") if stage.method == "qmc" and r.converged else None
        self.value[:, i] = split(r.value, self.B, 1, w)[:, 0, 0] * self.prefactor
        self.error[:, i] = scale_error(split(r.error, self.B, 1, w)[:, 0, 0], self.prefactor)
        self.conv[i] = r.converged
        self.status[i] = r.status

    def batch(self, stage, kin, idx: list, contour_lambda, derivatives, budget: int) -> None:
        """The points ``idx`` as one vector integrand; each accepted where its own estimates
        meet the stage's tolerance (as the engine judges a component: the errors of the real
        and imaginary parts in quadrature against rtol |value|, every derivative too)."""
        ig = stage.integrand
        K = len(idx)
        pts = kin[idx]
        if contour_lambda != "auto":
            lam = np.full(K, float(contour_lambda))
        elif np.all(self.short[idx]):           # a further round: the strengths chosen before
            lam = np.asarray([self.lams[i] for i in idx])
        else:
            pilot = pilot_for(stage)
            if pilot is not None:
                pilot = dataclasses.replace(pilot, points=BATCH_PILOT)
            lam = ig.deformation_lambdas(pts, BATCH_PILOT, pilot)
        f, w = with_derivatives(derivatives, ig.bind_deformed(pts, lam))
        r = dataclasses.replace(stage, max_evals=min(stage.max_evals, budget)).integrate(f)
        self.evaluations += r.evaluations
        v, e = split(r.value, self.B, K), split(r.error, self.B, K)       # as integrated
        with np.errstate(invalid="ignore"):
            met = np.isfinite(v) & np.isfinite(e) & (
                np.hypot(e.real, e.imag) <= np.maximum(stage.atol, stage.rtol * np.abs(v)))
        ok = np.all(met, axis=(0, 2))
        finite = np.all(np.isfinite(v) & np.isfinite(e), axis=(0, 2))
        for j, i in enumerate(idx):
            self.short[i] = finite[j] and not ok[j]
            self.lams[i] = float(lam[j])
        if w is not None:
            v, e = v / w[:, :, None], e / w[:, :, None]
        took = np.flatnonzero(ok)
        at = np.asarray(idx)[took]
        self.value[:, at] = v[:, took, 0] * self.prefactor
        self.error[:, at] = scale_error(e[:, took, 0], self.prefactor)
        self.conv[at] = True
        for i in at:
            self.status[i] = "converged"


def _blocks(*outs) -> int:
    """The value plus the derivatives that the stages' outputs carry."""
    return 1 + max(len(o["derivatives"]) if o is not None and "derivatives" in o else 0
                   for o in outs)


def _stacked(out: dict, i: int) -> tuple[np.ndarray, np.ndarray]:
    """Point ``i`` of a stage's output: the value and its derivatives, and their errors."""
    if "derivatives" not in out:
        return np.atleast_1d(out["value"][i]), np.atleast_1d(out["error"][i])
    return (np.concatenate([[out["value"][i]], out["derivatives"][:, i]]),
            np.concatenate([[out["error"][i]], out["derivative_errors"][:, i]]))


def combine_physical(c_out: dict | None, d_out: dict | None, P: int, cross_check: bool) -> dict:
    """Per physical point: the contour's result where it converged (or where it is the only
    method), otherwise the delta sequence's; with ``cross_check`` both, compared (more than
    :data:`CROSS_CHECK_SIGMAS` combined errors apart: ``methods disagree``)."""
    value = np.zeros((_blocks(c_out, d_out), P), complex)
    error = np.zeros_like(value)
    conv = np.zeros(P, bool)
    status: list = [""] * P
    method: list = [""] * P
    d_at = {} if d_out is None else {int(k): i for i, k in enumerate(d_out["points"])}
    for p in range(P):
        c_ok = c_out is not None and bool(c_out["converged"][p])
        if c_out is not None and (c_ok or p not in d_at):
            value[:, p], error[:, p] = _stacked(c_out, p)
            conv[p], status[p], method[p] = c_ok, c_out["status"][p], "contour"
        else:
            i = d_at[p]
            value[:, p], error[:, p] = _stacked(d_out, i)
            conv[p], status[p], method[p] = bool(d_out["converged"][i]), d_out["status"][i], \
                "delta sequence"
            if c_out is not None:
                status[p] = (status[p] if conv[p] else status[p] + "; ") + \
                    ("" if conv[p] else f"contour: {c_out['status'][p]}")
                status[p] = status[p].rstrip("; ")
    out = {"value": value[0], "error": error[0], "converged": conv, "status": status,
           "method": method}
    if value.shape[0] > 1:
        out.update(derivatives=value[1:], derivative_errors=error[1:])
    if cross_check and c_out is not None and d_out is not None:
        checks = []
        for p in range(P):
            i = d_at[p]
            (cv, ce), (dv, de) = _stacked(c_out, p), _stacked(d_out, i)
            diff = c_out["value"][p] - d_out["value"][i]
            # the value and every derivative compared; the worst counts
            sig = np.hypot(np.hypot(ce.real, ce.imag), np.hypot(de.real, de.imag))
            dist = np.abs(cv - dv)
            with np.errstate(divide="ignore", invalid="ignore"):
                ns = np.where(sig > 0, dist / sig, np.where(dist == 0, 0.0, np.inf))
            n = float(np.max(ns))
            checks.append({"contour": c_out["value"][p], "delta_sequence": d_out["value"][i],
                           "difference": diff, "sigmas": n})
            # an unconverged method's error is a lower bound, not a standard deviation:
            # the methods disagree only when both converged
            if not (c_out["converged"][p] and d_out["converged"][i]):
                conv[p] = False
                status[p] = ("cross-check incomplete: contour " + c_out["status"][p] +
                             "; delta sequence " + d_out["status"][i])
            elif n > CROSS_CHECK_SIGMAS:
                conv[p] = False
                status[p] = (f"methods disagree: contour and delta sequence differ by "
                             f"{n:.3g} combined errors (|difference| {abs(diff):.3g})")
        out["cross_check"] = checks
    return out
