"""Names of the periodizing transforms of the lattice engines (``[integration] transform``),
parsed without the engines themselves, so that reading a diagram file does not import JAX
(:mod:`loopint.engines.periodize` builds the maps)."""

from __future__ import annotations

import re


def parse_transform(name) -> tuple[str, int | None]:
    """``(kind, order)`` of a transform name: ``korobov<r>`` (``korobov``: r = 3),
    ``sidi<m>`` (``sidi``: m = 2), ``baker`` (or ``tent``), ``none`` (or ``identity``);
    ``order`` is None for the last two.  Raises ``ValueError`` for any other name."""
    key = str(name).lower()
    if key in ("none", "identity"):
        return "none", None
    if key in ("baker", "tent"):
        return "baker", None
    defaults = {"korobov": 3, "sidi": 2}
    if key in defaults:
        return key, defaults[key]
    mt = re.fullmatch(r"(korobov|sidi)(\d+)", key)
    if mt:
        return mt.group(1), int(mt.group(2))
    raise ValueError(f"unknown periodization {name!r}; "
                     "use korobov<r>, sidi, sidi<m>, baker or none")
