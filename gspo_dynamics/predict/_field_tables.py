"""What the field tables of `predict._trl_fields`, `_verl_fields` and `_openrlhf_fields` say about one config."""

from __future__ import annotations

from typing import Any

# what a sampling temperature other than 1 changes, in every framework's table of keys the model does not represent
TEMPERATURE = ("samples at this temperature: a group's spread is the tempered policy's; near 0 its responses are alike "
               "and the group's advantage vanishes")

# an UNMODELLED table: key -> (neutral values, what it changes, the key it acts through: "key" on, "key=value", or None)
Table = dict[str, tuple[tuple[Any, ...], str, "str | None"]]


def abbreviation_of(name: str, names, given) -> str | None:
    """The one name of `names` that `name` begins, where `name` is none of them and the config does not give that
    one too (`given`), as argparse reads an abbreviated option (allow_abbrev); else None."""
    if name in names:
        return None
    whole = [known for known in names if known.startswith(name)]
    return whole[0] if len(whole) == 1 and whole[0] not in given else None

def active_unmodelled(values: dict[str, Any], table: Table) -> list[tuple[str, Any, str]]:
    """(key, value, what it changes) for each key of `table` set away from its neutral values (a key without neutral
    values: wherever the key it acts through is on), where that key is on."""
    return [(key, values[key], what) for key, (neutral, what, requires) in table.items()
            if key in values and not (neutral and _neutral(values[key], neutral)) and _acts(values, requires)
            and (neutral or requires is not None)]


def _neutral(value: Any, neutral: tuple[Any, ...]) -> bool:
    return any(value == n and type(value) is not bool or value is n for n in neutral)


def _acts(values: dict[str, Any], requires: str | None) -> bool:
    if requires is None:
        return True
    key, sep, value = requires.partition("=")
    return values.get(key) == value if sep else bool(values.get(key))


def grouped(active: list[tuple[str, Any, str]]) -> str:
    """One note naming each active unmodelled key with its value and what it changes."""
    return "not modelled (each changes the dynamics): " + "; ".join(f"{k} = {v!r}: {what}" for k, v, what in active)
