"""PNG plots: the delta-sequence of a regulated run, and scans over a kinematic variable.

matplotlib with the non-interactive Agg backend; files are written atomically.
"""

from __future__ import annotations

import os
import tempfile

import numpy as np


def _figure():
    import sys

    import matplotlib
    if "matplotlib.pyplot" not in sys.modules:   # keep a running session's backend (Jupyter inline)
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _save(fig, path: str) -> None:
    folder = os.path.dirname(os.path.abspath(path)) or "."
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".png", dir=folder)
    os.close(fd)
    try:
        fig.savefig(tmp, dpi=120, format="png")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


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


def plot_scan(rows: list[dict], name: str, path: str, title: str = "") -> None:
    """Re and Im of a scan against the first scanned symbol, with error bands."""
    plt = _figure()
    x = np.array([r[name] for r in rows])
    order = np.argsort(x)
    fig, ax = plt.subplots(figsize=(7, 4), constrained_layout=True)
    for part, c in (("re", "C0"), ("im", "C1")):
        y = np.array([r[part] for r in rows])[order]
        e = np.array([r[f"err_{part}"] for r in rows])[order]
        ax.plot(x[order], y, color=c, label=f"{'Re' if part == 're' else 'Im'} I")
        ax.fill_between(x[order], y - e, y + e, color=c, alpha=0.3)
    bad = [r[name] for r in rows if not r["converged"]]
    if bad:
        ax.plot(bad, np.zeros(len(bad)), "kx", label="not converged")
    ax.set_xlabel(name)
    ax.legend()
    ax.set_title(title)
    _save(fig, path)
    plt.close(fig)
