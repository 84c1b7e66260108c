"""Compilation ahead of need (loopint.engines.regions.AHEAD, Engine.prepare).

A caller that prepares a run (a contour point whose strength the pilot is still computing)
has the engine's first kernels compiled by background threads; the run then compiles none of
them on its own thread and gives the numbers of a run without compilation ahead.  The
compiling cases run in processes of their own: XLA:CPU compiling in two threads of one
process has corrupted it (a later segfault in the same pytest worker), which is why the
engines compile ahead only on accelerators by default; here it is switched on explicitly.
"""

import json
import os
import subprocess
import sys
import threading

from loopint.engines.regions import CompileAhead

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_PREPARED = """
import json, threading
import jax, jax.numpy as jnp
from jax.tree_util import Partial
from loopint.engines import base, regions
from loopint.engines.cubature import Cubature
from loopint.engines.qmc import QuasiMonteCarlo


def wave(a, x):
    return jnp.cos(a * jnp.sum(x, axis=1)) + 1j * jnp.sin(a * x[:, 0])


def other(a, x):      # the same shapes, another function: its own kernels
    return jnp.exp(-a * jnp.sum(x, axis=1)) + 1j * x[:, 1]


box = base.Box.cube(4)
caller, seen = threading.get_ident(), []


def listener(event, duration, **_):
    if event.startswith("/jax/core/compile/") and threading.get_ident() == caller:
        seen.append(duration)


jax.monitoring.register_event_duration_secs_listener(listener)
out = {}
# a QMC run of several levels of one chunk size, a cubature run within its first buffer; no
# boundary probe after them (it evaluates the integrand once more, outside the run)
for name, make, rtol in (("qmc", lambda on: QuasiMonteCarlo(compile_ahead=on, boundary_check=False), 1e-10),
                         ("cubature", lambda on: Cubature(compile_ahead=on, boundary_check=False), 1e-5)):
    make(False).integrate(Partial(other, jnp.float64(1.0)), box, rtol=rtol, max_evals=10**8)
    engine = make(True)
    engine.prepare(Partial(wave, jnp.float64(9.0)), box, max_evals=10**8)   # another value
    regions.AHEAD.join()
    del seen[:]
    r = engine.integrate(Partial(wave, jnp.float64(2.0)), box, rtol=rtol, max_evals=10**8)
    own = list(seen)
    plain = make(False).integrate(Partial(wave, jnp.float64(2.0)), box, rtol=rtol,
                                  max_evals=10**8)
    out[name] = {"own": own, "capacity": r.info.get("capacity"), "levels": r.info.get("levels"),
                 "ahead": [str(r.value), str(r.error), r.evaluations, r.status],
                 "plain": [str(plain.value), str(plain.error), plain.evaluations, plain.status]}
print(json.dumps(out))
"""


def test_a_prepared_run_compiles_nothing_itself_and_gives_the_same_numbers():
    """``Engine.prepare`` with an integrand of the run's shapes (another value bound in
    it): the run that follows traces and compiles nothing on its own thread, and its value,
    error, evaluations and status equal those of a run without compilation ahead.  The
    engines' small helpers are compiled first by a run of another integrand."""
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=ROOT, LOOPINT_CACHE_DIR="")
    proc = subprocess.run([sys.executable, "-c", _PREPARED], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["qmc"]["levels"] > 1 and out["cubature"]["capacity"] == 512, out
    for name, o in out.items():
        assert o["ahead"] == o["plain"], name
        assert o["own"] == [], (name, o["own"])


_PREPARED_GROWTH = """
import json, threading
import jax, jax.numpy as jnp
from jax.tree_util import Partial
from loopint.engines import base, regions
from loopint.engines.cubature import Cubature

# the accelerator's policy on the CPU's ladder: the first size already compiles the next
regions.COMPILE_AHEAD_FROM = regions.MIN_CAPACITY


def peak(a, x):   # about 10^3 regions at rtol 1e-5: the second buffer size (4096 rows)
    return 1.0 / (a + jnp.sum((x - 0.3) ** 2, axis=1))


def other(a, x):
    return jnp.exp(-a * jnp.sum(x, axis=1))


box = base.Box.cube(3)
seen = []


def listener(event, duration, **_):
    if event.startswith("/jax/core/compile/"):
        seen.append(duration)


jax.monitoring.register_event_duration_secs_listener(listener)
# room for 4096 regions: the second size is the last, and nothing is left to compile ahead
limit = 4096 * regions.bytes_per_region(3, 1)
make = lambda on: Cubature(compile_ahead=on, boundary_check=False, error_estimate="local",
                           memory_limit=limit)
make(False).integrate(Partial(other, jnp.float64(1.0)), box, rtol=1e-5, max_evals=10**7)
engine = make(True)
engine.prepare(Partial(peak, jnp.float64(0.5)), box, max_evals=10**7)
regions.AHEAD.join()
del seen[:]
r = engine.integrate(Partial(peak, jnp.float64(1e-2)), box, rtol=1e-5, max_evals=10**7)
own = list(seen)
regions.AHEAD.join()
plain = make(False).integrate(Partial(peak, jnp.float64(1e-2)), box, rtol=1e-5, max_evals=10**7)
print(json.dumps({"own": own, "capacity": r.info["capacity"],
                  "ahead": [r.value, r.error, r.evaluations, r.status],
                  "plain": [plain.value, plain.error, plain.evaluations, plain.status]}))
"""


def test_a_prepared_run_from_the_compile_ahead_size_finds_the_next_size_compiled():
    """Where the first buffer size already reaches COMPILE_AHEAD_FROM (the accelerator's
    ladder), ``Engine.prepare`` queues the next size's steps behind the first size's: a run
    that grows into the next size (its last) compiles nothing on any thread, with the
    numbers of a run without compilation ahead."""
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=ROOT, LOOPINT_CACHE_DIR="")
    proc = subprocess.run([sys.executable, "-c", _PREPARED_GROWTH], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["capacity"] == 4096, out
    assert out["ahead"] == out["plain"]
    assert out["own"] == [], out["own"]


def test_workers_compile_side_by_side():
    """With two workers two queued compilations run at once, each key once."""
    ahead, started, gate = CompileAhead(size=8, workers=2), [], threading.Event()
    both = threading.Barrier(3, timeout=30)

    def work(name):
        started.append(name)
        both.wait()                 # returns only when both workers (and the test) are here
        gate.wait()

    ahead.submit("a", lambda: work("a"))
    ahead.submit("b", lambda: work("b"))
    ahead.submit("a", lambda: work("again"))
    both.wait()
    gate.set()
    ahead.join()
    assert sorted(started) == ["a", "b"]
    ahead.close()


def test_work_for_later_waits_behind_the_rest():
    """Work submitted with ``later=True`` (the next buffer size's steps) runs after work
    queued without it, even when it was queued first; each in submission order."""
    ahead, order, gate = CompileAhead(size=8, workers=1), [], threading.Event()
    ahead.submit("busy", gate.wait)                 # holds the one worker
    ahead.submit("grow-1", lambda: order.append("grow-1"), later=True)
    ahead.submit("grow-2", lambda: order.append("grow-2"), later=True)
    ahead.submit("pilot", lambda: order.append("pilot"))
    ahead.submit("first", lambda: order.append("first"))
    gate.set()
    ahead.join()
    assert order == ["pilot", "first", "grow-1", "grow-2"]
    ahead.close()
