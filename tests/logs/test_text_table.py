"""A table a hand-written training loop prints (`logs/_text_table.py`): a header line of names over rows of numbers,
key=value pairs after them, banners and progress lines between; read only where no other format matches."""

from __future__ import annotations

import numpy as np
import pytest

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.logs import detect_format, read_log

BANNER = "19:31:27 ARM_A2_START\n511 training prompts\ntrainable params: 29,933,568 || all params: 3,145,805,824\n\n"


def table(n: int, repeat_header_every: int | None = None) -> str:
    lines = [BANNER]
    for i in range(n):
        if i == 0 or (repeat_header_every and i % repeat_header_every == 0):
            lines.append(" step  reward    std      KL  words  (watch: reward up + words up == hacking)")
        step = 5 * i + 1
        lines.append(f"{step:5d}   {0.3 + 0.01 * i:.3f}  0.480  {0.0001 * i:.4f}  {120 + i:.1f} probe={0.5 + 0.001 * i:.3f} "
                     f"note=fine")
        if i % 4 == 3:
            lines.append("Loading...  40%|████      | 4/10")
    return "\n".join(lines) + "\n"


def test_a_printed_table_is_read_by_its_header_with_its_key_value_columns():
    text = table(30)
    assert detect_format(text) == "text_table"
    log = read_log(text)
    assert np.array_equal(log.steps, 5 * np.arange(30) + 1) and log.step_axis == "column 'step'"
    np.testing.assert_allclose(log["reward"], 0.3 + 0.01 * np.arange(30))
    assert log.columns["kl_ref"] == "KL" and "probe" in log.names and "note" not in log.names


def test_a_header_printed_again_is_the_same_table():
    log = read_log(table(30, repeat_header_every=10))
    assert len(log.steps) == 30 and log.n_runs == 1


def test_prose_and_a_two_name_label_are_no_table():
    prose = "Training the model now\nstep reward\n1 0.5\n2 0.6\n3 0.7\n4 0.8\n"  # two names: a label, not a header
    with pytest.raises(ConfigError, match="could not recognise the log format; .* a printed table"):
        read_log(prose)
    with pytest.raises(ConfigError, match="could not recognise"):
        read_log("epoch one started\nloss went down a lot today\nthe end of the run\n")
