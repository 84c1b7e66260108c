"""The user cache folder of loopint, and small JSON records kept in it.

One folder holds everything a run may reuse across processes: JAX's persistent compilation
cache (``jax/``, :mod:`loopint.precision`), generated lattice vectors (``lattice/``,
:mod:`loopint.engines.lattice`) and the facet normals of Newton polytopes (``polytopes/``,
:mod:`loopint.divergence`).  Folder: ``$LOOPINT_CACHE_DIR``, else ``$XDG_CACHE_HOME/loopint``,
else ``~/.cache/loopint``; ``LOOPINT_CACHE_DIR=""`` turns every disk cache off.

Records are data only (JSON, checked by their reader), written atomically (a temporary file
renamed into place), so that concurrent processes and an interrupted run never leave a
half-written record; a folder that cannot be written (a read-only home) only costs the reuse.
"""

from __future__ import annotations

import json
import logging
import os
import pathlib
import tempfile

log = logging.getLogger(__name__)


def cache_dir() -> pathlib.Path | None:
    """The loopint cache folder (module docstring); ``None`` when disk caches are off."""
    env = os.environ.get("LOOPINT_CACHE_DIR")
    if env is not None:
        return pathlib.Path(env) if env else None
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = pathlib.Path(xdg) if xdg else pathlib.Path.home() / ".cache"
    return base / "loopint"


def record_path(kind: str, name: str) -> pathlib.Path | None:
    """Path of the record ``name`` (a file name) in the sub-folder ``kind``, or ``None``."""
    root = cache_dir()
    return None if root is None else root / kind / name


def read_json(path: pathlib.Path | None):
    """The JSON value stored at ``path``; ``None`` if absent, unreadable or not JSON."""
    if path is None:
        return None
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def write_json(path: pathlib.Path | None, payload) -> None:
    """Store ``payload`` as JSON at ``path``, atomically; failures are logged, not raised."""
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp_", suffix=".json")
        with os.fdopen(fd, "w") as fh:
            json.dump(payload, fh)
        os.replace(tmp, path)
    except OSError as exc:
        log.debug("cannot write cache record %s: %s", path, exc)
