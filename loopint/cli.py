"""The ``loopint`` command line (DESIGN section 4.3).

    loopint compute FILE [--method M] [--rtol R] [--json OUT] [--plot OUT.png] [--resume]
    loopint show FILE
    loopint scan FILE --param s=1:10:100 [--csv OUT] [--json OUT] [--plot OUT.png]
    loopint bench [--suite seeds|generic|all] [--quick] [--json OUT]

Exit status: 0 converged, 1 computed but not converged, 2 bad input or usage.
"""

from __future__ import annotations

import argparse
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
    g.add_argument("--contour", choices=["none", "deform"],
                   help="physical region: 'none' (delta sequence, default) or 'deform' "
                        "(delta = 0 on a deformed contour, a second method)")
    g.add_argument("--prefactor", choices=["pysecdec", "none"],
                   help="normalization: pySecDec's (default) or the bare parametric integral")
    g.add_argument("--seed", type=int, help="random seed of the mc/qmc engines")
    g.add_argument("--device", choices=["cpu", "gpu"], help="run on this JAX platform")
    g.add_argument("--quiet", action="store_true", help="no progress display")


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

    b = sub.add_parser("bench", help="run the benchmark suite and print the table",
                       epilog="example: loopint bench --suite seeds --quick")
    b.add_argument("--suite", choices=["seeds", "generic", "all"], default="seeds")
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
    for k in ("method", "rtol", "atol", "precision", "prefactor", "seed", "contour"):
        v = getattr(a, k, None)
        if v is not None:
            kw[k] = v
    if getattr(a, "max_evals", None) is not None:
        kw["max_evals"] = int(a.max_evals)
    if getattr(a, "delta", None) is not None:
        kw["delta"] = a.delta if a.delta == "auto" else _float(a.delta, "--delta")
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
    from .problem import SpecError, load
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
            raise SpecError(f"{a.file}: kinematics: {e}") from None
        what = {"euclidean": "Euclidean: F >= 0 on the simplex, delta = 0",
                "negative": "F <= 0 on the simplex: delta = 0 with the i0 phase",
                "physical": "physical: F changes sign (or could not be proven one-signed); "
                            "delta-regulated and extrapolated"}[r.kind]
        print(f"region      {what}\n            by: {r.method}{' — ' + r.detail if r.detail else ''}")
    if p.reference:
        print(f"reference   {p.reference.value}  ({p.reference.source})")
    return EXIT_OK


class _Progress:
    """Progress lines on a terminal (rich), silent when stderr is not a terminal or --quiet."""

    def __init__(self, quiet: bool):
        self.on = not quiet and sys.stderr.isatty()
        self.console = None
        if self.on:
            from rich.console import Console
            self.console = Console(stderr=True)

    def __call__(self, ev: dict) -> None:
        if not self.on:
            return
        import numpy as np
        v = np.atleast_1d(ev["value"])[0]
        e = np.atleast_1d(ev["error"])[0]
        step = f"delta step {ev['n']:2d} (delta = {ev['delta']:.3g})" if ev["stage"] == "delta" else "delta = 0"
        self.console.print(f"[dim]{ev['seconds']:7.1f} s[/dim]  {step}  evals {ev['evaluations']:.3g}  "
                           f"{_fmt(complex(v), complex(e))}")


def _print_result(r, reference=None) -> None:
    print(f"value       {_fmt(complex(r.value), complex(r.error))}")
    print(f"status      {r.status}")
    if reference is not None:
        diff = complex(r.value) - reference.value
        print(f"reference   {reference.value.real:.12g} + {reference.value.imag:.12g} i   "
              f"(difference {abs(diff):.2g}; {reference.source})")
    delta = "0 (Euclidean)" if not r.table else (
        f"{len(r.table)} terms, {r.table[0]['delta']:.4g} .. {r.table[-1]['delta']:.4g}")
    print(f"delta       {delta}")
    print(f"method      {r.method}   prefactor {r.prefactor}   device {r.device}")
    print(f"evaluations {r.evaluations:.4g}   time {r.seconds:.3g} s")


def cmd_compute(a) -> int:
    from .compute import compute, write_json_atomic
    from .problem import load
    p = load(a.file)
    if a.resume and not a.json:
        raise _UsageError("--resume needs --json OUT (the checkpoint is OUT.partial)")
    checkpoint = f"{a.json}.partial" if a.json else None
    r = compute(p, progress=_Progress(a.quiet), checkpoint=checkpoint, resume=a.resume,
                **_overrides(a))
    _print_result(r, p.reference)
    if a.json:
        d = r.to_dict()
        d["file"] = os.path.abspath(a.file)
        write_json_atomic(a.json, d)
        if checkpoint and os.path.exists(checkpoint) and r.converged:
            os.unlink(checkpoint)
    if a.plot:
        from .plot import plot_result
        plot_result(r, a.plot, title=p.diagram.name)
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
    from .compute import compute, write_json_atomic
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
    mesh = np.meshgrid(*[g[1] for g in grids], indexing="ij")
    kin = dict(p.kinematics)
    for n, m in zip(names, mesh):
        kin[n] = m.reshape(-1)
    r = compute(p, kinematics=kin, progress=_Progress(a.quiet), **_overrides(a))
    vals = np.atleast_1d(r.value)
    errs = np.atleast_1d(r.error)
    ok = r.info.get("point_converged") or [r.converged] * len(vals)
    rows = []
    for i in range(len(vals)):
        row = {n: float(kin[n][i]) for n in names}
        row.update(re=vals[i].real, im=vals[i].imag, err_re=abs(errs[i].real),
                   err_im=abs(errs[i].imag), converged=bool(ok[i]))
        rows.append(row)
    if a.csv:
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
        _write_text_atomic(a.csv, buf.getvalue())
    if a.json:
        d = r.to_dict()
        d["points"] = rows
        d["file"] = os.path.abspath(a.file)
        write_json_atomic(a.json, d)
    if a.plot:
        from .plot import plot_scan
        plot_scan(rows, names[0], a.plot, title=p.diagram.name)
    print(f"{len(rows)} points, {sum(r_['converged'] for r_ in rows)} converged, "
          f"{r.evaluations:.3g} evaluations, {r.seconds:.3g} s, method {r.method}, device {r.device}")
    if not a.csv and not a.json:
        for row in rows[:20]:
            print("  " + "  ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}"
                                   for k, v in row.items()))
        if len(rows) > 20:
            print(f"  ... ({len(rows) - 20} more; use --csv)")
    return EXIT_OK if r.converged else EXIT_NOT_CONVERGED


def _write_text_atomic(path: str, text: str) -> None:
    import tempfile
    folder = os.path.dirname(os.path.abspath(path)) or "."
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def cmd_bench(a) -> int:
    from .bench import run_suite
    return run_suite(a.suite, quick=a.quick, json_path=a.json, only=a.only)


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
    for out in ("json", "csv", "plot"):
        path = getattr(a, out, None)
        if path and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            print(f"loopint: error: --{out} {path}: folder does not exist", file=sys.stderr)
            return EXIT_BAD_INPUT
    from .diagram import DiagramError
    from .problem import SpecError
    try:
        return {"show": cmd_show, "compute": cmd_compute, "scan": cmd_scan,
                "bench": cmd_bench}[a.command](a)
    except (SpecError, DiagramError, _UsageError) as e:
        print(f"loopint: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("loopint: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
