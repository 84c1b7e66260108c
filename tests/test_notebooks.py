"""The tutorial notebooks run top to bottom (nbclient, JAX on the CPU).

Each notebook in notebooks/ is executed in a fresh kernel of this interpreter (a kernel spec
written for the test and found first through JUPYTER_PATH, so that a user's "python3" kernel
pointing elsewhere does not matter) whose working directory is the
repository root and whose PYTHONPATH starts with it (so the checkout is used even without
``pip install -e .``).  A cell that raises fails the test, with the cell's source and traceback
in the message.  The notebooks keep themselves cheap through loose tolerances (each well under
~90 s of CPU time on a 2-core machine); the GPU-sized runs of 02_seed_diagrams are behind its
``RUN_HEAVY = False`` flag.  The executed notebooks are not written back: the repository keeps
them without outputs.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
CELL_TIMEOUT = 600   # seconds per cell: generous, JAX compilation on a loaded CPU is slow


def test_notebooks_exist():
    names = {p.name for p in NOTEBOOKS}
    for expected in ("01_quickstart.ipynb", "02_seed_diagrams.ipynb", "03_scan_threshold.ipynb",
                     "04_generic_engines.ipynb"):
        assert expected in names


KERNEL = "loopint-tests"


def _kernel_spec(folder: Path) -> None:
    """A kernel spec named KERNEL running this interpreter, under ``folder/kernels``."""
    spec = folder / "kernels" / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "loopint tests", "language": "python"}))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path, monkeypatch, tmp_path):
    nb = nbformat.read(path, as_version=4)
    # committed without outputs (keeps the repository small and diffs readable)
    assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code"), \
        f"{path.name}: clear the outputs before committing"
    # the kernel inherits the environment of this process
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    _kernel_spec(tmp_path)
    monkeypatch.setenv("JUPYTER_PATH", os.pathsep.join(
        [str(tmp_path)] + [p for p in os.environ.get("JUPYTER_PATH", "").split(os.pathsep) if p]))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    client = nbclient.NotebookClient(nb, kernel_name=KERNEL, timeout=CELL_TIMEOUT,
                                     resources={"metadata": {"path": str(ROOT)}})
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as exc:
        text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc))     # drop the ANSI colours
        pytest.fail(f"{path.name}: a cell failed\n{text}", pytrace=False)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors, f"{path.name}: {errors[0].get('ename')}: {errors[0].get('evalue')}"
