"""Output files written atomically: a temporary file in the target's folder, then a rename.

A reader (or an interrupted run) never sees a half-written JSON, CSV or PNG.  The temporary
file from :func:`tempfile.mkstemp` has mode 0600; before the rename it gets the mode that
``open(path, "w")`` would have given, ``0o666 & ~umask``, so results stay readable by whoever
could read a file the user writes by hand.  Imports nothing of ``loopint``.
"""

from __future__ import annotations

import os
import tempfile
from typing import Callable


def default_mode() -> int:
    """``0o666 & ~umask``: the mode of a new file created with ``open(path, "w")``."""
    umask = os.umask(0o022)      # reading the umask means setting it: set it back at once
    os.umask(umask)
    return 0o666 & ~umask


def write_atomic(path: str, write: Callable[[str], None], suffix: str = "") -> None:
    """Call ``write(tmp)`` on a temporary path beside ``path``, then rename it to ``path``.

    The temporary file is removed if ``write`` fails (or is interrupted); ``path`` then keeps
    its old content, if it had one.
    """
    folder = os.path.dirname(os.path.abspath(path)) or "."
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=suffix, dir=folder)
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, default_mode())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_text_atomic(path: str, text: str, fsync: bool = False) -> None:
    """Write ``text`` to ``path`` atomically (:func:`write_atomic`); ``fsync`` before the
    rename where the file must survive a crash (checkpoints)."""
    def write(tmp: str) -> None:
        with open(tmp, "w") as fh:
            fh.write(text)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
    write_atomic(path, write)
