"""The PNG plots (loopint/plot.py): what a reader needs to read the scan plot."""

from __future__ import annotations

import numpy as np

import loopint.plot as plot


def test_scan_plot_has_dots_labels_and_the_fixed_parameters(tmp_path, monkeypatch):
    """Dots with error bars (no line across the threshold at s = 4), Re and Im in the legend,
    a y-axis label with the normalization, the fixed symbols in the title."""
    figures = []
    monkeypatch.setattr(plot, "_save", lambda fig, path: figures.append(fig))
    s = np.linspace(3.0, 5.0, 9)
    rows = [dict(s=float(x), re=-1.0 + 0.1 * x, im=0.0 if x < 4 else -0.5, err_re=1e-3,
                 err_im=1e-3, converged=bool(x != 5.0)) for x in s]
    plot.plot_scan(rows, "s", str(tmp_path / "scan.png"), title="triangle", prefactor="pysecdec",
                   fixed={"m": 1.0})
    (ax,) = figures[0].axes
    assert "I" in ax.get_ylabel() and "pySecDec" in ax.get_ylabel()
    assert ax.get_xlabel() == "s"
    assert "m = 1" in ax.get_title() and "triangle" in ax.get_title()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert sorted(labels) == ["Im I", "Re I", "not converged"]
    data_lines = [ln for ln in ax.get_lines() if len(ln.get_xdata()) == len(s)]
    assert len(data_lines) == 2
    for ln in data_lines:                      # markers only: nothing joins the points
        assert ln.get_linestyle() == "None" and ln.get_marker() == "o"
    bare = []
    monkeypatch.setattr(plot, "_save", lambda fig, path: bare.append(fig))
    plot.plot_scan(rows, "s", str(tmp_path / "scan.png"), prefactor="none")
    assert "bare" in bare[0].axes[0].get_ylabel()
