"""Several devices and several processes (loopint.parallel, loopint.engines.sharding).

The multi-device cases run in subprocesses with virtual CPU devices
(``--xla_force_host_platform_device_count``); the multi-process case starts two processes of
``loopint scan --distributed`` on localhost (gloo collectives).
"""

import csv
import json
import os
import socket
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import loopint
from loopint import parallel
from loopint.errors import SpecError
from loopint.problem import validate_settings

from physical_points import c0_equal

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRIANGLE = os.path.join(ROOT, "diagrams", "triangle_above_threshold.toml")
# a scan of C0(0, 0, s; m, m, m) through its threshold s = 4 m^2: Euclidean and physical points
SCAN_S = [1.0, 2.5, 3.5, 5.0, 6.5, 8.0, 12.0, 20.0]


def _run(code: str, devices: int, timeout: int = 600) -> dict:
    env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}",
               JAX_PLATFORMS="cpu", PYTHONPATH=ROOT)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------ shares and settings
def test_split_by_cost_balances_and_keeps_every_point_once():
    costs = [1.0] * 12 + [10.0] * 12
    shares = parallel.split_by_cost(costs, 4)
    assert sorted(np.concatenate(shares).tolist()) == list(range(24))
    loads = [sum(costs[k] for k in s) for s in shares]
    assert max(loads) - min(loads) <= 10.0          # within one costliest point
    assert all(np.all(np.diff(s) > 0) for s in shares)
    assert [s.tolist() for s in parallel.split_by_cost(costs, 4)] == [s.tolist() for s in shares]


def test_split_by_cost_fewer_points_than_parts():
    shares = parallel.split_by_cost([1.0, 1.0], 4)
    assert [s.tolist() for s in shares] == [[0], [1]]


def test_point_costs_weight_physical_points():
    assert parallel.point_costs(["euclidean", "physical", "forced"]).tolist() == \
        [1.0, parallel.PHYSICAL_COST, 1.0]


@pytest.mark.parametrize("bad", ["two", 0, -1, 1.5, True, float("nan")])
def test_devices_setting_rejects(bad):
    with pytest.raises(SpecError, match="devices"):
        validate_settings({"devices": bad})


def test_devices_more_than_present_is_an_error_naming_the_key():
    import jax
    n = jax.local_device_count() + 1
    with pytest.raises(SpecError, match=rf"devices: {n} requested"):
        loopint.compute(loopint.load(TRIANGLE), devices=n)


def test_cli_devices_and_distributed_options(capsys):
    from loopint.cli import main
    assert main(["compute", TRIANGLE, "--devices", "two", "--quiet"]) == 2
    assert "--devices" in capsys.readouterr().err
    assert main(["compute", TRIANGLE, "--process-id", "1", "--quiet"]) == 2
    assert "needs --distributed" in capsys.readouterr().err
    assert main(["compute", TRIANGLE, "--devices", "9", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert TRIANGLE in err and "devices: 9 requested" in err


# ------------------------------------------------------------------ every engine, 1/2/4 devices
ENGINES_CODE = """
    import json
    import jax, jax.numpy as jnp
    from loopint.engines import cubature, iterated, mc, pagani, qmc
    from loopint.engines.base import Box
    assert jax.local_device_count() == 4
    f = lambda x: jnp.cos(x[:, 0]) * jnp.cos(x[:, 1]) * jnp.cos(x[:, 2])
    makers = {
        "iterated": lambda n: iterated.Iterated(devices=n),
        "iterated-fused": lambda n: iterated.Iterated(devices=n, fused=True, grow_only=True),
        "cubature": lambda n: cubature.Cubature(devices=n),
        "cubature-global": lambda n: cubature.Cubature(devices=n, error_estimate="global"),
        "pagani": lambda n: pagani.Pagani(devices=n),
        "mc": lambda n: mc.MonteCarlo(devices=n, n_start=2**14),
        "qmc": lambda n: qmc.QuasiMonteCarlo(devices=n),
    }
    out = {}
    for name, make in makers.items():
        rtol = 1e-4 if name == "mc" else 1e-9
        for n in (1, 2, 4):
            r = make(n).integrate(f, Box.cube(3), rtol=rtol, max_evals=10**7)
            out[f"{name}/{n}"] = [r.value, r.error, r.status, r.evaluations, r.info["devices"]]
    print(json.dumps(out))
"""


def test_every_engine_same_result_on_1_2_4_devices():
    out = _run(ENGINES_CODE, devices=4)
    exact = np.sin(1.0) ** 3
    for name in ("iterated", "iterated-fused", "cubature", "cubature-global", "pagani", "mc",
                 "qmc"):
        one = out[f"{name}/1"]
        assert one[4] == 1
        assert abs(one[0] - exact) <= 3 * one[1], name        # the value itself is right
        for n in (2, 4):
            other = out[f"{name}/{n}"]
            assert other[4] == n, name                         # it did shard
            assert other[2] == one[2] and other[3] == one[3], name   # same path, same status
            assert other[0] == pytest.approx(one[0], rel=1e-13, abs=1e-15), name
            assert other[1] == pytest.approx(one[1], rel=1e-6, abs=1e-15), name


STORE_CODE = """
    import json
    import jax, numpy as np
    from loopint.engines import cubature, pagani
    from loopint.engines.regions import bytes_per_region
    from loopint.testfunctions import f4
    assert jax.local_device_count() == 4
    out = {}
    # a memory bound of 20000 regions (PAGANI, whose degree-9 rule spends the budget sooner:
    # 4000): cubature retires regions, PAGANI finishes them by threshold classification
    for name, engine, held in (("cubature", cubature.Cubature, 20000),
                               ("pagani", pagani.Pagani, 4000)):
        for n in (1, 2, 4):
            r = engine(devices=n, memory_limit=held * bytes_per_region(4, 1)).integrate_box(
                f4, np.zeros(4), np.ones(4), rtol=1e-9, max_evals=10**7)
            out[f"{name}/{n}"] = [r.value, r.error, r.status, r.evaluations,
                                  r.info.get("retired_regions"),
                                  r.info.get("threshold_filterings")]
    print(json.dumps(out))
"""


def test_memory_bound_selection_same_on_1_2_4_devices():
    """Runs that reach the region engines' memory bound (cubature's retirement, PAGANI's
    threshold classification: selections over the whole store, with the evaluations
    sharded) take the same path and value on 1, 2 and 4 devices, each within its error of
    the closed form."""
    import math
    out = _run(STORE_CODE, devices=4)
    exact = (math.sqrt(math.pi) / 25 * math.erf(12.5)) ** 4
    for name in ("cubature", "pagani"):
        one = out[f"{name}/1"]
        assert one[2].startswith("memory_limit"), one        # the bound was reached
        assert (one[4] or 0) + (one[5] or 0) > 0, one        # and regions left the store
        assert abs(one[0] - exact) <= one[1], name
        for n in (2, 4):
            other = out[f"{name}/{n}"]
            assert other[2:] == one[2:], name
            assert other[0] == pytest.approx(one[0], rel=1e-13), name
            assert other[1] == pytest.approx(one[1], rel=1e-6), name


QMC_HLO_CODE = """
    import json, jax, numpy as np
    jax.config.update("jax_enable_x64", True)
    from loopint.engines import base, qmc
    from loopint.testfunctions import table51
    bound = base.BoundIntegrand.of(table51)
    out = {}
    for ndev in (1, 2):
        _, run = qmc._make_runner(bound, 6, "float64", "korobov3", 8, 4096, ndev)
        args = (bound, np.arange(1, 7, dtype=np.int64), np.int64(8191), np.int64(8191),
                np.int64(1), np.full((8, 6), 0.25), np.zeros(6), np.ones(6))
        text = run.lower(*args).compile().as_text()
        s, bad = run(*args)
        out[ndev] = {"all-gather": text.count("all-gather("), "all-reduce": text.count("all-reduce("),
                     "sums": np.asarray(s).ravel().tolist(), "bad": int(bad)}
    print(json.dumps(out))
"""


def test_qmc_devices_move_only_their_sums():
    """With two devices each one sums its share of every chunk: the compiled level has no
    all-gather (a chunk sharded along its points and reshaped for the integrand would be
    gathered onto every device), only the reductions of the sums, and the per-shift sums
    equal the one-device ones to round-off."""
    out = _run(QMC_HLO_CODE, devices=2)
    one, two = out["1"], out["2"]
    assert one["all-gather"] == one["all-reduce"] == 0
    assert two["all-gather"] == 0 and 1 <= two["all-reduce"] <= 2
    assert two["bad"] == one["bad"] == 0
    assert two["sums"] == pytest.approx(one["sums"], rel=1e-13)


# ------------------------------------------------------------------ a scan over devices
SCAN_CODE = """
    import json, numpy as np, loopint
    p = loopint.load({path!r})
    out = {{}}
    for n in (2, 4):
        r = loopint.compute(p, kinematics={{"s": np.array({s!r}), "m": 1.0}}, rtol=1e-6,
                            devices=n)
        out[n] = {{"value": [[v.real, v.imag] for v in r.value],
                  "error": [[e.real, e.imag] for e in r.error],
                  "ok": r.info["point_converged"], "region": r.region,
                  "shares": [s["points"] for s in r.info["device_shares"]]}}
    print(json.dumps(out))
"""


def _complex(pairs):
    a = np.asarray(pairs, float)
    return a[:, 0] + 1j * a[:, 1]


def _close(value, error, reference, factor=3.0):
    """Real and imaginary parts within ``factor`` times their errors (plus round-off)."""
    d = value - reference
    tiny = 1e-13 * np.abs(reference)
    return (np.all(np.abs(d.real) <= factor * np.abs(error.real) + tiny)
            and np.all(np.abs(d.imag) <= factor * np.abs(error.imag) + tiny))


def test_scan_split_over_devices_matches_one_device_and_closed_form():
    p = loopint.load(TRIANGLE)
    one = loopint.compute(p, kinematics={"s": np.array(SCAN_S), "m": 1.0}, rtol=1e-6,
                          devices=1)
    exact = np.array([c0_equal(s, 1.0) for s in SCAN_S])
    assert one.converged and _close(one.value, one.error, exact)
    out = _run(SCAN_CODE.format(path=TRIANGLE, s=SCAN_S), devices=4)
    for n in ("2", "4"):
        r = out[n]
        assert len(r["shares"]) == int(n)
        assert sorted(sum(r["shares"], [])) == list(range(len(SCAN_S)))
        assert r["ok"] == one.info["point_converged"] and r["region"] == one.region
        v, e = _complex(r["value"]), _complex(r["error"])
        assert _close(v, e, exact)
        assert _close(v, np.abs(e.real) + np.abs(one.error.real)
                      + 1j * (np.abs(e.imag) + np.abs(one.error.imag)), one.value, 1.0)


# ------------------------------------------------------------------ a regulated scan over devices
DIMREG_S = [-3.0, 1.0, 6.0, 10.0]      # Euclidean, below and above the threshold 4 m^2
DIMREG_CODE = """
    import json, numpy as np, loopint
    d = loopint.Diagram.from_graph(internal_lines=[["m", [1, 2]], ["m", [2, 1]]],
                                   external_lines=[["p1", 1], ["p2", 2]],
                                   scalar_products={{"p1*p1": "s"}}, dimension="4 - 2*eps")
    out = {{}}
    for n in (1, 2, 4):
        r = loopint.compute(d, kinematics={{"s": np.array({s!r}), "m": 1.0}}, eps_order=1,
                            rtol=1e-6, devices=n)
        out[n] = {{"ok": r.info["point_converged"], "status": r.status,
                  "shares": len(r.info.get("device_shares", [0])),
                  "coefficients": {{j: [[v.real, v.imag] for v in c]
                                   for j, c in r.coefficients.items()}},
                  "errors": {{j: [[v.real, v.imag] for v in c]
                             for j, c in r.coefficient_errors.items()}}}}
    print(json.dumps(out))
"""


def test_regulated_scan_split_over_devices():
    """A scan of the dimensionally regulated bubble shared out over 2 and 4 devices: the same
    statuses and Laurent orders as on one device, every coefficient within the errors of both
    runs and of the closed form (mpmath)."""
    import dimreg_points as dp
    out = _run(DIMREG_CODE.format(s=DIMREG_S), devices=4)
    one = out["1"]
    assert one["shares"] == 1 and all(one["ok"])
    for n in ("2", "4"):
        r = out[n]
        assert r["shares"] == int(n) and r["ok"] == one["ok"] and r["status"] == one["status"]
        assert sorted(r["coefficients"]) == sorted(one["coefficients"])
    for i, s in enumerate(DIMREG_S):
        exact = dp.bubble(s, 1.0, 1.0, (1, 1), 1)
        for j, ref in exact.items():
            for n in ("1", "2", "4"):
                v = complex(*out[n]["coefficients"][str(j)][i])
                e = complex(*out[n]["errors"][str(j)][i])
                tol = 5 * abs(e) + 1e-12 * abs(ref)
                assert abs(v - ref) <= tol, (s, j, n, v, ref, e)


# ------------------------------------------------------------------ a delta sequence over devices
DELTA_CODE = """
    import json, numpy as np, loopint
    p = loopint.load({path!r})
    out = {{}}
    for n in (1, 2, 4):
        r = loopint.compute(p, kinematics={{"s": {s!r}, "m": 1.0}}, contour="none",
                            method={method!r}, rtol={rtol!r}, devices=n)
        first = lambda x: complex(np.ravel(x)[0])
        out[n] = {{"value": [first(r.value).real, first(r.value).imag],
                  "error": [first(r.error).real, first(r.error).imag],
                  "status": r.status, "evaluations": r.evaluations,
                  "deltas": [row["delta"] for row in r.table],
                  "terms": [[first(row["value"]).real, first(row["value"]).imag]
                            for row in r.table]}}
    print(json.dumps(out))
"""


@pytest.mark.parametrize("method, rtol", [("cubature", 1e-6), ("pagani", 1e-6)])
def test_delta_sequence_steps_over_devices_equal_one_device(method, rtol):
    """A physical point by the delta sequence: on 2 and 4 devices the steps of a round run
    concurrently, one per device, and every term equals its one-device value bit for bit;
    the extrapolated value is the closed form's."""
    s = 5.0
    out = _run(DELTA_CODE.format(path=TRIANGLE, s=s, method=method, rtol=rtol), devices=4)
    one = out["1"]
    exact = c0_equal(s, 1.0)
    v1 = complex(*one["value"])
    assert one["status"] == "converged"
    assert abs(v1 - exact) <= 3 * abs(complex(*one["error"])) + 1e-13 * abs(exact)
    for n in ("2", "4"):
        other = out[n]
        assert other["status"] == one["status"]
        assert other["deltas"] == one["deltas"]
        assert other["terms"] == one["terms"]
        assert other["value"] == one["value"] and other["error"] == one["error"]
        assert other["evaluations"] >= one["evaluations"]


# ------------------------------------------------------------------ two processes
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def _two_processes(args: list, outputs: list) -> list:
    """``loopint ARGS --distributed`` in two processes on localhost; ``outputs[i]`` are the
    output options of process i.  Returns their (stdout, stderr)."""
    port = _free_port()
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=ROOT)
    env.pop("XLA_FLAGS", None)
    procs = []
    for i in range(2):
        cmd = [sys.executable, "-m", "loopint.cli", *args, *outputs[i], "--distributed",
               "--coordinator", f"localhost:{port}", "--num-processes", "2",
               "--process-id", str(i)]
        procs.append(subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (o, e) in zip(procs, outs):
        assert p.returncode == 0, e[-3000:]
    return outs


def test_one_integral_over_two_processes_is_one_program(tmp_path):
    """A single integral under jax.distributed: the engine shards over the devices of both
    processes (one device each) and gets the one-process value to round-off."""
    sunrise = os.path.join(ROOT, "diagrams", "sunrise_2L_D2.toml")
    _two_processes(["compute", sunrise, "--quiet"],
                   [["--json", str(tmp_path / f"out{i}.json")] for i in range(2)])
    assert not (tmp_path / "out1.json").exists()
    with open(tmp_path / "out0.json") as fh:
        two = json.load(fh)
    one = loopint.compute(loopint.load(sunrise))
    assert two["converged"] and one.converged
    assert two["info"]["direct"]["engine_info"]["devices"] == 2
    assert complex(*two["value"]) == pytest.approx(one.value, rel=1e-13)
    assert two["evaluations"] == one.evaluations


def test_scan_over_two_processes_with_jax_distributed(tmp_path):
    grid = f"s={SCAN_S[0]}:{SCAN_S[-1]}:6"
    outs = _two_processes(["scan", TRIANGLE, "--param", grid, "--rtol", "1e-6", "--quiet"],
                          [["--csv", str(tmp_path / f"out{i}.csv")] for i in range(2)])
    assert "6 points, 6 converged" in outs[0][0]
    assert "points" not in outs[1][0]                      # only process 0 reports
    assert not (tmp_path / "out1.csv").exists()            # ... and writes
    with open(tmp_path / "out0.csv") as fh:
        rows = list(csv.DictReader(fh))
    s = np.array([float(r["s"]) for r in rows])
    np.testing.assert_allclose(s, np.linspace(SCAN_S[0], SCAN_S[-1], 6))
    value = np.array([float(r["re"]) + 1j * float(r["im"]) for r in rows])
    error = np.array([float(r["err_re"]) + 1j * float(r["err_im"]) for r in rows])
    assert all(r["converged"] == "True" for r in rows)
    assert _close(value, error, np.array([c0_equal(x, 1.0) for x in s]))


BUBBLE_TOML = """
[diagram]
name = "bubble-eq-dimreg"
dimension = "4 - 2*eps"
internal_lines = [["m", [1, 2]], ["m", [2, 1]]]
external_lines = [["p1", 1], ["p2", 2]]

[diagram.scalar_products]
"p1*p1" = "s"

[kinematics]
s = -3.0
m = 1.0
"""


def test_regulated_scan_over_two_processes(tmp_path):
    """A scan of a dimensionally regulated integral under jax.distributed: the points are
    shared out over the processes and process 0 writes every point's Laurent coefficients,
    each within its errors of the closed form (mpmath)."""
    import dimreg_points as dp
    path = tmp_path / "bubble.toml"
    path.write_text(BUBBLE_TOML)
    _two_processes(["scan", str(path), "--param", "s=-3:10:4", "--eps-order", "1", "--rtol",
                    "1e-6", "--quiet"],
                   [["--json", str(tmp_path / f"out{i}.json")] for i in range(2)])
    assert not (tmp_path / "out1.json").exists()
    with open(tmp_path / "out0.json") as fh:
        out = json.load(fh)
    shares = out["info"]["process_shares"]
    assert len(shares) == 2 and sorted(sum((x["points"] for x in shares), [])) == [0, 1, 2, 3]
    assert out["converged"]
    for i, s in enumerate(np.linspace(-3.0, 10.0, 4)):
        for j, ref in dp.bubble(s, 1.0, 1.0, (1, 1), 1).items():
            v = complex(*out["coefficients"][str(j)][i])
            e = complex(*out["coefficient_errors"][str(j)][i])
            assert abs(v - ref) <= 5 * abs(e) + 1e-12 * abs(ref), (s, j, v, ref, e)
