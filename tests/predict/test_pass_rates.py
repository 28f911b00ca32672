"""load_pass_rates: the formats an eval writes, and one ConfigError naming the bad line otherwise."""

from __future__ import annotations

import numpy as np
import pytest

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.predict._pass_rates import load_pass_rates

RATES = [0.0, 0.25, 0.5, 1.0, 0.875]


@pytest.mark.parametrize("name, text", [
    ("rates.txt", "0\n0.25\n\n0.5\n1\n0.875\n"),
    ("rates.csv", "pass_rate\n0.0\n0.25\n0.5\n1.0\n0.875\n"),
    ("rates.csv", "# eval of the base model, k = 8\n0.0, 0.25, 0.5\n1.0,0.875\n"),
    ("rates.json", "[0.0, 0.25, 0.5, 1, 0.875]"),
])
def test_good_files(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    rates = load_pass_rates(path)
    assert rates.dtype == np.float64
    np.testing.assert_array_equal(rates, RATES)


@pytest.mark.parametrize("text, where, value", [
    ("0.5\n0.25\n1.5\n", "line 3", "1.5"),
    ("0.5\nabc\n", "line 2", "'abc'"),
    ("0.5\n-0.1\n", "line 2", "-0.1"),
    ("0.5\nnan\n", "line 2", "nan"),
    ("[0.5, 1.5]", "item 1", "1.5"),
    ('[0.5, "0.3"]', "item 1", "'0.3'"),
])
def test_bad_value_names_the_line(tmp_path, text, where, value):
    path = tmp_path / "rates.txt"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_pass_rates(path)
    message = str(info.value)
    assert where in message and value in message and str(path) in message and "[0, 1]" in message


@pytest.mark.parametrize("text", ["", "\n  \n", "# only a comment\n", "[]", "pass_rate\n"])
def test_empty_file(tmp_path, text):
    path = tmp_path / "rates.csv"
    path.write_text(text)
    with pytest.raises(ConfigError, match="is empty"):
        load_pass_rates(path)


def test_missing_and_malformed_files(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_pass_rates(tmp_path / "absent.txt")
    path = tmp_path / "rates.json"
    path.write_text("[0.5, ")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_pass_rates(path)
