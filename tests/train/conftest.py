"""Small tensors: one intra-op thread is fastest here, and immune to oversubscribed CPUs
(with several threads on a loaded 2-core machine, OpenMP spin-waits make tiny ops 100x slower).

Module scope, so the setting is restored before tests outside tests/train run.
"""

import pytest
import torch


@pytest.fixture(autouse=True, scope="module")
def _single_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
