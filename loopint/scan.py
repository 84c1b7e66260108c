"""Scans over many kinematic points in blocks, with a checkpoint to resume from.

:func:`scan` computes the points of a batch (kinematic arrays) block by block, each block one
:func:`loopint.compute` (a vector integrand, shared out over the devices as there).  After
each block its per-point results are appended to the checkpoint file as one JSON line, so an
interrupted scan loses at most the block it was computing: ``resume=True`` reads the finished
blocks back and computes only the rest.  The checkpoint's first line identifies the scan (the
diagram's U and F, the kinematics and the settings); resuming another scan from it, or from a
file damaged other than in its last line (a write cut short), is a
:class:`~loopint.errors.SpecError` naming the file.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from typing import Any, Callable, Mapping

import numpy as np

from .compute import _assembled, _normalized, _outcome, _subproblem, compute
from .errors import SpecError
from .io import jsonable
from .problem import Problem
from .result import Result

BLOCK = 4096          # points per block: large enough to fill a GPU, small enough to lose little
FORMAT = "loopint-scan-checkpoint-1"


def scan(target, kinematics: Mapping[str, Any] | None = None, *, block: int = BLOCK,
         checkpoint: str | None = None, resume: bool = False, settings=None,
         progress: Callable[[dict], None] | None = None, **overrides) -> Result:
    """:func:`loopint.compute` over the points of ``kinematics`` (symbol -> number or 1-D
    array) in blocks of ``block`` points, with a checkpoint (module docstring).

    ``settings`` and ``overrides`` as for ``compute``.  ``progress`` gets ``compute``'s
    events and, after each block, ``{"stage": "block", "done", "points", "converged",
    "seconds"}`` (points finished so far, of all, converged among them).
    Returns one :class:`~loopint.result.Result` over all points, as ``compute`` does for a
    batch; ``info["blocks"]`` lists the blocks (``"resumed": True`` for those read back).
    """
    t_start = time.perf_counter()
    if int(block) < 1:
        raise ValueError(f"block must be >= 1, got {block!r}")
    problem, s = _normalized(target, kinematics, settings, overrides)
    n = problem.n_points
    if n == 1 or problem.diagram.regulated:
        if checkpoint is not None:
            raise SpecError("checkpoint: a scan checkpoint needs kinematic arrays of more than "
                            "one point and an unregulated diagram")
        return compute(problem, settings=s, progress=progress)
    key = _fingerprint(problem, s)
    done = _read(checkpoint, key) if (checkpoint and resume) else []
    if checkpoint and not resume:
        _start(checkpoint, key)
    finished = {int(k) for idx, _ in done for k in idx}
    todo = np.array([k for k in range(n) if k not in finished], int)
    parts = [(idx, out) for idx, out in done]
    for start in range(0, todo.size, int(block)):
        idx = todo[start:start + int(block)]
        sub = _subproblem(problem, idx, s)
        out = _outcome(compute(sub, settings=s, progress=progress))
        if checkpoint:
            _append(checkpoint, idx, {**out, "info": {}})    # the engines' details stay here
        parts.append((idx.tolist(), out))
        if progress:
            ok = sum(int(np.sum(o["ok"])) for _, o in parts)
            progress({"stage": "block", "done": sum(len(i) for i, _ in parts), "points": n,
                      "converged": ok, "seconds": time.perf_counter() - t_start})
    r = _assembled(problem, s, parts, "blocks", t_start)
    resumed = {tuple(idx) for idx, _ in done}
    r.info["blocks"] = [{**b, "resumed": tuple(b["points"]) in resumed} for b in r.info["blocks"]]
    return r


def _fingerprint(problem: Problem, s) -> str:
    """A digest of what the results depend on: U, F, the kinematics and the settings."""
    h = hashlib.sha256()
    h.update(f"{problem.diagram.U}|{problem.diagram.F}|{problem.diagram.name}".encode())
    for k in sorted(problem.kinematics):
        h.update(k.encode())
        h.update(np.ascontiguousarray(np.asarray(problem.kinematics[k], float)).tobytes())
    h.update(json.dumps(jsonable(s.to_dict()), sort_keys=True).encode())
    return h.hexdigest()


def _start(path: str, key: str) -> None:
    """A new checkpoint with its header line (replacing any old one, atomically)."""
    from .files import write_text_atomic
    write_text_atomic(path, json.dumps({"format": FORMAT, "scan": key}) + "\n", fsync=True)


def _append(path: str, idx, out: dict) -> None:
    line = json.dumps({"points": [int(k) for k in idx], "outcome": out})
    with open(path, "a") as fh:
        fh.write(line + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def _read(path: str, key: str) -> list:
    """The finished blocks of a checkpoint; a missing file is an empty start."""
    if not os.path.exists(path):
        _start(path, key)
        return []
    with open(path) as fh:
        lines = fh.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    rows = []
    for i, line in enumerate(lines):
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            if i == len(lines) - 1 and i > 0:      # the last write was cut short
                break
            raise SpecError(f"{path}: damaged scan checkpoint (line {i + 1} is not JSON); "
                            "delete it to start again") from None
    head = rows[0] if rows else {}
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        raise SpecError(f"{path}: not a loopint scan checkpoint; delete it to start again")
    if head.get("scan") != key:
        raise SpecError(f"{path}: checkpoint belongs to another scan (other diagram, points or "
                        "settings); delete it or give another output name")
    if len(rows) - 1 < len(lines) - 1:           # a torn last line: rewrite without it
        from .files import write_text_atomic
        write_text_atomic(path, "\n".join(lines[:len(rows)]) + "\n", fsync=True)
    try:
        return [(list(map(int, r["points"])), r["outcome"]) for r in rows[1:]]
    except (KeyError, TypeError, ValueError):
        raise SpecError(f"{path}: damaged scan checkpoint; delete it to start again") from None
