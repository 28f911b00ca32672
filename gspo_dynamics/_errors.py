"""The one exception type for bad user input.

A `ConfigError` carries one sentence that names the bad value and what was expected; the CLI
prints it on one line and exits with status 2. Programming errors stay ordinary exceptions.
"""


class ConfigError(ValueError):
    """Invalid user input: an impossible hyperparameter, a malformed file, an unknown name."""
