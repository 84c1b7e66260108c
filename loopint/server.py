"""``loopint serve``: a warm process that runs the next ``loopint`` commands of this user.

A fresh ``loopint compute`` process spends most of its time before the integration: Python's
imports of JAX and SymPy, the accelerator's initialization, and tracing the kernels (JAX
traces a function in every new process, even where its compiled code comes from the
persistent cache).  ``loopint serve`` pays these once and keeps them: while it runs,
``loopint compute``, ``scan`` and ``show`` hand their command line to it over a Unix socket,
and it runs the command as the client would (the same ``loopint.cli.main``, in the client's
working folder and with its umask), streaming its standard output and error back; the client
exits with the command's exit code.  The client imports neither JAX nor SymPy.

A server belongs to one code and one environment: its socket's name carries a digest of
loopint's source files, the versions of the libraries it computes with, the interpreter, and
the variables that choose devices, precision, threads and caches (:func:`environment`).  A
client whose code or environment differs looks for another socket, finds none, and runs the
command itself, at once; so does a client with ``--no-server`` or when no server runs.  A
server whose own source files change exits within :data:`TICK` seconds.  The server runs one
command at a time (a second client waits, and says so), stops a command whose client went away
(Ctrl-C), exits after ``--idle`` seconds without a request, and on ``loopint serve --stop``.
The socket lies in the cache folder (:func:`socket_path`), or in a folder of the user's own
under ``/tmp`` when that path is too long for a socket; the client talks only to a socket owned
by its user, and the server only to a peer of its user.  ``LOOPINT_SERVER`` names the socket
instead, and ``LOOPINT_SERVER=""`` turns the server off.

Protocol: one JSON line from the client (``{"argv", "cwd", "umask", "code", "environment"}``,
``{"ping": true}`` or ``{"stop": true}``), then JSON lines from the server: ``{"accepted":
true}`` when it takes the command, ``{"out": text}`` and ``{"err": text}`` as the command
writes, and a last ``{"exit": code}`` (or ``{"refused": reason}``, ``{"pong": true}``).
"""

from __future__ import annotations

import _thread
import contextlib
import hashlib
import importlib.util
import json
import logging
import math
import os
import pathlib
import select
import socket
import stat
import struct
import sys
import threading
import time
import traceback

DEFAULT_IDLE = 900.0
"""Seconds without a request after which the server exits."""

FORWARDED = ("compute", "scan", "show")
"""The commands a client hands to a running server."""

ENVIRONMENT = ("CUDA_VISIBLE_DEVICES", "HOME", "XDG_CACHE_HOME", "PYTHONPATH")
ENVIRONMENT_PREFIXES = ("JAX_", "XLA_", "TF_", "CUDA_", "NVIDIA_", "TPU_", "OMP_", "MKL_",
                        "OPENBLAS_", "LOOPINT_")
"""The variables that client and server must share (devices, precision, threads, caches):
these and every one with these prefixes, but ``LOOPINT_SERVER`` and ``LOOPINT_SERVING``."""

LIBRARIES = ("jax", "jaxlib", "numpy", "scipy", "sympy", "mpmath")
"""Libraries whose installed version is part of a server's code (:func:`code_fingerprint`)."""

SERVING = "LOOPINT_SERVING"
"""Set in the server's own process, so that its commands never forward themselves."""

CONNECT_TIMEOUT = 2.0
REQUEST_TIMEOUT = 10.0
"""Seconds the server waits for a connected client's request line."""
BUSY_NOTICE = 2.0
"""Seconds a client waits for the server to take its command before saying that it waits."""
TICK = 10.0
"""Seconds between the server's checks of its own source files while it waits."""
_MAX_SOCKET_PATH = 100          # sun_path holds 104-108 bytes, by platform


def code_fingerprint(root: pathlib.Path | None = None) -> str:
    """A digest of the interpreter, of the content of every source file of the package (or
    of the folder ``root``) and of the installed :data:`LIBRARIES` (their ``__init__.py``:
    size and modification time, found without importing them)."""
    root = root or pathlib.Path(__file__).resolve().parent
    h = hashlib.sha256(sys.executable.encode())
    for p in sorted(root.rglob("*.py")):
        h.update(str(p.relative_to(root)).encode())
        h.update(p.read_bytes())
    for name in LIBRARIES:
        with contextlib.suppress(ImportError, ValueError, OSError, AttributeError):
            origin = importlib.util.find_spec(name).origin
            st = os.stat(origin)
            h.update(f"{name}:{origin}:{st.st_size}:{st.st_mtime_ns};".encode())
    return h.hexdigest()[:20]


def environment() -> dict:
    """The variables of :data:`ENVIRONMENT` and :data:`ENVIRONMENT_PREFIXES` that are set."""
    names = {k for k in os.environ
             if k in ENVIRONMENT or k.startswith(ENVIRONMENT_PREFIXES)}
    names -= {"LOOPINT_SERVER", SERVING}
    return {k: os.environ[k] for k in sorted(names)}


def _private_folder(folder: pathlib.Path, create: bool) -> bool:
    """Whether ``folder`` is a real folder of this user that no one else may write (made
    with mode 0700 when ``create``)."""
    if create:
        with contextlib.suppress(FileExistsError):
            folder.mkdir(parents=True, mode=0o700)
    try:
        st = os.lstat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022


def socket_path(code: str | None = None, env: dict | None = None) -> pathlib.Path | None:
    """The socket of the server for this code and environment: ``$LOOPINT_SERVER`` if set
    (empty: no server), else ``servers/server-<host>-<digest>.sock`` in the cache folder
    (:func:`loopint.cache.cache_dir`), or in ``/tmp/loopint-<uid>`` when that path is too long
    for a socket; None when disk caches are off.  The folder is the user's alone (mode 0700,
    :func:`serve` makes it so)."""
    explicit = os.environ.get("LOOPINT_SERVER")
    if explicit is not None:
        return pathlib.Path(explicit) if explicit else None
    from .cache import cache_dir
    root = cache_dir()
    if root is None:
        return None
    key = json.dumps([code or code_fingerprint(), env if env is not None else environment()])
    name = f"server-{socket.gethostname()}-{hashlib.sha256(key.encode()).hexdigest()[:12]}.sock"
    path = root / "servers" / name
    if len(str(path)) > _MAX_SOCKET_PATH:
        digest = hashlib.sha256(str(root).encode()).hexdigest()[:8]
        path = pathlib.Path("/tmp") / f"loopint-{os.getuid()}" / f"{digest}-{name}"
    return path


def _any_socket() -> bool:
    """Whether a server's socket may exist at all (any server of this user's cache folder, of
    whatever code and environment): a client without one skips :func:`code_fingerprint`,
    which reads every source file."""
    explicit = os.environ.get("LOOPINT_SERVER")
    if explicit is not None:
        return bool(explicit) and os.path.exists(explicit)
    from .cache import cache_dir
    root = cache_dir()
    if root is None:
        return False
    digest = hashlib.sha256(str(root).encode()).hexdigest()[:8]
    folders = ((root / "servers", "server-*.sock"),
               (pathlib.Path("/tmp") / f"loopint-{os.getuid()}", f"{digest}-server-*.sock"))
    return any(next(folder.glob(pattern), None) is not None for folder, pattern in folders)


def _peer_uid(conn: socket.socket) -> int | None:
    """The user id of the process at the other end (Linux), else None."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    creds = conn.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1]


# ---------------------------------------------------------------------------------------
# The client


def _connect(path: pathlib.Path) -> socket.socket | None:
    """A connection to the server at ``path``: only to a socket of this user, in a folder no
    one else may write, with a peer of this user."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not (stat.S_ISSOCK(st.st_mode) and st.st_uid == os.getuid()
            and _private_folder(path.parent, create=False)):
        return None
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(CONNECT_TIMEOUT)
    try:
        s.connect(str(path))
        if _peer_uid(s) not in (None, os.getuid()):
            raise ConnectionRefusedError
    except OSError:
        s.close()
        return None
    s.settimeout(None)
    return s


def _send(conn: socket.socket, message: dict) -> None:
    conn.sendall((json.dumps(message) + "\n").encode())


def _ask(path: pathlib.Path, message: dict) -> dict | None:
    """Send ``message`` and return the first reply, None without a server."""
    conn = _connect(path)
    if conn is None:
        return None
    with conn:
        try:
            _send(conn, message)
            conn.settimeout(REQUEST_TIMEOUT)
            line = conn.makefile("r", encoding="utf-8").readline()
            return json.loads(line) if line else None
        except (OSError, ValueError):
            return None


def forward(argv: list[str]) -> int | None:
    """Run ``loopint ARGV`` in the server and return its exit code, its output written to
    this process's stdout and stderr; None when no server runs this code in this
    environment (the caller then runs the command itself)."""
    try:
        cwd = os.getcwd()
    except OSError:                      # a deleted folder: the command itself says so
        return None
    if not _any_socket():
        return None
    umask = os.umask(0o022)
    os.umask(umask)
    code, env = code_fingerprint(), environment()
    path = socket_path(code, env)
    conn = _connect(path) if path is not None else None
    if conn is None:
        return None
    with conn:
        try:
            _send(conn, {"argv": list(argv), "cwd": cwd, "umask": umask, "code": code,
                         "environment": env})
            if not select.select([conn], [], [], BUSY_NOTICE)[0]:
                print("loopint: the server is busy with another command; waiting "
                      "(--no-server computes here)", file=sys.stderr, flush=True)
            reader = conn.makefile("r", encoding="utf-8")
        except OSError:
            return None
        try:
            while True:
                try:
                    line = reader.readline()
                    message = json.loads(line) if line else None
                except (OSError, ValueError):
                    message = None
                if message is None:
                    break
                if "out" in message or "err" in message:
                    stream = sys.stdout if "out" in message else sys.stderr
                    try:
                        stream.write(message.get("out", message.get("err")))
                        stream.flush()
                    except BrokenPipeError:           # e.g. '| head': the reader is done
                        with contextlib.suppress(OSError):
                            os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
                        return 1
                elif "exit" in message:
                    return int(message["exit"])
                elif "refused" in message:
                    return None
        except KeyboardInterrupt:          # the server stops the command when we are gone
            print("loopint: interrupted", file=sys.stderr)
            return 130
    # the connection broke before an exit code: whatever the server wrote is on the screen,
    # and the outputs are written atomically, so the command is run here from the start
    print("loopint: the server stopped during the command; computing here", file=sys.stderr)
    return None


def stop() -> bool:
    """Ask the server of this code and environment to exit; whether one answered."""
    path = socket_path()
    return path is not None and _ask(path, {"stop": True}) is not None


# ---------------------------------------------------------------------------------------
# The server


class ClientGone(Exception):
    """The client closed its connection (interrupted): the command is abandoned."""


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


def _gone(conn: socket.socket) -> bool:
    """Whether the client closed its end (a read would return end of file)."""
    try:
        return conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def serve(path: pathlib.Path, idle: float = DEFAULT_IDLE) -> int:
    """Listen on ``path`` and run the commands of clients until ``idle`` seconds pass
    without one (``math.inf``: never), the package's source files change, or a client asks
    the server to stop.  Returns an exit code."""
    os.environ[SERVING] = "1"
    if not _private_folder(path.parent, create=True):
        print(f"loopint: error: {path.parent} is not a folder of this user that only it may "
              "write; give LOOPINT_SERVER another path", file=sys.stderr)
        return 2
    if _ask(path, {"ping": True}) is not None:
        print(f"loopint: error: a server already answers on {path}", file=sys.stderr)
        return 2
    with contextlib.suppress(FileNotFoundError):
        path.unlink()                     # a socket left behind by a server that died
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_mask = os.umask(0o177)            # the socket is its owner's alone
    try:
        listener.bind(str(path))
    finally:
        os.umask(old_mask)
    inode = os.stat(path).st_ino
    listener.listen(16)
    listener.settimeout(min(TICK, idle))
    code, env = code_fingerprint(), environment()
    t0 = time.perf_counter()
    from . import cli, compute, timing  # noqa: F401  (the imports a command would pay)
    import jax
    devices = jax.devices()
    timing.IMPORT_SECONDS = 0.0           # a served command imports nothing
    print(f"loopint: serving on {path} (pid {os.getpid()}, {devices[0].platform}, ready in "
          f"{time.perf_counter() - t0:.1f} s; exits after {idle:g} s idle or on "
          "'loopint serve --stop')", file=sys.stderr, flush=True)
    last = time.monotonic()
    try:
        while True:
            try:
                conn, _ = listener.accept()
            except socket.timeout:
                if code_fingerprint() != code:
                    print("loopint: loopint's code changed: exiting", file=sys.stderr)
                    return 0
                if time.monotonic() - last >= idle:
                    print("loopint: server idle, exiting", file=sys.stderr)
                    return 0
                continue
            with conn:
                if _handle(conn, cli, code, env) == "stop":
                    return 0
            last = time.monotonic()
            _release_if_many_mappings(jax)
    except KeyboardInterrupt:
        return 130
    finally:
        listener.close()
        with contextlib.suppress(OSError):
            if os.stat(path).st_ino == inode:         # not a successor's socket
                path.unlink()


def _handle(conn: socket.socket, cli, code: str, env: dict) -> str | None:
    """Serve one connection; ``"stop"`` when the server is to exit."""
    if _peer_uid(conn) not in (None, os.getuid()):
        return None
    try:
        conn.settimeout(REQUEST_TIMEOUT)
        request = json.loads(conn.makefile("r", encoding="utf-8").readline())
        conn.settimeout(None)
    except (OSError, ValueError):
        return None
    if not isinstance(request, dict):
        return None
    if request.get("ping"):
        with contextlib.suppress(OSError):
            _send(conn, {"pong": True})
        return None
    if request.get("stop"):
        with contextlib.suppress(OSError):
            _send(conn, {"exit": 0})
        print("loopint: stopped by a client", file=sys.stderr)
        return "stop"
    if not isinstance(request.get("argv"), list):
        return None
    if request.get("code") != code or request.get("environment") != env:
        with contextlib.suppress(OSError):
            _send(conn, {"refused": "the client runs other code or has another environment"})
        return "stop" if code_fingerprint() != code else None
    if _gone(conn):                       # interrupted while it waited for this server
        print("loopint: a client left before its command started", file=sys.stderr)
        return None
    argv = [str(a) for a in request["argv"]]
    with contextlib.suppress(OSError):
        _send(conn, {"accepted": True})
    print(f"loopint: serving: loopint {' '.join(argv)}", file=sys.stderr, flush=True)
    exit_code = _run(conn, cli, argv, str(request.get("cwd") or os.getcwd()),
                     request.get("umask"))
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


class _Watch:
    """While a command runs, a thread that interrupts it (``KeyboardInterrupt`` in the main
    thread, as Ctrl-C would) when its client closes the connection."""

    def __init__(self, conn: socket.socket):
        self.conn, self.fired = conn, False
        self.done = threading.Event()
        self.lock = threading.Lock()
        self.wake_r, self.wake_w = os.pipe()          # ends the thread's wait at once
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self.done.is_set():
            ready = select.select([self.conn, self.wake_r], [], [])[0]
            if self.wake_r in ready or self.done.is_set():
                return
            if not _gone(self.conn):       # (a client sends nothing after its request)
                time.sleep(0.5)
                continue
            with self.lock:
                if not self.done.is_set():
                    self.fired = True
                    _thread.interrupt_main()
            return

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        with self.lock:
            self.done.set()
        os.write(self.wake_w, b"x")
        self.thread.join()
        os.close(self.wake_r)
        os.close(self.wake_w)
        if self.fired:                     # an interrupt still pending is absorbed here
            with contextlib.suppress(KeyboardInterrupt):
                for _ in range(1000):
                    time.sleep(0)


def _run(conn: socket.socket, cli, argv: list[str], cwd: str, umask) -> int:
    """``loopint.cli.main(argv)`` in ``cwd`` with ``umask``, its output (print, logging,
    warnings) sent to the client; stopped when the client goes away."""
    out, err = _Stream(conn, "out"), _Stream(conn, "err")
    handler = logging.StreamHandler(err)
    handler.setFormatter(logging.Formatter("loopint: %(message)s"))
    root = logging.getLogger()
    here = os.getcwd()
    mask = os.umask(int(umask)) if isinstance(umask, int) and 0 <= umask <= 0o777 else None
    root.addHandler(handler)
    try:
        os.chdir(cwd)
        with _Watch(conn) as watch, contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(err):
            try:
                return int(cli.main(argv) or 0)
            except SystemExit as e:
                if isinstance(e.code, str):
                    with contextlib.suppress(ClientGone):
                        err.write(e.code + "\n")
                return 0 if e.code is None else e.code if isinstance(e.code, int) else 1
            except (ClientGone, KeyboardInterrupt):
                if not watch.fired and not isinstance(sys.exc_info()[1], ClientGone):
                    raise                  # the server's own Ctrl-C
                print("loopint: client gone, command abandoned", file=sys.__stderr__)
                return 130
            except BaseException:          # a defect: reported, and the server goes on
                with contextlib.suppress(ClientGone):
                    err.write(traceback.format_exc())
                return 1
    except OSError as e:                   # the client's folder is gone
        with contextlib.suppress(ClientGone):
            err.write(f"loopint: error: {cwd}: {e.strerror}\n")
        return 2
    finally:
        root.removeHandler(handler)
        os.chdir(here)
        if mask is not None:
            os.umask(mask)


def check_idle(idle: float) -> str | None:
    """The problem with an ``--idle`` value, None when it is a number of seconds > 0 (or
    infinite: never)."""
    if math.isnan(idle) or not idle > 0:
        return f"--idle must be > 0 seconds, got {idle}"
    return None
