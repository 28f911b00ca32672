"""The one exception type for bad user input, and the one for a training run its hyperparameters broke.

A `ConfigError` carries one sentence that names the bad value and what was expected; the CLI
prints it on one line and exits with status 2. Programming errors stay ordinary exceptions.
"""

from __future__ import annotations


class ConfigError(ValueError):
    """Invalid user input: an impossible hyperparameter, a malformed file, an unknown name."""


class TrainingDiverged(ConfigError):
    """A training run whose gradient or sampling log-probabilities stopped being finite (inf or nan): its
    learning rate (or KL weight) is too large for the model, so no optimizer step is taken with it. `rows` holds the metrics rows of the
    steps before (also in the run's log files); the CLI says so on one line and exits with status 2."""

    def __init__(self, message: str, rows: list[dict] | None = None):
        super().__init__(message)
        self.rows = list(rows or [])

    def __reduce__(self):  # across processes (a worker pool) with its rows, not only its message
        return type(self), (str(self), self.rows)
