"""Column maps: which column of a log holds a series, for names the name tables do not know.

    read_log("metrics.csv", column_map={"reward": "score", "step": "iter"})
    gspo-dynamics diagnose metrics.csv --map reward=score,step=iter

A column map goes from a name (`"step"` or one of `STANDARD_NAMES`) to a column of the log; the
mapped column wins that name over every column the name tables would have given it. Both
spellings are checked here, once: `parse_map_option` turns the CLI's `--map` text into the
dict of the Python API, and `check_column_map` validates that dict, whichever wrote it.

An error that advises a map is a `ColumnMapError`: one sentence whose map entries are spelled
the way the caller writes them, `column_map={"reward": "score"}` in Python (its `str`) and
`--map reward=score` at the CLI (`render(cli=True)`).
"""

from __future__ import annotations

import difflib
import json
import re
import shlex
from collections.abc import Iterable, Mapping

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.logs._names import STANDARD_NAMES, canonical_name, is_eval_key, name_rank, reward_like

MAPPABLE: tuple[str, ...] = ("step", *STANDARD_NAMES)
_COUNTED = 6  # a list of more columns than this says how many there are
_ALTERNATIVES = 3  # reward-like columns named after the most reward-like one


class ColumnMapError(ConfigError):
    """A ConfigError whose sentence names column-map entries: text parts, (name, column) pairs and {name: column}
    maps of several entries."""

    def __init__(self, *parts: str | tuple[str, str] | dict[str, str]):
        self.parts = parts
        super().__init__(self.render(cli=False))

    def render(self, cli: bool) -> str:
        """The sentence with each entry as `--map NAME=COLUMN[,NAME=COLUMN]` (cli) or `column_map={...}`."""
        return "".join(part if isinstance(part, str) else spell_map(part if isinstance(part, dict) else dict([part]),
                                                                    cli=cli) for part in self.parts)


def spell(name: str, column: str, cli: bool = False) -> str:
    """One map entry as the caller writes it: `--map reward=score` or `column_map={"reward": "score"}`."""
    return spell_map({name: column}, cli)


def spell_map(entries: Mapping[str, str], cli: bool = False) -> str:
    """A map as the caller writes it: `--map reward=score,step=iter` or `column_map={"reward": "score", ...}`."""
    if cli:
        return "--map " + shlex.quote(",".join(f"{name}={column}" for name, column in entries.items()))
    return "column_map={" + ", ".join(f"{json.dumps(n)}: {json.dumps(c)}" for n, c in entries.items()) + "}"


def parse_map_option(items: Iterable[str] | None) -> dict[str, str]:
    """The column map of the CLI's `--map NAME=COLUMN[,NAME=COLUMN...]` options (repeatable).

    Only the syntax is checked here; the names and columns are checked by `check_column_map`.
    """
    column_map: dict[str, str] = {}
    for item in items or ():
        for entry in item.split(","):
            name, equals, column = (part.strip() for part in entry.partition("="))
            if not (equals and name and column):
                raise ConfigError(
                    f"--map {item!r} is not NAME=COLUMN[,NAME=COLUMN...]; "
                    "e.g. --map reward=reward_mean"
                )
            if column_map.get(name, column) != column:
                raise ConfigError(
                    f"--map gives {name!r} twice ({column_map[name]!r} and {column!r}); "
                    "map each name to one column"
                )
            column_map[name] = column
    return column_map


# what a column named as one of these holds is no reward: a loss or likelihood falls as the run learns, the others
# are the step's own readings; diagnose reads the reward's rise as progress, so read as the reward they mislead
NOT_A_REWARD = frozenset({"loss", "grad_norm", "learning_rate", "kl_ref", "kl_old_new", "entropy", "clip_frac"})
_LOSS_WORD = re.compile(r"(?:^|[_/.\- ])(?:nll|ppl|perplexity|loss)(?:$|[_/.\- ])", re.IGNORECASE)


def not_a_reward(column: str) -> str | None:
    """What the column holds where its name says it is no reward (NOT_A_REWARD, or a loss, NLL or perplexity by a
    word of its name), else None."""
    name = canonical_name(column)
    if name in NOT_A_REWARD:
        return name.replace("_", " ")
    return "a loss" if _LOSS_WORD.search(column) else None


def check_column_map(column_map: Mapping[str, str] | None) -> dict[str, str]:
    """A validated copy of a column map {name: column}: known names, one name per column, and no reward mapped to a
    column whose name says it is no reward (`not_a_reward`)."""
    if column_map is None:
        return {}
    if not isinstance(column_map, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in column_map.items()
    ):
        raise ConfigError(
            "column_map must be a dict from names (str) to columns of the log (str), "
            'e.g. column_map={"reward": "reward_mean"}'
        )
    by_column: dict[str, str] = {}
    for name, column in column_map.items():
        if name not in MAPPABLE:
            swapped = column in MAPPABLE and name not in MAPPABLE
            hint = ("; did you mean ", (column, name), "?") if swapped else ()
            raise ColumnMapError(
                (name, column), f": {name!r} is not a name that can be mapped; expected one of "
                f"{', '.join(MAPPABLE)}", *hint,
            )
        if not column:
            raise ColumnMapError((name, column), ": the column name is empty")
        if name == "reward" and (held := not_a_reward(column)) is not None:
            raise ColumnMapError(
                (name, column), f": {column!r} is named as {held if held.startswith('a ') else 'the ' + held}, not a "
                "reward: diagnose reads a rise of the reward as progress, so this column would read upside down or as "
                "no signal at all; map the column the run logs its reward in (a log without one cannot be judged by it)",
            )
        if column in by_column:
            raise ConfigError(
                f"column {column!r} is mapped to both {by_column[column]!r} and {name!r}; "
                "a column holds one series"
            )
        by_column[column] = name
    return dict(column_map)


def missing_column(name: str, column: str, columns: Iterable[str], where: str = "log"
                   ) -> ColumnMapError:
    """The error for a mapped column that is not in the log: it names every column that is, the closest first."""
    columns = sorted(set(columns))
    close = difflib.get_close_matches(column, columns, n=3)
    return ColumnMapError(
        (name, column), f": the {where} has no column {column!r}; its columns are "
        f"{column_list(close + [c for c in columns if c not in close])}"
    )


def column_list(columns: list[str]) -> str:
    """Every column, quoted, in the given order (an error names the one to map: none is left out), with their count
    when there are many."""
    count = f" ({len(columns)} in all)" if len(columns) > _COUNTED else ""
    return ", ".join(map(repr, columns)) + count


def chosen_columns(column_map: dict[str, str], raw_keys: set[str]) -> dict[str, str]:
    """{column: name} of a checked map's series (not the step), each column present in the log."""
    chosen = {column: name for name, column in column_map.items() if name != "step"}
    for column, name in chosen.items():
        if column not in raw_keys:
            raise missing_column(name, column, raw_keys)
    return chosen


def _named_reward(columns: list[str]) -> list[str]:
    """The columns named as the reward, the one the name tables would read first."""
    return sorted((c for c in columns if canonical_name(c) == "reward"), key=name_rank)


def no_reward_error(columns: Iterable[str]) -> ColumnMapError:
    """The error for a log without a reward series: the most reward-like column as a map that would read it
    (`_names.reward_like`), the next ones, and every column of the log.

    A column read as the reward that held no numbers (a list of per-sample rewards) is named first.
    """
    columns = sorted(set(columns))
    named = _named_reward(columns)
    found = "no reward series was found" + (f" (column {named[0]!r} holds no numbers)" if named else "")
    columns = [c for c in columns if c not in named] or columns  # a column of no numbers is no column to map to
    every = (("reward", "COLUMN"), f", COLUMN one of the log's columns: {column_list(columns)}")
    candidates = [c for c in reward_like(columns) if c not in named]
    training = [c for c in columns if not is_eval_key(c)]
    if not candidates and training and all(not_a_reward(c) or c.lower() == "epoch" for c in training):
        evals = len(columns) - len(training)
        shown = ", ".join(map(repr, sorted(set(columns) - set(training))[:3])) + (", ..." if evals > 3 else "")
        apart = (f", and its {evals} evaluation column(s) ({shown}) are read apart from the training steps"
                 if evals else "")
        return ColumnMapError(f"{found}: the log's columns, {column_list(training)}, are a training step's readings, "
                              f"none of them a reward{apart}; log the reward per step (TRL: reward; verl: "
                              "critic/score/mean)")
    if not candidates:
        return ColumnMapError(found, "; map one with ", *every)
    others = candidates[1 : 1 + _ALTERNATIVES]
    then = f", then {', '.join(map(repr, others))}" if others else ""
    return ColumnMapError(
        f"{found}; the most reward-like column is {candidates[0]!r} (", ("reward", candidates[0]), f"){then}; "
        "or map another with ", *every,
    )


def not_a_run_error(columns: Iterable[str], source: str, counter: str | None = None) -> ColumnMapError:
    """The error for a file whose rows have no step and carry no training reading (`_algorithms.untrained_rows`):
    what it likely is, and the map that reads it as a run anyway (the column the name tables or `reward_like` take
    as the reward, and `counter`, a column that counts the rows (`_counters.row_counter`), as the step), since a user
    who names the reward column says the rows are training steps."""
    columns = sorted(set(columns))
    named = _named_reward(columns) or reward_like(columns)
    subject = "the input" if source == "<text>" else f"log file {source!r}"
    step = {"step": counter} if counter else {}
    return ColumnMapError(
        f"{subject} does not read as a training log: its rows have no step and none of a training step's readings "
        "(loss, learning rate, grad norm, KL, entropy, clip or zero-std fraction), as per-question or evaluation "
        "records, a results table or a dataset have none; pass the trainer's own log (trainer_state.json, its "
        "metrics JSONL or console output), or, if these rows are training steps, say which column is the reward"
        + (f" and that {counter!r}, which counts the rows, is the step" if counter else "") + ": ",
        {"reward": named[0] if named else "COLUMN", **step},
    )


def restarting_counter_error(counter: str, times: int, reward: str | None) -> ColumnMapError:
    """The error for rows without a step column beside a column that counts them and starts again (`_counters`):
    numbered 1, 2, ... they would join the file's runs into one curve whose run boundaries read as falls."""
    entries = {"reward": reward} if reward else {}
    return ColumnMapError(
        f"the log's rows have no step column, and column {counter!r} counts them and starts again {times} time(s), as "
        f"runs appended to one file do: numbered 1, 2, ... the {times + 1} runs would read as one curve whose run "
        "boundaries look like falls of the reward; say which column is the step: ", {**entries, "step": counter},
        " (each run is then read apart, the last by default)",
    )
