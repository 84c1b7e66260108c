"""``loopint serve``: commands handed to a warm process give what they give when run alone."""

import json
import os
import pathlib
import socket
import subprocess
import sys
import time

import pytest

from loopint import server

ROOT = pathlib.Path(__file__).resolve().parents[1]
FILE = str(ROOT / "diagrams" / "triangle_below_threshold.toml")


def _env(tmp_path, **extra):
    env = dict(os.environ, LOOPINT_CACHE_DIR=str(tmp_path / "cache"),
               LOOPINT_SERVER=str(tmp_path / "s.sock"), JAX_PLATFORMS="cpu", **extra)
    env.pop(server.SERVING, None)
    return env


def _loopint(env, *args, cwd=None):
    return subprocess.run([sys.executable, "-m", "loopint.cli", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture
def running(tmp_path):
    """A server in a subprocess; yields (env, process) and stops it."""
    env = _env(tmp_path)
    log = open(tmp_path / "server.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "loopint.cli", "serve", "--idle", "300"],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    path = tmp_path / "s.sock"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and "serving on" not in (tmp_path / "server.log").read_text():
        assert proc.poll() is None, (tmp_path / "server.log").read_text()
        time.sleep(0.2)
    assert path.exists()
    yield env, proc
    if proc.poll() is None:
        _loopint(env, "serve", "--stop")
        proc.wait(timeout=60)
    log.close()


def _served(tmp_path) -> str:
    return (tmp_path / "server.log").read_text()


def test_a_served_command_gives_what_it_gives_alone(running, tmp_path):
    env, proc = running
    alone = _loopint(env, "compute", FILE, "--rtol", "1e-8", "--json", "alone.json",
                     "--no-server", cwd=tmp_path)
    served = _loopint(env, "compute", FILE, "--rtol", "1e-8", "--json", "served.json",
                      cwd=tmp_path)
    assert alone.returncode == served.returncode == 0, served.stderr
    assert "serving: loopint compute" in _served(tmp_path)
    assert "served.json" in _served(tmp_path) and "alone.json" not in _served(tmp_path)
    a = json.loads((tmp_path / "alone.json").read_text())
    s = json.loads((tmp_path / "served.json").read_text())     # relative to the client's cwd
    for key in ("value", "error", "status", "converged", "evaluations"):
        assert s[key] == a[key], key
    # the printed table is the same but for the timing line
    strip = lambda text: [ln for ln in text.splitlines() if not ln.startswith("evaluations")]  # noqa: E731
    assert strip(served.stdout) == strip(alone.stdout)

    bad = _loopint(env, "compute", str(tmp_path / "missing.toml"), cwd=tmp_path)
    bad_alone = _loopint(env, "compute", str(tmp_path / "missing.toml"), "--no-server")
    assert bad.returncode == bad_alone.returncode == 2
    assert bad.stderr == bad_alone.stderr and "cannot read file" in bad.stderr

    shown = _loopint(env, "show", FILE)
    shown_alone = _loopint(env, "show", FILE, "--no-server")
    assert shown.returncode == shown_alone.returncode == 0
    assert shown.stdout == shown_alone.stdout and shown.stdout.startswith("diagram ")
    assert "serving: loopint show" in _served(tmp_path)


def test_a_client_in_another_environment_computes_alone(running, tmp_path):
    env, proc = running
    other = dict(env, LOOPINT_SOMETHING="1")
    r = _loopint(other, "show", FILE)
    assert r.returncode == 0
    assert "serving: loopint show" not in _served(tmp_path)
    assert proc.poll() is None                       # the server goes on for its own clients


def _request(env, message):
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(env["LOOPINT_SERVER"])
    if message is not None:
        conn.sendall((json.dumps(message) + "\n").encode())
        reply = conn.makefile("r").readline()
    else:
        reply = None
    conn.close()
    return json.loads(reply) if reply else None


def test_a_server_refuses_other_code_and_survives_bad_connections(running, tmp_path):
    env, proc = running
    reply = _request(env, {"argv": ["show", FILE], "cwd": str(tmp_path), "code": "other",
                           "environment": {}})
    assert "refused" in reply
    _request(env, None)                          # connected, closed, nothing sent
    _request(env, [])                            # not a request
    assert _request(env, {"ping": True}) == {"pong": True}
    again = _loopint(env, "serve", "--idle", "60")          # a second server
    assert again.returncode == 2 and "already answers" in again.stderr
    assert proc.poll() is None
    r = _loopint(env, "show", FILE)
    assert r.returncode == 0 and _served(tmp_path).count("serving: loopint show") == 1


def test_a_client_that_goes_away_stops_its_command(running, tmp_path):
    import signal
    env, proc = running
    args = [sys.executable, "-m", "loopint.cli", "scan", str(ROOT / "diagrams" /
            "triangle_above_threshold.toml"), "--param", "s=4.5:60:3000", "--rtol", "1e-9",
            "--quiet", "--csv", "out.csv"]
    client = subprocess.Popen(args, env=env, cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while "serving: loopint scan" not in _served(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.0)
    client.send_signal(signal.SIGINT)
    assert client.wait(timeout=60) == 130
    deadline = time.monotonic() + 60
    while "client gone" not in _served(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "client gone" in _served(tmp_path)
    assert not (tmp_path / "out.csv").exists()
    r = _loopint(env, "show", FILE)              # the server goes on
    assert r.returncode == 0 and proc.poll() is None


def test_outputs_take_the_clients_umask(running, tmp_path):
    env, _ = running
    r = subprocess.run(f"umask 077 && {sys.executable} -m loopint.cli compute {FILE} "
                       "--json private.json --quiet", shell=True, env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "private.json" in _served(tmp_path)
    assert (tmp_path / "private.json").stat().st_mode & 0o777 == 0o600


def test_the_code_fingerprint_follows_content_and_the_idle_setting(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    before = server.code_fingerprint(tmp_path)
    st = (tmp_path / "a.py").stat()
    (tmp_path / "a.py").write_text("x = 2\n")                 # same size
    os.utime(tmp_path / "a.py", ns=(st.st_atime_ns, st.st_mtime_ns))
    assert server.code_fingerprint(tmp_path) != before
    assert server.check_idle(float("inf")) is None and server.check_idle(1.5) is None
    assert "--idle" in server.check_idle(0.0) and "--idle" in server.check_idle(float("nan"))


def test_stop_and_idle_exit(tmp_path):
    env = _env(tmp_path)
    r = _loopint(env, "serve", "--stop")
    assert r.returncode == 1 and "no server" in r.stderr
    t0 = time.monotonic()
    r = _loopint(env, "serve", "--idle", "1")
    assert r.returncode == 0 and "idle, exiting" in r.stderr
    assert time.monotonic() - t0 < 120
    assert not (tmp_path / "s.sock").exists()
    r = _loopint(env, "serve", "--idle", "0")
    assert r.returncode == 2 and "--idle must be > 0" in r.stderr


def test_socket_path(monkeypatch, tmp_path):
    monkeypatch.setenv("LOOPINT_SERVER", "")
    assert server.socket_path() is None
    monkeypatch.delenv("LOOPINT_SERVER")
    monkeypatch.setenv("LOOPINT_CACHE_DIR", str(tmp_path))
    assert server.socket_path().parent == tmp_path / "servers"
    other = server.socket_path(env={"JAX_PLATFORMS": "cpu"})
    assert other != server.socket_path() and other.parent == tmp_path / "servers"
    deep = tmp_path / ("d" * 120)
    monkeypatch.setenv("LOOPINT_CACHE_DIR", str(deep))
    path = server.socket_path()
    assert len(str(path)) <= 100 and path.name.endswith(".sock")
    monkeypatch.setenv("LOOPINT_CACHE_DIR", "")
    assert server.socket_path() is None


def _fake_server(path, reply):
    """A server in a thread that takes one request and answers with ``reply(conn)``."""
    import threading
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(1)

    def serve():
        conn, _ = listener.accept()
        with conn:
            conn.makefile("r").readline()
            reply(conn)
        listener.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


def test_a_client_says_when_the_server_is_busy_and_when_it_breaks_off(monkeypatch, tmp_path,
                                                                      capsys):
    path = tmp_path / "f.sock"
    monkeypatch.setenv("LOOPINT_SERVER", str(path))
    monkeypatch.setattr(server, "BUSY_NOTICE", 0.2)

    def late(conn):
        time.sleep(1.0)
        conn.sendall(b'{"accepted": true}\n{"out": "a value\\n"}\n{"exit": 1}\n')

    thread = _fake_server(path, late)
    assert server.forward(["compute", "x.toml"]) == 1
    thread.join()
    out, err = capsys.readouterr()
    assert out == "a value\n" and "server is busy" in err

    path.unlink()
    thread = _fake_server(path, lambda conn: conn.sendall(b'{"accepted": true}\n'))
    assert server.forward(["compute", "x.toml"]) is None      # then computed here
    thread.join()
    assert "server stopped during the command" in capsys.readouterr().err
