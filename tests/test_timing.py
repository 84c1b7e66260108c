"""The timing split of a computation (loopint.timing, Result.info["timing"]) and the
persistent compilation cache across processes."""

import json
import os
import subprocess
import sys
import textwrap
import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import loopint
from loopint.timing import compile_clock

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PARTS = ("trace", "lower", "compile", "cache_load", "run")


def test_clock_counts_the_caller_and_not_other_threads():
    """A new function traced, lowered and compiled on the calling thread is counted there; a
    compilation on another thread is counted apart (compile_ahead), not as time waited."""
    def fresh(scale):
        return jax.jit(lambda x: jnp.sin(x) * scale)

    with compile_clock() as c:
        fresh(2.0)(np.arange(3.0)).block_until_ready()
        worker = threading.Thread(
            target=lambda: fresh(3.0).lower(np.arange(5.0)).compile())
        worker.start()
        worker.join()
    assert c.counts["trace"] >= 1 and c.counts["lower"] >= 1 and c.counts["compile"] >= 1
    assert c.ahead > 0
    assert c.waited == pytest.approx(c.seconds["trace"] + c.seconds["lower"]
                                     + c.seconds["compile"])
    with compile_clock() as again:
        fresh(2.0)                      # nothing traced or compiled: no events
    assert again.waited == 0 and again.ahead == 0


def test_compute_reports_its_timing_split():
    """The parts add up to the call's wall time; a repeated call makes no kernels; the import
    of loopint is reported beside them."""
    p = loopint.load(os.path.join(ROOT, "diagrams", "triangle_below_threshold.toml"))
    loopint.compute(p, rtol=1e-4)
    r = loopint.compute(p, rtol=1e-4)
    t = r.info["timing"]
    assert set(PARTS) <= set(t) and all(t[k] >= 0 for k in PARTS)
    assert sum(t[k] for k in PARTS) == pytest.approx(t["seconds"], rel=1e-9)
    assert t["compiled"] == 0 and t["trace"] == 0 and t["compile"] == 0
    assert 0 < t["import"] < 60                     # this process's import of loopint


_CHILD = textwrap.dedent("""
    import json, sys, loopint
    p = loopint.load(sys.argv[1])
    scale = float(sys.argv[2])
    p = p.with_kinematics(**{k: v * scale for k, v in p.kinematics.items()})
    r = loopint.compute(p, rtol=1e-4)
    print(json.dumps({"timing": r.info["timing"], "converged": bool(r.converged)}))
""")


def test_a_second_process_at_other_kinematics_compiles_nothing(tmp_path):
    """Kinematics are arguments of the compiled kernels and every kernel is stored in the
    persistent cache: a fresh process at another point of the same diagram loads all of its
    kernels and compiles none."""
    path = os.path.join(ROOT, "diagrams", "triangle_above_threshold.toml")
    env = dict(os.environ, LOOPINT_CACHE_DIR=str(tmp_path), JAX_PLATFORMS="cpu")

    def child(scale):
        out = subprocess.run([sys.executable, "-c", _CHILD, path, str(scale)], env=env,
                             capture_output=True, text=True, check=True, cwd=ROOT)
        return json.loads(out.stdout.strip().splitlines()[-1])

    first, second = child(1.0), child(1.05)
    assert first["converged"] and second["converged"]
    assert first["timing"]["compiled"] > 0
    assert second["timing"]["compiled"] == 0
    assert second["timing"]["loaded"] >= first["timing"]["compiled"] - first["timing"]["loaded"]
    # one cache folder: the kernels under jax/, the Newton polytope's facets under polytopes/
    assert any((tmp_path / "jax").iterdir())
    assert len(list((tmp_path / "polytopes").glob("*.json"))) >= 1


def test_help_show_and_input_errors_import_neither_jax_nor_more_than_they_need(tmp_path):
    """``import loopint``, ``loopint --help`` and ``loopint --version`` import neither JAX nor
    SymPy; ``loopint show`` and an input error in ``loopint compute`` parse the file (SymPy)
    but import no JAX (seconds on some accelerator hosts).  Float64 still holds once JAX is
    imported after loopint, and for a computing module imported on its own."""
    bad = tmp_path / "bad.toml"
    bad.write_text('[diagram]\nname = "x"\nloops = 1\n'
                   'propagators = [["k", "m"], ["k+p1", "m"]]\n[kinematics]\nm = 1.0\n')
    script = textwrap.dedent(f"""
        import contextlib, io, json, sys
        import loopint
        from loopint import cli
        seen = {{"import": sorted(m for m in ("jax", "sympy") if m in sys.modules)}}
        for name, argv in (("help", ["--help"]), ("version", ["--version"]),
                           ("show", ["show", {os.path.join(ROOT, "diagrams",
                                                          "triangle_above_threshold.toml")!r}]),
                           ("bad", ["compute", {str(bad)!r}])):
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    code = cli.main(argv)
                except SystemExit as e:
                    code = e.code
            seen[name] = [code, sorted(m for m in ("jax", "sympy") if m in sys.modules),
                          err.getvalue()]
        import jax.numpy as jnp
        seen["dtype"] = str(jnp.ones(1).dtype)
        print(json.dumps(seen))
        """)
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=str(tmp_path), env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["import"] == [] and seen["help"][:2] == [0, []] \
        and seen["version"][:2] == [0, []]
    assert seen["show"][:2] == [0, ["sympy"]]
    code, modules, err = seen["bad"]
    assert code == 2 and modules == ["sympy"] and "bad.toml" in err and "loops" in err
    assert seen["dtype"] == "float64"
    script = ("import jax.numpy as jnp\nfrom loopint.engines.cubature import Cubature\n"
              "print(jnp.ones(1).dtype)")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=str(tmp_path), env=env, timeout=300)
    assert out.returncode == 0 and out.stdout.split()[-1] == "float64", out.stderr


def test_gpu_memory_is_allocated_as_needed_unless_the_environment_says_otherwise():
    """``import loopint`` sets XLA_PYTHON_CLIENT_PREALLOCATE=false (JAX's reservation of 75 %
    of a GPU at the first array costs seconds per process) and keeps a value the user set."""
    script = "import os, loopint; print(os.environ['XLA_PYTHON_CLIENT_PREALLOCATE'])"
    env = {k: v for k, v in os.environ.items() if k != "XLA_PYTHON_CLIENT_PREALLOCATE"}
    for given, want in ((None, "false"), ("true", "true")):
        if given is not None:
            env["XLA_PYTHON_CLIENT_PREALLOCATE"] = given
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             env=env, timeout=120)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == want
