"""JSON for results and checkpoints: plain JSON types from numpy/JAX values, atomic writes.

Complex numbers (and complex arrays) become ``[re, im]`` pairs (arrays: a trailing axis of
length 2); numpy scalars and arrays become Python numbers and lists.  Files are strict JSON:
NaN and infinities (a point at a threshold, a scaleless point) are written as ``null``, which
:func:`complex_array` reads back as NaN.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

import numpy as np

from .files import write_text_atomic


def jsonable(x: Any) -> Any:
    """``x`` with every numpy/JAX value replaced by plain JSON types (complex -> [re, im])."""
    if isinstance(x, dict):
        return {k: jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, np.ndarray) or _is_jax_array(x):
        a = np.asarray(x)
        if np.iscomplexobj(a):
            return jsonable(np.stack([a.real, a.imag], axis=-1).tolist())
        return a.tolist()
    if isinstance(x, (complex, np.complexfloating)):
        return [float(x.real), float(x.imag)]
    if isinstance(x, (np.floating,)):
        return float(x)
    if isinstance(x, (np.integer,)):
        return int(x)
    return x


def _is_jax_array(x) -> bool:
    """Whether ``x`` is a JAX array, without importing JAX where no array can exist yet."""
    jax = sys.modules.get("jax")
    return jax is not None and isinstance(x, jax.Array)


def finite_or_null(x: Any) -> Any:
    """Plain JSON types (:func:`jsonable` output) with every non-finite float replaced by None:
    JSON has no NaN or infinity, and strict parsers (JavaScript's ``JSON.parse``, Python's
    with ``parse_constant``) refuse the tokens ``NaN`` and ``Infinity``."""
    if isinstance(x, dict):
        return {k: finite_or_null(v) for k, v in x.items()}
    if isinstance(x, list):
        return [finite_or_null(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def write_json_atomic(path: str, obj: Any) -> None:
    """Write ``obj`` as strict JSON (:func:`jsonable`, :func:`finite_or_null`) to ``path``
    atomically (:func:`loopint.files.write_atomic`: a temporary file in the same folder,
    synced, then renamed; mode ``0o666 & ~umask``)."""
    text = json.dumps(finite_or_null(jsonable(obj)), indent=1, allow_nan=False)
    write_text_atomic(path, text, fsync=True)


def complex_array(x) -> np.ndarray:
    """The complex array written by :func:`jsonable` (``[..., 2]`` pairs) read back; None
    (a non-finite value, :func:`finite_or_null`) becomes NaN."""
    a = np.asarray(x, dtype=float)
    return a[..., 0] + 1j * a[..., 1]
