"""``loopint serve``: a warm process that runs the next ``loopint`` commands of this user.

A fresh ``loopint compute`` process spends most of its time before the integration: Python's
imports of JAX and SymPy, the accelerator's initialization, and tracing the kernels (JAX
traces a function in every new process, even where its compiled code comes from the
persistent cache).  ``loopint serve`` pays these once and keeps them: while it runs,
``loopint compute``, ``scan`` and ``show`` hand their command line to it over a Unix socket,
and it runs the command exactly as the client would (same code, ``loopint.cli.main``, in the
client's working folder), streaming its standard output and error back; the client exits with
the command's exit code.  The client imports neither JAX nor SymPy.

The client runs the command itself when no server answers, when the server runs other code
(a changed loopint, another Python: the server then exits), or when the environment that
selects devices and caches differs (``JAX_PLATFORMS``, ``CUDA_VISIBLE_DEVICES``, ``XLA_FLAGS``,
``LOOPINT_*``, ... :data:`ENVIRONMENT`), and with ``--no-server``.  The server runs one command
at a time (a second client waits), exits after ``--idle`` seconds without a request, and on
``loopint serve --stop``.  Its socket lies in the cache folder (:func:`socket_path`), readable
by its owner only; ``LOOPINT_SERVER`` names another path, and ``LOOPINT_SERVER=""`` turns the
server off.

Protocol: one JSON line from the client (``{"argv", "cwd", "code", "environment"}``, or
``{"stop": true}``), then JSON lines from the server: ``{"accepted": true}`` when it takes the
command (a client that waits longer says that the server is busy), ``{"out": text}`` and
``{"err": text}`` as the command writes, and a last ``{"exit": code}`` (or
``{"refused": reason}``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import pathlib
import select
import socket
import sys
import time
import traceback

DEFAULT_IDLE = 900.0
"""Seconds without a request after which the server exits."""

FORWARDED = ("compute", "scan", "show")
"""The commands a client hands to a running server."""

ENVIRONMENT = ("JAX_PLATFORMS", "JAX_PLATFORM_NAME", "CUDA_VISIBLE_DEVICES", "XLA_FLAGS",
               "XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_MEM_FRACTION",
               "JAX_ENABLE_X64", "JAX_COMPILATION_CACHE_DIR", "LOOPINT_CACHE_DIR",
               "XDG_CACHE_HOME", "HOME")
"""Variables whose values client and server must share (devices, precision, caches), and
every ``LOOPINT_*`` one but ``LOOPINT_SERVER`` and ``LOOPINT_SERVING``."""

SERVING = "LOOPINT_SERVING"
"""Set in the server's own process, so that its commands never forward themselves."""

CONNECT_TIMEOUT = 2.0
BUSY_NOTICE = 2.0
"""Seconds a client waits for the server to take its command before saying that it waits."""
_MAX_SOCKET_PATH = 100          # sun_path holds 104-108 bytes, by platform


def socket_path() -> pathlib.Path | None:
    """The server's socket: ``$LOOPINT_SERVER`` if set (empty: no server), else
    ``server-<host>.sock`` in the cache folder (:func:`loopint.cache.cache_dir`), else in
    a folder of this user under the temporary folder when that path is too long for a
    socket; None when disk caches are off."""
    env = os.environ.get("LOOPINT_SERVER")
    if env is not None:
        return pathlib.Path(env) if env else None
    from .cache import cache_dir
    root = cache_dir()
    if root is None:
        return None
    name = f"server-{socket.gethostname()}.sock"
    path = root / name
    if len(str(path)) > _MAX_SOCKET_PATH:
        digest = hashlib.sha256(str(root).encode()).hexdigest()[:12]
        path = pathlib.Path("/tmp") / f"loopint-{os.getuid()}" / f"{digest}-{name}"
    return path


def code_fingerprint() -> str:
    """The interpreter and every source file of the package (path, size, modification
    time): a server whose code differs from its client's must not answer it."""
    root = pathlib.Path(__file__).resolve().parent
    h = hashlib.sha256(sys.executable.encode())
    for p in sorted(root.rglob("*.py")):
        st = p.stat()
        h.update(f"{p.relative_to(root)}:{st.st_size}:{st.st_mtime_ns};".encode())
    return h.hexdigest()[:20]


def environment() -> dict:
    """The variables of :data:`ENVIRONMENT` and ``LOOPINT_*`` that are set."""
    names = set(ENVIRONMENT) | {k for k in os.environ if k.startswith("LOOPINT_")}
    names -= {"LOOPINT_SERVER", SERVING}
    return {k: os.environ[k] for k in sorted(names) if k in os.environ}


# ---------------------------------------------------------------------------------------
# The client


def _connect(path: pathlib.Path) -> socket.socket | None:
    if not path.exists():
        return None
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(CONNECT_TIMEOUT)
    try:
        s.connect(str(path))
    except OSError:
        s.close()
        return None
    s.settimeout(None)
    return s


def _send(conn: socket.socket, message: dict) -> None:
    conn.sendall((json.dumps(message) + "\n").encode())


def forward(argv: list[str]) -> int | None:
    """Run ``loopint ARGV`` in the server and return its exit code, its output written to
    this process's stdout and stderr; None when no server runs this code in this
    environment (the caller then runs the command itself)."""
    path = socket_path()
    conn = _connect(path) if path is not None else None
    if conn is None:
        return None
    with conn:
        try:
            _send(conn, {"argv": list(argv), "cwd": os.getcwd(), "code": code_fingerprint(),
                         "environment": environment()})
            if not select.select([conn], [], [], BUSY_NOTICE)[0]:
                print("loopint: the server is busy with another command; waiting "
                      "(--no-server computes here)", file=sys.stderr, flush=True)
            for line in conn.makefile("r", encoding="utf-8"):
                message = json.loads(line)
                if "out" in message:
                    sys.stdout.write(message["out"])
                    sys.stdout.flush()
                elif "err" in message:
                    sys.stderr.write(message["err"])
                    sys.stderr.flush()
                elif "exit" in message:
                    return int(message["exit"])
                elif "refused" in message:
                    return None
        except (OSError, ValueError):
            pass
        except KeyboardInterrupt:          # the server abandons the command at its next output
            print("loopint: interrupted", file=sys.stderr)
            return 130
    # the connection broke before an exit code: whatever the server wrote is on the screen,
    # and the outputs are written atomically, so the command is run here from the start
    print("loopint: the server stopped during the command; computing here", file=sys.stderr)
    return None


def stop() -> bool:
    """Ask the server to exit; whether one answered."""
    path = socket_path()
    conn = _connect(path) if path is not None else None
    if conn is None:
        return False
    with conn:
        _send(conn, {"stop": True})
        conn.makefile("r").readline()
    return True


# ---------------------------------------------------------------------------------------
# The server


class ClientGone(Exception):
    """The client closed its connection (interrupted): the command is abandoned at its next
    output."""


class _Stream:
    """A text stream that sends what is written to the client as ``{key: text}`` lines; not
    a terminal, so progress is printed as plain lines."""

    def __init__(self, conn: socket.socket, key: str):
        self.conn, self.key = conn, key

    def write(self, text: str) -> int:
        if text:
            try:
                _send(self.conn, {self.key: text})
            except OSError:
                raise ClientGone() from None
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def serve(path: pathlib.Path, idle: float = DEFAULT_IDLE) -> int:
    """Listen on ``path`` and run the commands of clients until ``idle`` seconds pass
    without one, or a client asks the server to stop.  Returns an exit code."""
    os.environ[SERVING] = "1"
    if _connect(path) is not None:
        print(f"loopint: error: a server already answers on {path}", file=sys.stderr)
        return 2
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()                     # a socket left behind by a server that died
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_mask = os.umask(0o177)            # the socket is its owner's alone
    try:
        listener.bind(str(path))
    finally:
        os.umask(old_mask)
    listener.listen(16)
    listener.settimeout(idle)
    code, env = code_fingerprint(), environment()
    t0 = time.perf_counter()
    from . import cli, compute  # noqa: F401  (the imports a command would pay)
    import jax
    devices = jax.devices()
    print(f"loopint: serving on {path} (pid {os.getpid()}, {devices[0].platform}, ready in "
          f"{time.perf_counter() - t0:.1f} s; exits after {idle:g} s idle or on "
          "'loopint serve --stop')", file=sys.stderr, flush=True)
    try:
        while True:
            try:
                conn, _ = listener.accept()
            except socket.timeout:
                print("loopint: server idle, exiting", file=sys.stderr)
                return 0
            with conn:
                if _handle(conn, cli, code, env) == "stop":
                    return 0
            _release_if_many_mappings(jax)
    except KeyboardInterrupt:
        return 130
    finally:
        listener.close()
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _handle(conn: socket.socket, cli, code: str, env: dict) -> str | None:
    """Serve one connection; ``"stop"`` when the server is to exit."""
    try:
        request = json.loads(conn.makefile("r", encoding="utf-8").readline() or "{}")
    except ValueError:
        return None
    if request.get("stop"):
        with contextlib.suppress(OSError):
            _send(conn, {"exit": 0})
        print("loopint: stopped by a client", file=sys.stderr)
        return "stop"
    if request.get("code") != code:
        with contextlib.suppress(OSError):
            _send(conn, {"refused": "the client runs other code"})
        print("loopint: a client runs other code (loopint changed): exiting", file=sys.stderr)
        return "stop"
    if request.get("environment") != env:
        with contextlib.suppress(OSError):
            _send(conn, {"refused": "the client's environment differs"})
        return None
    argv = [str(a) for a in request.get("argv", [])]
    with contextlib.suppress(OSError):
        _send(conn, {"accepted": True})
    print(f"loopint: serving: loopint {' '.join(argv)}", file=sys.stderr, flush=True)
    exit_code = _run(conn, cli, argv, request.get("cwd") or os.getcwd())
    with contextlib.suppress(OSError):
        _send(conn, {"exit": exit_code})
    return None


MAX_MAPPINGS = 30000
"""Memory mappings of the process above which the server drops JAX's in-memory kernels
between commands: every executable XLA:CPU holds keeps a few mappings, and a process that
reaches the kernel's limit (``vm.max_map_count``, 65530 by default) fails loading the next one.
The persistent compilation cache keeps the reloads cheap."""


def _release_if_many_mappings(jax) -> None:
    try:
        with open("/proc/self/maps") as fh:
            mappings = sum(1 for _ in fh)
    except OSError:                        # not Linux
        return
    if mappings > MAX_MAPPINGS:
        jax.clear_caches()


def _run(conn: socket.socket, cli, argv: list[str], cwd: str) -> int:
    """``loopint.cli.main(argv)`` in ``cwd``, its output (print, logging, warnings) sent to
    the client."""
    out, err = _Stream(conn, "out"), _Stream(conn, "err")
    handler = logging.StreamHandler(err)
    handler.setFormatter(logging.Formatter("loopint: %(message)s"))
    root = logging.getLogger()
    here = os.getcwd()
    root.addHandler(handler)
    try:
        os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                return int(cli.main(argv) or 0)
            except SystemExit as e:
                return 0 if e.code is None else e.code if isinstance(e.code, int) else 1
            except ClientGone:
                print("loopint: client gone, command abandoned", file=sys.__stderr__)
                return 130
            except Exception:                  # a defect: reported, and the server goes on
                with contextlib.suppress(ClientGone):
                    err.write(traceback.format_exc())
                return 1
    except OSError as e:                       # the client's folder is gone
        with contextlib.suppress(ClientGone):
            err.write(f"loopint: error: {cwd}: {e.strerror}\n")
        return 2
    finally:
        root.removeHandler(handler)
        os.chdir(here)
