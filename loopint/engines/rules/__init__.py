"""Quadrature and cubature rules as data: nodes, weights and error-estimate formulas, no
driver (the engines in :mod:`loopint.engines` apply them)."""
