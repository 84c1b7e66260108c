"""Benchmark rows for every bundled diagram file with the package's defaults, as a user runs it.

``cold`` is ``loopint compute FILE`` in a fresh process with an empty compilation cache (the
first command of a new user: Python start, imports, tracing, compilation, integration), and
``cold_import`` the part spent importing loopint (with JAX and SymPy) and ``cold_compile`` the
part of its ``compute`` that JAX spent tracing, lowering and compiling (``Result.info["timing"]``,
:mod:`loopint.timing`).  ``second`` is a further fresh process with
that cache, at other kinematics (every kinematic value of the file times 1.05: another point of
the same region, whose kernels are the same), through the library as a phenomenology code
calls it; ``second_load`` its loads from the compilation cache and ``second_compiled`` the
kernels it still compiled.  ``served`` and ``served_again`` are two ``loopint compute FILE``
processes while ``loopint serve`` runs on that cache (:mod:`loopint.server`): the first has the
server trace the file's kernels (their compiled code loaded from the cache), the second finds them
in the server's memory.  ``seconds`` is a second :func:`loopint.compute` of the same file in
this process, after a first one (warm kernels).  ``true_error`` is measured against the file's
``[reference]``.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import subprocess
import sys
import tempfile
import time


from ..compute import compute, device_name
from ..problem import load

STREAMS_ROWS = True
HERE = os.path.dirname(__file__)
DIAGRAMS = os.path.normpath(os.path.join(HERE, "..", "..", "diagrams"))


SECOND_POINT_SCALE = 1.05


def _process(args: list, cache: str, out: str) -> tuple[float, dict]:
    """Wall time of ``python args...`` in a new process with the compilation cache ``cache``,
    and the JSON it wrote to ``out`` (``{}`` when it wrote none)."""
    env = dict(os.environ, LOOPINT_CACHE_DIR=cache)
    env.pop("LOOPINT_SERVER", None)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *args], env=env, capture_output=True, check=False)
    wall = time.perf_counter() - t0
    with contextlib.suppress(OSError, ValueError), open(out) as fh:
        return wall, json.load(fh)
    return wall, {}


def _cold(path: str, cache: str, out: str | None = None) -> tuple[float, dict]:
    """``loopint compute path`` in a new process: its wall time and JSON result."""
    out = out or os.path.join(cache, "r.json")
    return _process(["-m", "loopint.cli", "compute", path, "--json", out, "--quiet"], cache, out)


def _second(path: str, cache: str) -> tuple[float, dict]:
    """A new process that computes ``path`` at other kinematics (:data:`SECOND_POINT_SCALE`):
    its wall time, status and timing split."""
    out = os.path.join(cache, "second.json")
    return _process(["-m", "loopint.bench.files_cases", "--point", path, out], cache, out)


def _served(path: str, cache: str) -> tuple[float, float, bool]:
    """Wall times of two ``loopint compute path`` processes handed to a ``loopint serve`` of
    the cache ``cache``, and whether the second one converged."""
    env = dict(os.environ, LOOPINT_CACHE_DIR=cache)
    env.pop("LOOPINT_SERVER", None)
    log = os.path.join(cache, "server.log")
    with open(log, "w") as fh:
        server = subprocess.Popen([sys.executable, "-m", "loopint.cli", "serve", "--idle", "600"],
                                  env=env, stdout=fh, stderr=subprocess.STDOUT)
    try:
        while server.poll() is None:
            with open(log) as fh:
                if "serving on" in fh.read():
                    break
            time.sleep(0.05)
        out = os.path.join(cache, "served.json")
        walls = []
        for _ in range(2):
            with contextlib.suppress(OSError):
                os.remove(out)
            walls.append(_cold(path, cache, out)[0])
        with contextlib.suppress(OSError, ValueError), open(out) as fh:
            converged = bool(json.load(fh).get("converged"))
    finally:
        subprocess.run([sys.executable, "-m", "loopint.cli", "serve", "--stop"], env=env,
                       capture_output=True, check=False)
        server.wait()
    return walls[0], walls[1], converged


def _point(path: str, out: str) -> None:
    """The child of :func:`_second`: the file's kinematics scaled, computed, the timing
    split and the status written to ``out``."""
    p = load(path)
    p = p.with_kinematics(**{k: v * SECOND_POINT_SCALE for k, v in p.kinematics.items()})
    r = compute(p)
    with open(out, "w") as fh:
        json.dump({"converged": bool(r.converged), "timing": r.info["timing"]}, fh)


def run(quick: bool = False, only: str | None = None) -> list[dict]:
    rows = []
    for path in sorted(glob.glob(os.path.join(DIAGRAMS, "*.toml"))):
        name = os.path.splitext(os.path.basename(path))[0]
        if only and only not in name:
            continue
        cold = {}
        if not quick:
            with tempfile.TemporaryDirectory() as cache:
                wall, data = _cold(path, cache)
                t = (data.get("info") or {}).get("timing") or {}
                second, data2 = _second(path, cache)
                t2 = data2.get("timing") or {}
                served, served_again, served_converged = _served(path, cache)
            cold = {"cold_process_seconds": wall, "cold_converged": data.get("converged"),
                    "cold_import": t.get("import"),
                    "cold_compile": sum(t.get(k, 0.0) for k in ("trace", "lower", "compile")),
                    "second_process_seconds": second,
                    "second_converged": data2.get("converged"),
                    "second_load": t2.get("cache_load"), "second_compiled": t2.get("compiled"),
                    "served_seconds": served, "served_again_seconds": served_again,
                    "served_converged": served_converged}
        p = load(path)
        compute(p)
        t0 = time.perf_counter()
        r = compute(p)
        warm = time.perf_counter() - t0
        how = (r.info.get("regulated") or {}).get("point_method") or [r.region]
        row = {"case": name, "method": f"{r.method} ({', '.join(how)})",
               "value": complex(r.value), "error": complex(r.error), "converged": r.converged,
               "rtol": r.settings["rtol"], "evaluations": int(r.evaluations), "seconds": warm,
               **cold, "device": device_name()}
        if p.reference is not None:
            row["true_error"] = float(abs(complex(r.value) - p.reference.value))
            row["relative_error"] = float(row["true_error"] / abs(p.reference.value))
        rows.append(row)
        from . import format_table
        print(format_table([row], header=False), file=sys.stderr, flush=True)
    return rows


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--point":
        _point(sys.argv[2], sys.argv[3])
    else:
        sys.exit("usage: python -m loopint.bench.files_cases --point FILE OUT.json")
