"""Suite-wide: one torch intra-op thread.

The tests use small tensors, for which one thread is fastest, and it keeps them immune to an
oversubscribed CPU (with several threads on a loaded 2-core machine, OpenMP spin-waits made tiny
ops up to 100x slower). Module scope, restored after each module, so a test that sets its own
thread count (tests/sim/test_numba_engine.py) sees the same starting point everywhere.
"""

import contextlib
import importlib
import sys
from pathlib import Path

import pytest
import torch


@pytest.fixture(autouse=True, scope="module")
def _single_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


ROOT = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def _script_module(folder: Path, name: str):
    # benchmarks/ and paper_repro/ each have a `_results` module: import the script with its own,
    # and put sys.path and sys.modules back afterwards
    saved = sys.modules.pop("_results", None)
    sys.path.insert(0, str(folder))
    try:
        yield importlib.import_module(name)
    finally:
        sys.path.remove(str(folder))
        for module in ("_results", name):
            sys.modules.pop(module, None)
        if saved is not None:
            sys.modules["_results"] = saved


@pytest.fixture(scope="module")
def load_script():
    """load_script("paper_repro", "trainer_at_scale") -> the script imported as a module, for
    this test module (its folder on sys.path until the module's tests are done)."""
    with contextlib.ExitStack() as stack:
        yield lambda folder, name: stack.enter_context(_script_module(ROOT / folder, name))
