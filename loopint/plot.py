"""PNG plots: the delta-sequence of a regulated run, and scans over a kinematic variable.

matplotlib with the non-interactive Agg backend; files are written atomically.
"""

from __future__ import annotations

import numpy as np

from .files import write_atomic


def _figure():
    import sys

    import matplotlib
    if "matplotlib.pyplot" not in sys.modules:   # keep a running session's backend (Jupyter inline)
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _save(fig, path: str) -> None:
    write_atomic(path, lambda tmp: fig.savefig(tmp, dpi=120, format="png"), suffix=".png")


def plot_result(r, path: str, title: str = "") -> None:
    """Re and Im of I(delta_j) with error bars against delta, and the extrapolated limit.

    For a delta = 0 run (no table), a bar of the value with its error band instead.
    """
    plt = _figure()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    v, e = complex(np.atleast_1d(r.value)[0]), complex(np.atleast_1d(r.error)[0])
    if r.table:
        d = np.array([row["delta"] for row in r.table])
        vals = np.array([_c(row["value"]) for row in r.table])
        errs = np.array([_c(row["error"]) for row in r.table])
        for ax, part, lim, lerr in ((axes[0], "real", v.real, e.real), (axes[1], "imag", v.imag, e.imag)):
            y = getattr(vals, part)
            ye = np.abs(getattr(errs, part))
            ax.errorbar(d, y, yerr=ye, fmt="o", ms=4, label=r"$I(\delta_j)$")
            ax.axhline(lim, color="C3", lw=1, label=r"extrapolated $\delta\to 0$")
            ax.axhspan(lim - abs(lerr), lim + abs(lerr), color="C3", alpha=0.2)
            ax.scatter([0.0], [lim], color="C3", zorder=3)
            ax.set_xlabel(r"$\delta$")
            ax.set_ylabel(f"{'Re' if part == 'real' else 'Im'} I")
            ax.legend(fontsize=8)
    else:
        for ax, part, val, err in ((axes[0], "Re", v.real, e.real), (axes[1], "Im", v.imag, e.imag)):
            ax.errorbar([0], [val], yerr=[abs(err)], fmt="o")
            ax.set_xticks([0], ["delta = 0"])
            ax.set_ylabel(f"{part} I")
    fig.suptitle(f"{title}: {r.status}  ({r.method}, {r.seconds:.3g} s)")
    _save(fig, path)
    plt.close(fig)


def _c(x) -> complex:
    a = np.asarray(x)
    if a.shape and a.shape[-1] == 2 and not np.iscomplexobj(a):
        a = a[..., 0] + 1j * a[..., 1]
    return complex(np.atleast_1d(a)[0])


_YLABEL = {"pysecdec": "I  (pySecDec normalization, prefactor included)",
           "none": "bare parametric integral  (prefactor 'none')"}


def plot_scan(rows: list[dict], name: str, path: str, title: str = "",
              prefactor: str = "pysecdec", fixed: dict | None = None) -> None:
    """Re and Im of a scan against the first scanned symbol: one dot per point with its error
    bar, no lines (a line would join the points across a threshold, where the integral is not
    smooth); points that did not converge are crossed.  The title gives the values of the
    symbols that were held ``fixed``."""
    plt = _figure()
    x = np.array([r[name] for r in rows])
    order = np.argsort(x, kind="stable")
    fig, ax = plt.subplots(figsize=(7, 4), constrained_layout=True)
    for part, c, label in (("re", "C0", "Re I"), ("im", "C1", "Im I")):
        y = np.array([r[part] for r in rows])[order]
        e = np.array([r[f"err_{part}"] for r in rows])[order]
        ax.errorbar(x[order], y, yerr=e, fmt="o", ms=2.5, color=c, elinewidth=0.8,
                    capsize=0, label=label)
    bad = [(r[name], r[part]) for r in rows if not r["converged"] for part in ("re", "im")]
    if bad:
        bx, by = zip(*bad)
        ax.plot(bx, by, "kx", ms=5, label="not converged")
    ax.axhline(0.0, color="0.7", lw=0.5, zorder=0)
    ax.set_xlabel(name)
    ax.set_ylabel(_YLABEL.get(prefactor, f"I  (prefactor {prefactor!r})"))
    ax.legend(fontsize=8)
    fixed_text = ", ".join(f"{k} = {v:g}" for k, v in (fixed or {}).items())
    ax.set_title(f"{title}  ({fixed_text})" if fixed_text else title, fontsize=10)
    _save(fig, path)
    plt.close(fig)
