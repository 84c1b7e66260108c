"""The README's Python examples run as written.

Every ```python fenced block of README.md is executed, in order, in one namespace, with the
repository root as working directory (the examples name ``diagrams/...`` files).  A block
whose first line is the comment ``# not run in tests`` is skipped (e.g. a long benchmark).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SKIP = "# not run in tests"


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(first line number, code) of every ```python fenced block."""
    blocks = []
    for m in re.finditer(r"^```python[ \t]*\n(.*?)^```[ \t]*$", text, re.M | re.S):
        blocks.append((text.count("\n", 0, m.start(1)) + 1, m.group(1)))
    return blocks


def test_python_blocks_run(monkeypatch):
    text = (ROOT / "README.md").read_text()
    blocks = python_blocks(text)
    assert blocks, "README.md has no ```python block"
    monkeypatch.chdir(ROOT)
    namespace: dict = {"__name__": "__readme__"}
    for line, code in blocks:
        if code.lstrip().startswith(SKIP):
            continue
        # the file name and line in a traceback point at the README
        exec(compile("\n" * (line - 1) + code, str(ROOT / "README.md"), "exec"), namespace)
