"""Regression tests for scans shared out over devices and processes (loopint.compute's
_compute_devices / _compute_processes, loopint.cli --distributed).

* a share that raises on one process of a jax.distributed run raises the same error on every
  process (the others must not wait in the allgather for it);
* bad --distributed options are usage errors (exit 2) before any process joins;
* a scan split over devices keeps the per-point info of one run (``info["regulated"]
  ["point_method"]``, ``info["region_method"]``) and puts every point's value and derivative
  at its own index (derivatives against the closed form's).
"""

import json
import os
import socket
import subprocess
import sys
import textwrap

import mpmath
import numpy as np
import pytest

import loopint
from loopint.errors import DiagramError, SpecError

from physical_points import c0_equal

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRIANGLE = os.path.join(ROOT, "diagrams", "triangle_above_threshold.toml")
MASSLESS = os.path.join(ROOT, "diagrams", "triangle_massless_offshell.toml")
# C0(0, 0, s; 1, 1, 1): Euclidean points and physical ones (above s = 4)
SCAN_S = [2.5, 5.0, 8.0]


def _env(devices: int | None = None) -> dict:
    """The environment of a child process: CPU only, no cluster launcher's variables."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SLURM_", "OMPI_", "PMI_", "PMIX_", "MPI_"))}
    env.update(JAX_PLATFORMS="cpu", PYTHONPATH=ROOT)
    env.pop("XLA_FLAGS", None)
    if devices:
        env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------ two processes
def test_a_failing_share_fails_every_process_alike(tmp_path):
    """P1 = 0 makes the massless triangle collinear-divergent; the four points cost the same,
    so the shares are [0, 2] and [1, 3]: the divergent point 3 is process 1's.  Process 0
    must report that DiagramError (exit 2), not wait for process 1 in the allgather."""
    port = _free_port()
    procs = []
    for i in range(2):
        cmd = [sys.executable, "-m", "loopint.cli", "scan", MASSLESS, "--param", "P1=1:0:4",
               "--quiet", "--distributed", "--coordinator", f"localhost:{port}",
               "--num-processes", "2", "--process-id", str(i)]
        procs.append(subprocess.Popen(cmd, cwd=ROOT, env=_env(), stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    try:
        outs = [p.communicate(timeout=240) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 2, err[-3000:]
        assert "divergent integral at the kinematic point" in err and "P1 = 0" in err, \
            err[-3000:]


def test_share_error_keeps_the_kind_of_error():
    from loopint.compute import _share_error
    e = _share_error({"type": "DiagramError", "message": "divergent", "key": "dimension"})
    assert isinstance(e, DiagramError) and e.key == "dimension" and str(e) == "divergent"
    assert isinstance(_share_error({"type": "SpecError", "message": "m", "key": None}),
                      SpecError)
    e = _share_error({"type": "MemoryError", "message": "out of memory", "key": None})
    assert isinstance(e, RuntimeError) and "MemoryError: out of memory" in str(e)


@pytest.mark.parametrize("args, message", [
    (["--num-processes", "0", "--process-id", "0"], "--num-processes must be >= 1"),
    (["--num-processes", "2", "--process-id", "2"], "--process-id must be from 0"),
    (["--process-id", "-1"], "--process-id must be from 0"),
])
def test_bad_distributed_options_are_usage_errors(args, message, capsys):
    from loopint.cli import main
    assert main(["compute", TRIANGLE, "--quiet", "--distributed",
                 "--coordinator", "localhost:1", *args]) == 2
    assert message in capsys.readouterr().err


def test_distributed_without_a_cluster_is_a_usage_error():
    proc = subprocess.run([sys.executable, "-m", "loopint.cli", "compute", TRIANGLE, "--quiet",
                           "--distributed"], cwd=ROOT, env=_env(), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "loopint: error: --distributed:" in proc.stderr
    assert "Traceback" not in proc.stderr


# ------------------------------------------------------------------ a scan over devices
SPLIT_CODE = """
    import json, numpy as np, loopint
    r = loopint.compute(loopint.load({path!r}), kinematics={{"s": np.array({s!r}), "m": 1.0}},
                        rtol=1e-6, devices=4, derivatives=["s"])
    d = r.derivatives["s"]
    print(json.dumps({{"shares": [s["points"] for s in r.info["device_shares"]],
                      "region": r.region, "ok": r.info["point_converged"],
                      "point_method": r.info["regulated"]["point_method"],
                      "region_method": r.info["region_method"],
                      "value": [[v.real, v.imag] for v in r.value],
                      "error": [[v.real, v.imag] for v in r.error],
                      "d": [[v.real, v.imag] for v in d.value],
                      "derr": [[v.real, v.imag] for v in d.error]}}))
"""


def _complex(pairs):
    a = np.asarray(pairs, float)
    return a[:, 0] + 1j * a[:, 1]


def _dc0_ds(s: float) -> complex:
    """d C0(0, 0, s; 1, 1, 1)/ds: mpmath.diff of the closed form of
    :func:`physical_points.c0_equal`, at 30 digits."""
    def c0(x):
        if x < 4:
            return -(2 / x) * mpmath.asin(mpmath.sqrt(x / 4)) ** 2
        b = mpmath.sqrt(1 - 4 / x)
        return (mpmath.log((1 + b) / (1 - b)) - 1j * mpmath.pi) ** 2 / (2 * x)
    with mpmath.workdps(30):
        return complex(mpmath.diff(c0, mpmath.mpf(s)))


def _within(value, error, reference, factor=3.0):
    d = value - reference
    tiny = 1e-12 * np.abs(reference)
    return bool(np.all(np.abs(d.real) <= factor * np.abs(error.real) + tiny)
                and np.all(np.abs(d.imag) <= factor * np.abs(error.imag) + tiny))


def test_scan_split_over_devices_keeps_point_info_and_derivatives():
    p = loopint.load(TRIANGLE)
    one = loopint.compute(p, kinematics={"s": np.array(SCAN_S), "m": 1.0}, rtol=1e-6,
                          devices=1, derivatives=["s"])
    code = textwrap.dedent(SPLIT_CODE.format(path=TRIANGLE, s=SCAN_S))
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(4),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(out["shares"]) == len(SCAN_S)            # one point per share
    assert out["region"] == one.region and out["ok"] == one.info["point_converged"]
    assert out["point_method"] == one.info["regulated"]["point_method"]
    assert out["region_method"] == one.info["region_method"]
    exact = np.array([c0_equal(s, 1.0) for s in SCAN_S])
    dexact = np.array([_dc0_ds(s) for s in SCAN_S])
    assert _within(_complex(out["value"]), _complex(out["error"]), exact)
    assert _within(_complex(out["d"]), _complex(out["derr"]), dexact)
    assert _within(one.derivatives["s"].value, one.derivatives["s"].error, dexact)


def test_scan_through_a_zero_mass_keeps_point_info():
    """Points in two support groups (mc = 0 drops a coefficient of F), Euclidean and physical
    ones in each: values at their own index, and the per-point info of one run."""
    from physical_points import TRIANGLE as LINES, triangle_d4
    d = loopint.Diagram.from_graph(**LINES, dimension=4, name="triangle")
    mc = np.array([1.0, 0.0, 1.0, 0.0])
    q3 = np.array([-1.0, 7.0, 6.0, -3.0])
    r = loopint.compute(d, dict(q1=-1.0, q2=-2.0, q3=q3, ma=1.0, mb=1.0, mc=mc), rtol=1e-6,
                        devices=1)
    assert [g["points"] for g in r.info["groups"]] == [[0, 2], [1, 3]]
    assert r.region == ["euclidean", "physical", "physical", "euclidean"]
    assert r.converged and len(r.info["regulated"]["point_method"]) == 2
    assert len(r.info["region_method"]) == 4 and all(r.info["region_method"])
    exact = np.array([triangle_d4(-1.0, -2.0, q, 1.0, 1.0, m) for q, m in zip(q3, mc)])
    assert _within(r.value, r.error, exact)
