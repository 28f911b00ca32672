"""Hypothesis example counts: fewer in the default run (`-m "not slow"`), the full count where the slow tests run
too (`bash scripts/test.sh --full`, or no -m). tests/conftest.py sets FULL from the mark expression before any
test module is imported.

    @settings(max_examples=examples(5, 15), deadline=None)
"""

FULL = True  # the full counts unless tests/conftest.py says the slow tests are deselected


def examples(default: int, full: int) -> int:
    """`full` where the slow tests run, else `default`."""
    return full if FULL else default
