"""Where a computation's time goes: JAX's tracing, lowering and compilation, from its events.

:func:`compile_clock` adds up, for the block it wraps, the durations JAX reports
(:mod:`jax.monitoring`) of tracing a function, lowering it to an MLIR module, compiling it
with XLA, and loading it from the persistent compilation cache instead (a cache hit; JAX
reports the load inside the compilation's duration, :meth:`CompileClock.split` takes it out).
Events of the calling thread are the time the computation waited for; events of other
threads (the engines' compilation ahead of need, :data:`loopint.engines.regions.AHEAD`)
overlap it and are counted apart.  :func:`loopint.compute` reports the split of every call in
``Result.info["timing"]``.
"""

from __future__ import annotations

import collections
import contextlib
import threading

import jax

_EVENTS = {
    "/jax/core/compile/jaxpr_trace_duration": "trace",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
    "/jax/core/compile/backend_compile_duration": "compile",
    "/jax/compilation_cache/cache_retrieval_time_sec": "cache_load",
}

IMPORT_SECONDS: float | None = None
"""Seconds this process spent importing :mod:`loopint.compute` (with what it imports first:
JAX, SymPy, NumPy and the rest of loopint's computing modules), set at the end of that
import; reported as ``import`` in every split."""

_ACTIVE: list["CompileClock"] = []
_LOCK = threading.Lock()
_REGISTERED = False


class CompileClock:
    """Seconds and counts per kind of event (``trace``, ``lower``, ``compile``,
    ``cache_load``) on the thread that opened the clock, and the compilation seconds of
    other threads (:attr:`ahead`)."""

    def __init__(self):
        self.owner = threading.get_ident()
        self.seconds: collections.Counter = collections.Counter()
        self.counts: collections.Counter = collections.Counter()
        self.ahead = 0.0

    def _add(self, kind: str, duration: float) -> None:
        if threading.get_ident() == self.owner:
            self.seconds[kind] += duration
            self.counts[kind] += 1
        elif kind == "compile":
            self.ahead += duration

    @property
    def waited(self) -> float:
        """Seconds the calling thread spent tracing, lowering, compiling and loading."""
        return self.seconds["trace"] + self.seconds["lower"] + self.seconds["compile"]

    def split(self, total: float) -> dict:
        """``total`` seconds of wall time as ``{"seconds", "trace", "lower", "compile",
        "cache_load", "run"}`` (``run``: the rest, integration and the package's own Python)
        with the numbers of kernels compiled and loaded, ``compile_ahead`` (other threads'
        compilation) and ``import`` (:data:`IMPORT_SECONDS`), neither part of ``total``."""
        load = self.seconds["cache_load"]
        compile_s = max(self.seconds["compile"] - load, 0.0)
        rest = total - self.seconds["trace"] - self.seconds["lower"] - compile_s - load
        return {"seconds": total, "trace": float(self.seconds["trace"]),
                "lower": float(self.seconds["lower"]), "compile": compile_s,
                "cache_load": float(load), "run": max(rest, 0.0),
                "compiled": max(self.counts["compile"] - self.counts["cache_load"], 0),
                "loaded": self.counts["cache_load"], "compile_ahead": self.ahead,
                "import": IMPORT_SECONDS}


def _listener(event: str, duration: float, **_) -> None:
    kind = _EVENTS.get(event)
    if kind is not None:
        for clock in list(_ACTIVE):
            clock._add(kind, duration)


@contextlib.contextmanager
def compile_clock():
    """``with compile_clock() as c: ...``: the :class:`CompileClock` of the block.  One
    listener serves every clock (registered with JAX once per process); clocks nest."""
    global _REGISTERED
    clock = CompileClock()
    with _LOCK:
        if not _REGISTERED:
            jax.monitoring.register_event_duration_secs_listener(_listener)
            _REGISTERED = True
        _ACTIVE.append(clock)
    try:
        yield clock
    finally:
        with _LOCK:
            _ACTIVE.remove(clock)
