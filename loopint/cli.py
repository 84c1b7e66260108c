"""The ``loopint`` command line.

    loopint compute FILE [--method M] [--rtol R] [--json OUT] [--plot OUT.png] [--resume]
    loopint show FILE
    loopint scan FILE --param s=1:10:100 [--csv OUT] [--json OUT] [--plot OUT.png]
    loopint bench [--suite seeds|generic|files|physical|all] [--quick] [--json OUT]

Exit status: 0 converged, 1 computed but not converged, 2 bad input or usage.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import logging
import os
import sys

EXIT_OK, EXIT_NOT_CONVERGED, EXIT_BAD_INPUT = 0, 1, 2

EPILOG = """examples:
  loopint show diagrams/triangle_above_threshold.toml
  loopint compute diagrams/triangle_above_threshold.toml --rtol 1e-6 --json out.json --plot delta.png
  loopint compute diagrams/table51_2L.toml --method qmc --rtol 1e-8
  loopint scan diagrams/triangle_below_threshold.toml --param s=-10:3.9:200 --csv scan.csv --plot scan.png
  loopint bench --suite seeds --quick
exit status: 0 converged, 1 computed but not converged, 2 bad input or usage"""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # usage errors exit 2 (argparse's default too), with our prefix
        self.print_usage(sys.stderr)
        print(f"loopint: error: {message}", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)


def _common(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("integration")
    g.add_argument("--method", choices=["auto", "iterated", "cubature", "pagani", "qmc", "mc"],
                   help="engine (default: the file's [integration] method, else auto)")
    g.add_argument("--rtol", type=float, help="relative tolerance of the final value, e.g. 1e-6")
    g.add_argument("--atol", type=float, help="absolute tolerance of the final value")
    g.add_argument("--max-evals", type=float, dest="max_evals",
                   help="integrand evaluations allowed per integral, e.g. 1e9")
    g.add_argument("--precision", choices=["float64", "float32"], help="floating point width")
    g.add_argument("--delta", help="regulator: 'auto' (default), 0 (no regulator) or delta0")
    g.add_argument("--contour", choices=["auto", "none", "deform"],
                   help="physical region: 'auto' (default: delta = 0 on a deformed contour, the "
                        "delta sequence where that does not converge), 'deform' (contour "
                        "only) or 'none' (delta sequence only)")
    g.add_argument("--cross-check", action="store_true", dest="cross_check", default=None,
                   help="compute physical points by both methods and compare them (status "
                        "'methods disagree' beyond 5 combined errors)")
    g.add_argument("--prefactor", choices=["pysecdec", "none"],
                   help="normalization: pySecDec's (default) or the bare parametric integral")
    g.add_argument("--eps-order", type=int, dest="eps_order",
                   help="dimensional regularization (dimension with eps): the highest order "
                        "of eps of the Laurent coefficients (default 0, the finite part)")
    g.add_argument("--derivative", action="append", dest="derivatives", metavar="SYMBOL",
                   help="also the derivative with respect to this kinematic symbol (repeat for "
                        "several), integrated with the value to the same tolerance")
    g.add_argument("--derivative-order", type=int, choices=[1, 2], dest="derivative_order",
                   help="2: also the second derivatives of every pair of --derivative symbols")
    g.add_argument("--seed", type=int, help="random seed of the mc/qmc engines")
    g.add_argument("--device", choices=["cpu", "gpu"], help="run on this JAX platform")
    g.add_argument("--devices", metavar="all|N",
                   help="local devices to use (default all): a scan's points are shared out "
                        "over them, and each engine run shards its evaluations")
    g.add_argument("--quiet", action="store_true", help="no progress display")
    g.add_argument("--no-server", action="store_true", dest="no_server",
                   help="compute in this process even where 'loopint serve' runs")
    d = p.add_argument_group("several hosts (jax.distributed)")
    d.add_argument("--distributed", action="store_true",
                   help="join a multi-process run (one process per host, e.g. under srun): the "
                        "points of a scan are shared out over the processes; process 0 prints "
                        "and writes the outputs")
    d.add_argument("--coordinator", metavar="HOST:PORT",
                   help="with --distributed: process 0's address (default: from the cluster "
                        "environment, e.g. Slurm)")
    d.add_argument("--num-processes", type=int, dest="num_processes",
                   help="with --distributed: number of processes (default: from the cluster)")
    d.add_argument("--process-id", type=int, dest="process_id",
                   help="with --distributed: this process's index (default: from the cluster)")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="loopint", description="Feynman loop integrals on GPUs and CPUs.",
                epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="store_true", help="print the version and exit")
    sub = p.add_subparsers(dest="command", parser_class=_Parser)

    c = sub.add_parser("compute", help="compute the integral of a diagram file",
                       description="Compute the integral defined in FILE and print value ± error.",
                       epilog="example: loopint compute diagrams/triangle_above_threshold.toml "
                              "--rtol 1e-6 --json out.json --plot delta.png",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("file", help="diagram file (TOML), e.g. diagrams/pentagon_ggttH.toml")
    _common(c)
    c.add_argument("--json", metavar="OUT", help="write the full result as JSON (atomically)")
    c.add_argument("--plot", metavar="OUT.png", help="PNG of the delta-sequence and its limit")
    c.add_argument("--resume", action="store_true",
                   help="continue an interrupted run from OUT.json.partial (needs --json)")

    s = sub.add_parser("show", help="print L, N, D, U, F, exponents, prefactor and region",
                       epilog="example: loopint show diagrams/ladder_vertex_2L_k5.toml")
    s.add_argument("file", help="diagram file (TOML)")
    s.add_argument("--device", choices=["cpu", "gpu"], help=argparse.SUPPRESS)
    s.add_argument("--no-server", action="store_true", dest="no_server",
                   help="run in this process even where 'loopint serve' runs")

    sc = sub.add_parser("scan", help="evaluate many kinematic points as one batched computation",
                        description="Vary kinematic symbols over a grid; all points are one "
                                    "vector integrand (not a loop over runs).",
                        epilog="example: loopint scan diagrams/triangle_below_threshold.toml "
                               "--param s=-10:3.9:200 --csv scan.csv",
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    sc.add_argument("file", help="diagram file (TOML)")
    sc.add_argument("--param", action="append", required=True, metavar="NAME=A:B:N",
                    help="N evenly spaced values from A to B for symbol NAME (repeat for a grid)")
    _common(sc)
    sc.add_argument("--csv", metavar="OUT", help="write one row per point as CSV")
    sc.add_argument("--json", metavar="OUT", help="write all points as JSON")
    sc.add_argument("--plot", metavar="OUT.png", help="PNG of Re and Im with error bands")
    sc.add_argument("--block", type=int, default=4096, metavar="N",
                    help="points per batched computation (default 4096); after each block the "
                         "finished points go to OUT.partial (OUT: the --csv or --json file)")
    sc.add_argument("--resume", action="store_true",
                    help="continue an interrupted scan from OUT.partial: finished blocks are "
                         "not computed again")

    sv = sub.add_parser("serve", help="keep a warm process that runs the next compute, scan "
                                      "and show commands (seconds of start-up saved on each)",
                        description="Listen on a socket in the cache folder; while this runs, "
                                    "'loopint compute', 'scan' and 'show' of this user on this "
                                    "host are run here, in a process that has imported and "
                                    "traced already. Runs in the foreground (start it with &).",
                        epilog="example: loopint serve --idle 3600 &",
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    sv.add_argument("--idle", type=float, default=None, metavar="SECONDS",
                    help="exit after this long without a command (default 900; inf: never)")
    sv.add_argument("--stop", action="store_true", help="stop the running server and exit")
    sv.add_argument("--device", choices=["cpu", "gpu"], help="run on this JAX platform")

    b = sub.add_parser("bench", help="run the benchmark suite and print the table",
                       epilog="example: loopint bench --suite seeds --quick")
    b.add_argument("--suite", choices=["seeds", "generic", "files", "physical", "dimreg",
                                        "derivatives", "amplitude", "scans", "devices",
                                        "all"],
                   default="seeds")
    b.add_argument("--quick", action="store_true", help="small, fast version of each case")
    b.add_argument("--json", metavar="OUT", help="write the rows as JSON")
    b.add_argument("--only", metavar="TEXT", help="only the seeds cases whose name contains TEXT")
    b.add_argument("--device", choices=["cpu", "gpu"], help="run on this JAX platform")
    return p


def _select_device(name: str | None) -> None:
    if name:
        os.environ["JAX_PLATFORMS"] = "cuda" if name == "gpu" else "cpu"


def _overrides(a) -> dict:
    kw = {}
    for k in ("method", "rtol", "atol", "precision", "prefactor", "seed", "contour",
              "cross_check", "eps_order", "derivatives", "derivative_order"):
        v = getattr(a, k, None)
        if v is not None:
            kw[k] = v
    if getattr(a, "max_evals", None) is not None:
        kw["max_evals"] = int(a.max_evals)
    if getattr(a, "delta", None) is not None:
        kw["delta"] = a.delta if a.delta == "auto" else _float(a.delta, "--delta")
    if getattr(a, "devices", None) is not None:
        if a.devices != "all" and not a.devices.isdigit():
            raise _UsageError(f"--devices: expected 'all' or a whole number, got {a.devices!r}")
        kw["devices"] = a.devices if a.devices == "all" else int(a.devices)
    return kw


def _float(text, what):
    try:
        return float(text)
    except ValueError:
        raise _UsageError(f"{what}: expected a number, got {text!r}") from None


class _UsageError(Exception):
    pass


def _fmt(v: complex, e: complex) -> str:
    return (f"({v.real:.12g} ± {abs(e.real):.2g}) + ({v.imag:.12g} ± {abs(e.imag):.2g}) i")


def cmd_show(a) -> int:
    from .diagram import DiagramError
    from .errors import SpecError
    from .problem import load
    p = load(a.file)
    d = p.diagram
    print(f"diagram     {d.name}  ({d.form} form, {a.file})")
    print(f"loops L     {d.loops}")
    print(f"lines N     {d.N}   variables {', '.join(map(str, d.variables))}")
    print(f"dimension D {d.dimension}")
    print(f"powers      {[str(x) for x in d.powers]}")
    if d.propagators:
        print("propagators " + "\n            ".join(d.propagators))
    print(f"U           {d.U}")
    print(f"F           {d.F}")
    print(f"exponents   U^({d.U_exponent}) / (F - i0)^({d.F_exponent})")
    print(f"prefactor   {d.prefactor(p.settings.prefactor)}   ({p.settings.prefactor})")
    kin = ", ".join(f"{k} = {v}" for k, v in p.kinematics.items()) or "(none)"
    print(f"kinematics  {kin}")
    if not any(hasattr(v, "__len__") for v in p.kinematics.values()):
        try:
            r = d.region(p.kinematics)
        except DiagramError as e:  # e.g. F overflows at absurd kinematic values
            raise SpecError(f"{a.file}: kinematics: {_kinematics_message(e)}") from None
        what = {"euclidean": "Euclidean: F >= 0 on the simplex, delta = 0",
                "negative": "F <= 0 on the simplex: delta = 0 with the i0 phase",
                "physical": "physical: F changes sign (or could not be proven one-signed); "
                            + _physical_method(d, p.settings)}[r.kind]
        print(f"region      {what}\n            by: {r.method}{' — ' + r.detail if r.detail else ''}")
    _show_convergence(a.file, d, p.kinematics)
    if p.reference:
        print(f"reference   {p.reference.value}  ({p.reference.source})")
    return EXIT_OK


def _physical_method(d, s) -> str:
    """How ``compute`` takes a physical point of ``d`` with settings ``s``."""
    if d.regulated:
        return "each sector's contour deformed (the Laurent coefficients)"
    return {"auto": "deformed contour (delta sequence where it fails)",
            "deform": "deformed contour", "none": "delta-regulated and extrapolated"}[s.contour]


def _show_convergence(path: str, d, kinematics) -> None:
    """The power-counting verdict (:mod:`loopint.divergence`) at the file's kinematic point,
    or for generic kinematics when the file gives a scan; for a regulated integral its pole
    structure (:func:`loopint.dimreg.structure`)."""
    from .divergence import analyze
    from .errors import SpecError
    from .diagram import DiagramError
    scalar = not any(hasattr(v, "__len__") for v in kinematics.values())
    if d.regulated:
        from .dimreg import structure
        try:
            text = structure(d, kinematics if scalar else None)
        except DiagramError as e:
            raise SpecError(f"{path}: {e.key}: {e}") from None
        print("eps series  " + text.replace("\n", "\n            "))
        return
    try:
        v = analyze(d, kinematics if scalar else None)
    except DiagramError as e:
        raise SpecError(f"{path}: kinematics: {e}") from None
    text = v.summary().replace("\n", "\n            ")
    print(f"convergence {text}")


class _Progress:
    """Progress of a long run on stderr; nothing with ``--quiet``.

    On a terminal: a live status line (rich) from the start, so a long delta = 0 or contour
    run shows that it is working, and one line per stage event (direct, contour, each step
    of the delta sequence).  When stderr is not a terminal (a log file, a batch job): plain
    lines, one per stage event, at most one every ``interval`` seconds except at a change of
    stage, and a line every ``heartbeat`` seconds while one stage runs without events (a
    contour or delta = 0 run is one engine call); the last event is always written.  Use as a
    context manager around the run.
    """

    def __init__(self, quiet: bool, label: str = "", interval: float = 5.0, stream=None,
                 heartbeat: float = 60.0):
        import time
        self.heartbeat = heartbeat
        self.started = time.monotonic()
        self.timer = None
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.tty = self.stream.isatty()
        self.label = label
        self.interval = interval
        self.clock = time.monotonic
        self.last_stage = None
        self.last_time = -float("inf")
        self.pending = None       # a plain line held back by the interval
        self.console = self.status = None

    def __enter__(self):
        if not self.quiet and self.tty:
            from rich.console import Console
            self.console = Console(file=self.stream)
            self.status = self.console.status(f"computing {self.label}")
            self.status.start()
        elif not self.quiet:
            self._arm()
        return self

    def _arm(self):
        import threading
        self.timer = threading.Timer(self.heartbeat, self._beat)
        self.timer.daemon = True
        self.timer.start()

    def _beat(self):
        """A line when no event came for ``heartbeat`` seconds (a long single stage)."""
        if self.clock() - self.last_time >= self.heartbeat:
            print(f"loopint: still computing {self.label}, {self.clock() - self.started:.0f} s "
                  f"(stage: {self.last_stage or 'first integration'})", file=self.stream,
                  flush=True)
        self._arm()

    def __exit__(self, *exc):
        if self.timer is not None:
            self.timer.cancel()
        if self.status is not None:
            self.status.stop()
        if self.pending:
            print(self.pending, file=self.stream, flush=True)
            self.pending = None
        return False

    @staticmethod
    def describe(ev: dict) -> str:
        """One line: stage, evaluations, current estimate (first point of a batch), error,
        elapsed seconds."""
        import numpy as np
        if ev["stage"] == "block":
            return (f"scan: {ev['done']} of {ev['points']} points done, {ev['converged']} "
                    f"converged, {ev['seconds']:.1f} s")
        v = np.atleast_1d(ev["value"])
        e = np.atleast_1d(ev["error"])
        stage = {"direct": "delta = 0 (no regulator)",
                 "contour": "contour deformation (delta = 0 on a deformed contour)",
                 "series": "Laurent series in eps",
                 }.get(ev["stage"], ev["stage"])
        if ev["stage"] == "delta":
            stage = f"delta sequence, {ev['n']} terms (smallest delta {ev['delta']:.3g})"
        first = f" [first of {v.size} points]" if v.size > 1 else ""
        return (f"{stage}: evaluations {ev['evaluations']:.3g}, estimate "
                f"{_fmt(complex(v[0]), complex(e[0]))}{first}, {ev['seconds']:.1f} s")

    def __call__(self, ev: dict) -> None:
        if self.quiet:
            return
        line = self.describe(ev)
        if self.console is not None:
            self.console.print(f"[dim]{line}[/dim]", highlight=False)
            self.status.update(f"computing {self.label}: {line}")
            return
        now = self.clock()
        if ev["stage"] != self.last_stage or now - self.last_time >= self.interval:
            print(f"loopint: {line}", file=self.stream, flush=True)
            self.last_stage, self.last_time, self.pending = ev["stage"], now, None
        else:
            self.pending = f"loopint: {line}"


_ZERO_DELTA = {"euclidean": "0 (Euclidean region)",
               "negative": "0 (F <= 0 on the simplex: the i0 phase, no regulator needed)",
               "forced": "0 as requested (the point is not proven Euclidean)"}


def _regulator(r) -> str:
    """How the regulator was handled, and in which region (the `delta` line of the summary)."""
    from collections import Counter
    regions = r.region if isinstance(r.region, list) else [r.region]
    counts = Counter(regions)
    reg = r.info.get("regulated") or {}
    how = Counter(reg.get("point_method", []))
    parts = []
    for kind in ("euclidean", "negative", "forced"):
        if counts[kind]:
            parts.append(_ZERO_DELTA[kind] + (f" at {counts[kind]} points" if len(regions) > 1
                                              else ""))
    many = len(regions) > 1
    if how["contour"]:
        where = " over the decomposed sectors" if reg.get("domain_contour") == "decomposed" else ""
        parts.append(f"contour deformation (delta = 0 on a deformed contour{where}), physical "
                     "region" + (f" at {how['contour']} points" if many else ""))
    if how["delta sequence"] and r.table:
        parts.append(f"delta sequence, {len(r.table)} terms, {r.table[0]['delta']:.4g} .. "
                     f"{r.table[-1]['delta']:.4g}, extrapolated to 0 (physical region)"
                     + (f" at {how['delta sequence']} points" if many else ""))
    if reg.get("cross_check_result"):
        worst = max(c["sigmas"] for c in reg["cross_check_result"])
        parts.append(f"cross-check: contour and delta sequence {worst:.2g} combined errors "
                     "apart")
    elif reg.get("contour_not_used"):
        parts.append(f"(contour not used: {reg['contour_not_used']})")
    if r.info.get("cross_check"):
        parts.append(r.info["cross_check"])
    return "; ".join(parts)


def _print_series(r) -> None:
    """The Laurent coefficients of a regulated integral, one line per order, and the sum's
    summary."""
    info = r.info["series"]
    for j, c in r.coefficients.items():
        e = r.coefficient_errors[j]
        print(f"eps^{j:<3d}     {_fmt(complex(c), complex(e))}")
    print(f"status      {r.status}")
    if not r.converged:
        print("error       lower bounds only: the run did not converge, the true errors may be "
              "much larger")
    how = {"euclidean": "Euclidean region (F >= 0)", "negative": "F <= 0: the i0 phase",
           "physical": "physical region: contour deformation in the sectors "
                       f"({_lambda_range(info['lambda'])})"}[r.region]
    if info["sectors"]:
        print(f"expansion   sector decomposition, {info['sectors']} sectors, up to "
              f"{info['sector_poles']} poles per sector; {how}")
    else:
        print(f"expansion   closed form (one-propagator loops); {how}")
    print(f"method      {r.method}   prefactor {r.prefactor}   device {r.device}")
    print(_time_line(r))


def _lambda_range(lams: dict) -> str:
    """The contour strengths of a series' points (one per sector, or one per point), as
    ``lambda 0.3`` or ``lambda 0.069-0.91 over the sectors``."""
    vals = [float(v) for lam in lams.values()
            for v in (lam if isinstance(lam, (list, tuple)) else [lam])]
    if not vals:
        return "no point integrated"
    lo, hi = min(vals), max(vals)
    return f"lambda {lo:.3g}" if lo == hi else f"lambda {lo:.3g}-{hi:.3g} over the sectors"


def _time_line(r) -> str:
    """Evaluations and time, with the part of this call spent making kernels (tracing,
    lowering, compiling or loading them from the compilation cache) when it is noticeable."""
    line = f"evaluations {r.evaluations:.4g}   time {r.seconds:.3g} s"
    t = r.info.get("timing") or {}
    making = sum(t.get(k, 0.0) for k in ("trace", "lower", "compile", "cache_load"))
    return line + (f" (compiling {making:.3g} s)" if making >= 0.05 else "")


def _print_derivatives(r) -> None:
    """One line per derivative (per Laurent coefficient for a regulated integral)."""
    for label, d in (r.derivatives or {}).items():
        name = "d/d" + label if "," not in label else "d2/d" + "d".join(label.split(","))
        if d.coefficients is None:
            print(f"{name:<11s} {_fmt(complex(d.value), complex(d.error))}")
            continue
        for j, c in d.coefficients.items():
            print(f"{name + f' eps^{j}':<11s} "
                  f"{_fmt(complex(c), complex(d.coefficient_errors[j]))}")


def _print_result(r, reference=None) -> None:
    if r.coefficients is not None and not isinstance(r.region, list):
        _print_series(r)
        _print_derivatives(r)
        if reference is not None:
            diff = complex(r.value) - reference.value
            print(f"reference   eps^0: {reference.value:.12g}   (difference {abs(diff):.2g}; "
                  f"{reference.source})")
        return
    print(f"value       {_fmt(complex(r.value), complex(r.error))}")
    _print_derivatives(r)
    print(f"status      {r.status}")
    if not r.converged:
        print("error       a lower bound only: the run did not converge, the true error may be "
              "much larger")
    if reference is not None:
        diff = complex(r.value) - reference.value
        ref = reference.value
        print(f"reference   {ref.real:.12g} {'-' if ref.imag < 0 else '+'} {abs(ref.imag):.12g} i   "
              f"(difference {abs(diff):.2g}; {reference.source})")
    print(f"delta       {_regulator(r)}")
    print(f"method      {r.method}   prefactor {r.prefactor}   device {r.device}")
    print(_time_line(r))


def _kinematics_message(e) -> str:
    """The diagram layer's error about a kinematic point, in the words of a file's user."""
    msg = str(e)
    if "non-finite coefficients" in msg:
        return ("F is not finite at this kinematic point: an expression divides by zero or "
                "overflows there")
    return msg


def _compute(a, p, run=None, **kw):
    """:func:`loopint.compute` (or ``run``, e.g. :func:`loopint.scan.scan`) for the command
    line: the progress display around it, and errors of the kinematic point reported against
    the file."""
    import warnings
    from .compute import compute
    from .diagram import DiagramError
    from .errors import BudgetError, SpecError
    try:
        with _Progress(a.quiet, label=p.diagram.name) as progress, warnings.catch_warnings():
            # F's coefficients at a point where a denominator vanishes or a value overflows:
            # the error below says so, NumPy's warning would only come first
            warnings.filterwarnings("ignore", "divide by zero|overflow", RuntimeWarning,
                                    r"loopint\.lower")
            return (run or compute)(p, progress=progress, **kw, **_overrides(a))
    except DiagramError as e:
        if e.key != "kinematics":
            raise
        raise SpecError(f"{a.file}: kinematics: {_kinematics_message(e)}") from None
    except BudgetError as e:
        raise SpecError(f"{a.file}: {_budget_key(a)}: {e}; give a larger budget") from None
    except SpecError as e:
        if str(e).startswith(("kinematics", "derivatives", "devices")):
            raise SpecError(f"{a.file}: {e}") from None
        raise


def _budget_key(a) -> str:
    """Where the evaluation budget of a command came from: the option or the file's key."""
    return "--max-evals" if getattr(a, "max_evals", None) is not None else "integration.max_evals"


def _checkpoint(a, output: str | None, needs: str) -> str | None:
    """The checkpoint file of a run writing ``output`` (``OUT.partial``), checked against
    ``--resume``.  A distributed run has none: one writer, and the same decisions on every
    process."""
    if a.resume and not output:
        raise _UsageError(f"--resume needs {needs} (the checkpoint is OUT.partial)")
    if a.resume and a.distributed:
        raise _UsageError("--resume cannot be used with --distributed")
    return f"{output}.partial" if output and not a.distributed else None


def cmd_compute(a) -> int:
    import numpy as np
    from .amplitude import compute_file
    from .errors import BudgetError, SpecError
    from .io import write_json_atomic
    from .problem import load
    try:
        rc = compute_file(a, _overrides(a))   # an [amplitude] file: the weighted sum of its terms
    except BudgetError as e:
        raise SpecError(f"{a.file}: {_budget_key(a)}: a term's share of the budget is too "
                        f"small ({e}); give a larger budget") from None
    if rc is not None:
        return rc
    p = load(a.file)
    checkpoint = _checkpoint(a, a.json, "--json OUT")
    r = _compute(a, p, checkpoint=checkpoint, resume=a.resume)
    # lists in [kinematics] are a batch of points, computed together and listed as a scan's
    varying = [k for k, v in p.kinematics.items() if np.ndim(v)]
    rows = _point_rows(r, p.kinematics, varying) if varying else None
    if rows is None:
        _print_result(r, p.reference)
    else:
        _print_points(r, rows, listing=True, more="use --json")
    if a.json:
        d = r.to_dict()
        if rows is not None:
            d["points"] = rows
        d["file"] = os.path.abspath(a.file)
        write_json_atomic(a.json, d)
        if checkpoint and os.path.exists(checkpoint) and r.converged:
            os.unlink(checkpoint)
    if a.plot:
        from .plot import plot_result, plot_scan
        if rows is None:
            plot_result(r, a.plot, title=p.diagram.name)
        else:
            fixed = {k: float(v) for k, v in p.kinematics.items() if k not in varying}
            plot_scan(rows, varying[0], a.plot, title=p.diagram.name, prefactor=r.prefactor,
                      fixed=fixed)
    return EXIT_OK if r.converged else EXIT_NOT_CONVERGED


def parse_param(text: str):
    """``NAME=A:B:N`` -> (name, numpy array of N values)."""
    import numpy as np
    from .spec.expr import is_identifier
    if "=" not in text:
        raise _UsageError(f"--param {text!r}: expected NAME=A:B:N")
    name, rng = text.split("=", 1)
    parts = rng.split(":")
    if not is_identifier(name) or len(parts) != 3:
        raise _UsageError(f"--param {text!r}: expected NAME=A:B:N, e.g. s=1:10:100")
    a_, b_ = _float(parts[0], f"--param {name}"), _float(parts[1], f"--param {name}")
    try:
        n = int(parts[2])
    except ValueError:
        raise _UsageError(f"--param {text!r}: N must be an integer") from None
    if not 1 <= n <= 10**6:
        raise _UsageError(f"--param {text!r}: N must be between 1 and 1e6")
    if not (np.isfinite(a_) and np.isfinite(b_)):
        raise _UsageError(f"--param {text!r}: limits must be finite")
    return name, np.linspace(a_, b_, n)


def cmd_scan(a) -> int:
    import numpy as np
    from .io import write_json_atomic
    from .scan import scan
    from .files import write_text_atomic
    from .problem import load
    p = load(a.file)
    grids = [parse_param(t) for t in a.param]
    names = [g[0] for g in grids]
    for n in names:
        if n not in p.kinematics:
            raise _UsageError(f"--param {n}: {a.file} has no kinematic symbol {n!r} "
                              f"(symbols: {', '.join(p.kinematics)})")
    if len(set(names)) != len(names):
        raise _UsageError("--param: a symbol is given twice")
    listed = [k for k, v in p.kinematics.items() if np.ndim(v) and k not in names]
    if listed:
        raise _UsageError(f"{a.file}: kinematics.{listed[0]} is a list of values (a batch of "
                          "points), which a --param grid cannot be combined with: give it one "
                          f"value and scan it with --param {listed[0]}=A:B:N, or compute the "
                          f"file's list alone with `loopint compute {a.file}`")
    mesh = np.meshgrid(*[g[1] for g in grids], indexing="ij")
    kin = dict(p.kinematics)
    for n, m in zip(names, mesh):
        kin[n] = m.reshape(-1)
    if a.block < 1:
        raise _UsageError(f"--block {a.block}: must be at least 1")
    checkpoint = _checkpoint(a, a.csv or a.json, "--csv OUT or --json OUT")
    # a single point, and an epsilon expansion, are computed in one call (loopint.scan): the
    # output is written at the end, and there is nothing to resume
    if checkpoint and (mesh[0].size == 1 or p.diagram.regulated):
        if a.resume:
            what = "one point" if mesh[0].size == 1 else "an epsilon expansion"
            raise _UsageError(f"--resume: a scan of {what} runs in one call and keeps no "
                              "checkpoint; run it again without --resume")
        checkpoint = None
    r = _compute(a, p, run=scan, kinematics=kin, block=a.block, checkpoint=checkpoint,
                 resume=a.resume)
    rows = _point_rows(r, kin, names)
    if a.csv:
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
        write_text_atomic(a.csv, buf.getvalue())
    if a.json:
        d = r.to_dict()
        d["points"] = rows
        d["file"] = os.path.abspath(a.file)
        write_json_atomic(a.json, d)
    if a.plot:
        from .plot import plot_scan
        fixed = {k: float(v) for k, v in kin.items() if k not in names}
        if len(names) > 1:
            title = f"{p.diagram.name}, over a grid of {', '.join(names)}"
        else:
            title = p.diagram.name
        plot_scan(rows, names[0], a.plot, title=title, prefactor=r.prefactor, fixed=fixed)
    if checkpoint and os.path.exists(checkpoint):
        os.unlink(checkpoint)          # every point is in the outputs now
    _print_points(r, rows, listing=not a.csv and not a.json, more="use --csv")
    return EXIT_OK if r.converged else EXIT_NOT_CONVERGED


def _point_rows(r, kin, names) -> list[dict]:
    """One row per kinematic point of a batched result: the values of the symbols ``names``
    (those that vary), the value, its error, the Laurent coefficients and derivatives, and
    the point's status."""
    import numpy as np
    vals = np.atleast_1d(r.value)
    errs = np.atleast_1d(r.error)
    ok = r.info.get("point_converged") or [r.converged] * len(vals)
    why = r.info.get("point_status") or [r.status] * len(vals)
    rows = []
    for i in range(len(vals)):
        row = {n: float(kin[n][i]) for n in names}
        row.update(re=vals[i].real, im=vals[i].imag, err_re=abs(errs[i].real),
                   err_im=abs(errs[i].imag))
        for j, c in (r.coefficients or {}).items():     # an epsilon expansion's orders
            v, e = np.atleast_1d(c)[i], np.atleast_1d(r.coefficient_errors[j])[i]
            key = f"eps^{j}"
            row.update({f"{key}_re": v.real, f"{key}_im": v.imag, f"{key}_err_re": abs(e.real),
                        f"{key}_err_im": abs(e.imag)})
        for label, d in (r.derivatives or {}).items():
            v, e = np.atleast_1d(d.value)[i], np.atleast_1d(d.error)[i]
            key = f"d({label})"
            row.update({f"{key}_re": v.real, f"{key}_im": v.imag, f"{key}_err_re": abs(e.real),
                        f"{key}_err_im": abs(e.imag)})
        row["converged"] = bool(ok[i])
        row["status"] = why[i]
        rows.append(row)
    return rows


def _print_points(r, rows: list[dict], listing: bool, more: str) -> None:
    """The summary line of a batched result and, with ``listing``, its first 20 rows."""
    print(f"{len(rows)} points, {sum(r_['converged'] for r_ in rows)} converged, "
          f"{r.evaluations:.3g} evaluations, {r.seconds:.3g} s, method {r.method}, device {r.device}")
    if listing:
        for row in rows[:20]:
            print("  " + "  ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}"
                                   for k, v in row.items()))
        if len(rows) > 20:
            print(f"  ... ({len(rows) - 20} more; {more})")


def cmd_bench(a) -> int:
    from .bench import run_suite
    return run_suite(a.suite, quick=a.quick, json_path=a.json, only=a.only)


def _check_outputs(a) -> str | None:
    """Why an output path (--json, --csv, --plot, and --json's checkpoint) cannot be written,
    or None: checked before anything is computed."""
    paths = [(f"--{o}", getattr(a, o, None)) for o in ("json", "csv", "plot")]
    checkpoints = []
    if getattr(a, "json", None) and getattr(a, "command", None) == "compute":
        checkpoints.append(("--json", f"{a.json}.partial"))
    if getattr(a, "command", None) == "scan" and (a.csv or a.json):
        checkpoints.append(("--csv" if a.csv else "--json", f"{a.csv or a.json}.partial"))
    for option, path in paths + checkpoints:
        if not path:
            continue
        folder = os.path.dirname(os.path.abspath(path))
        if os.path.isdir(path):
            example = os.path.join(path, "out." + {"--plot": "png"}.get(option, option[2:]))
            return f"{option} {path}: is a folder; give a file name, e.g. {example}"
        if not os.path.isdir(folder):
            return f"{option} {path}: folder does not exist"
        if not os.access(folder, os.W_OK | os.X_OK):
            return f"{option} {path}: folder {folder} is not writable"
        if os.path.exists(path) and not os.path.isfile(path):
            return f"{option} {path}: exists and is not a regular file"
    # an output must not replace the input file or another output of the same run
    seen = {}
    source = getattr(a, "file", None)
    if source:
        seen[os.path.realpath(source)] = "the input file"
    for option, path in paths + [(f"the checkpoint of {o}", p) for o, p in checkpoints]:
        if not path:
            continue
        real = os.path.realpath(path)
        if real in seen:
            return f"{option} {path}: is {seen[real]}; give another file name"
        seen[real] = f"the file of {option}" if option.startswith("--") else option
    return None


def main(argv=None) -> int:
    parser = build_parser()
    a = parser.parse_args(argv)
    if a.version:
        from . import __version__
        print(f"loopint {__version__}")
        return EXIT_OK
    if not a.command:
        parser.print_help()
        return EXIT_BAD_INPUT
    _select_device(getattr(a, "device", None))
    logging.basicConfig(level=logging.WARNING, format="loopint: %(message)s")
    problem = _check_outputs(a)
    if problem:
        print(f"loopint: error: {problem}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if a.command == "serve":
        return cmd_serve(a)
    if _forwards(a):
        from . import server
        code = server.forward(sys.argv[1:] if argv is None else list(argv))
        if code is not None:
            return code
    if getattr(a, "distributed", False):
        return _distributed(a)
    given = [o for o in ("coordinator", "num_processes", "process_id")
             if getattr(a, o, None) is not None]
    if given:
        print(f"loopint: error: --{given[0].replace('_', '-')} needs --distributed",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    return _dispatch(a)


def _forwards(a) -> bool:
    """Whether to hand the command to a running ``loopint serve`` (:mod:`loopint.server`)."""
    from .server import FORWARDED, SERVING
    return (a.command in FORWARDED and not getattr(a, "no_server", False)
            and not getattr(a, "distributed", False) and SERVING not in os.environ)


def cmd_serve(a) -> int:
    from . import server
    if a.stop:
        if server.stop():
            print("loopint: server stopped", file=sys.stderr)
            return EXIT_OK
        print("loopint: no server is running", file=sys.stderr)
        return EXIT_NOT_CONVERGED
    idle = server.DEFAULT_IDLE if a.idle is None else a.idle
    problem = server.check_idle(idle)
    if problem:
        print(f"loopint: error: {problem}", file=sys.stderr)
        return EXIT_BAD_INPUT
    path = server.socket_path()
    if path is None:
        print("loopint: error: no socket path: LOOPINT_SERVER or LOOPINT_CACHE_DIR is empty "
              "(disk caches off)", file=sys.stderr)
        return EXIT_BAD_INPUT
    return server.serve(path, idle)


def _distributed(a) -> int:
    """``--distributed``: join the processes, run the command on every one; only process 0
    prints and writes the outputs (the others' stdout goes to /dev/null)."""
    from .parallel import init_distributed
    if a.num_processes is not None and a.num_processes < 1:
        print(f"loopint: error: --num-processes must be >= 1, got {a.num_processes}",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    if a.process_id is not None and not (
            0 <= a.process_id < (a.num_processes or a.process_id + 1)):
        print(f"loopint: error: --process-id must be from 0 to --num-processes - 1, got "
              f"{a.process_id}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        index, _ = init_distributed(a.coordinator, a.num_processes, a.process_id)
    except (ValueError, RuntimeError) as e:     # no cluster environment, or it is incomplete
        print(f"loopint: error: --distributed: {e} (give --coordinator, --num-processes and "
              "--process-id outside a cluster launcher)", file=sys.stderr)
        return EXIT_BAD_INPUT
    if index == 0:
        return _dispatch(a)
    a.json = a.csv = a.plot = None
    a.quiet = True
    with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
        return _dispatch(a)


def _dispatch(a) -> int:
    from .diagram import DiagramError
    from .errors import SpecError
    try:
        rc = {"show": cmd_show, "compute": cmd_compute, "scan": cmd_scan,
              "bench": cmd_bench}[a.command](a)
        sys.stdout.flush()         # here, where a closed pipe is caught below
        return rc
    except DiagramError as e:    # raised while computing: name the file and the key
        where = f"{a.file}: " if getattr(a, "file", None) and a.file not in str(e) else ""
        key = f"{e.key}: " if e.key and not str(e).startswith(e.key) else ""
        print(f"loopint: error: {where}{key}{e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (SpecError, _UsageError) as e:
        print(f"loopint: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("loopint: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # stdout closed by its reader (`loopint compute F | head -2`): the rest of the
        # output goes nowhere, and Python's flush at exit must not fail on it again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
