"""`read_log`: load a file or text, detect its format (`_detect`), read it, and build the canonical RunLog."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import os
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

import numpy as np

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.logs import _names, _trainers
from gspo_dynamics.logs._algorithms import episode_rows, foreign_algorithm, untrained_rows
from gspo_dynamics.logs._columns import (
    ColumnMapError, check_column_map, chosen_columns, no_reward_error, not_a_run_error, restarting_counter_error,
)
from gspo_dynamics.logs._console_rows import read_console, read_hf_console, read_verl_console
from gspo_dynamics.logs._counters import row_counter, within_epochs
from gspo_dynamics.logs._detect import (
    _JSON_FORMATS,
    FORMATS,
    _as_text,
    _is_blank,
    _json_format,
    _plain_ascii,
    _row_list_format,
    detect_format,
)
from gspo_dynamics.logs._csv import read_csv
from gspo_dynamics.logs._folders import MAX_BYTES, gunzipped, log_in
from gspo_dynamics.logs._json_readers import config_not_log, read_jsonl
from gspo_dynamics.logs._readers import (
    NUMBERED as _NUMBERED,
    NUMBERED_AXIS,
    RawLog,
    read_trl_history,
    read_trl_state,
    read_tensorboard,
)
from gspo_dynamics.logs._out_of_scale import without_out_of_scale
from gspo_dynamics.logs._placeholders import without_placeholders
from gspo_dynamics.logs._repeats import repeated_rows
from gspo_dynamics.logs._reward_choice import per_sample_mean, raw_beside_smoothed, training_reward
from gspo_dynamics.logs._rows import eval_points, key_groups, series_of, settle, without_rows
from gspo_dynamics.logs._runlog import MIN_ANALYSIS_POINTS, RunLog, freeze
from gspo_dynamics.logs._notebook import read_notebook
from gspo_dynamics.logs._text_table import read_text_table
from gspo_dynamics.logs._tensorboard_csv import named_value
from gspo_dynamics.logs._tfevents import looks_like_tfrecord

READERS = {
    "trl_state": read_trl_state,
    "console": read_console,
    "hf_console": read_hf_console,
    "tensorboard": read_tensorboard,
    "csv": read_csv,
    "jsonl": read_jsonl,
    "verl_console": read_verl_console,
    "text_table": read_text_table,
    "notebook": read_notebook,
}
_STEPS_BUILT_IN = ("tensorboard", "verl_console")  # formats whose steps are not a column


def _load(path_or_text) -> tuple[bytes | str, str]:
    """(content, source label); a directory resolves to the log inside it. Text given in memory is whole as given:
    its last line ends there (a file's last line without a line end was cut while written: `_readers.cut_tail`)."""
    if isinstance(path_or_text, (bytes, bytearray)):
        return bytes(path_or_text), "<bytes>"
    if isinstance(path_or_text, str) and (
        "\n" in path_or_text or path_or_text.lstrip()[:1] in "{[" or len(path_or_text) > 4096
    ):
        return path_or_text if path_or_text.endswith(("\n", "\r")) else path_or_text + "\n", "<text>"
    if not isinstance(path_or_text, (str, os.PathLike)):
        raise ConfigError(
            f"expected a file path, text or bytes, got {type(path_or_text).__name__}"
        )
    path = Path(path_or_text)
    try:
        if path.is_dir():
            path = log_in(path)
        if not path.is_file():
            raise ConfigError(f"log file {str(path)!r} does not exist")
        if path.stat().st_size > MAX_BYTES:
            raise ConfigError(f"log file {str(path)!r} is larger than 2 GiB")
        return gunzipped(path.read_bytes(), str(path)), str(path)
    except OSError as error:
        raise ConfigError(f"log file {str(path)!r} cannot be read ({error.strerror})") from None




def _logging_interval(steps, reward, recorded: int | None, warnings: list[str]) -> int | None:
    """The recorded logging interval, else the median spacing of the reward steps."""
    at = steps[np.isfinite(reward)] if reward is not None else steps
    spacing = int(np.median(np.diff(at))) if at.size >= 2 else None
    if recorded is not None:
        if spacing is not None and spacing != recorded:
            warnings.append(
                f"logging_steps is {recorded} but the rows are {spacing} steps apart"
            )
        return recorded
    return spacing if spacing and spacing > 0 else None


def _algorithm(trainer: str) -> str:
    """"grpo", or "rl" for OpenRLHF (whose logs do not say which estimator ran; PPO with a critic is refused)."""
    return "rl" if trainer == "openrlhf" else "grpo"


def _of_file(message: str, source: str) -> str:
    """`message` about "the log" or "the input" said of the file the user named (`source`; text stays as it is)."""
    for subject in ("the log is ", "the input is "):
        if source != "<text>" and message.startswith(subject):
            return f"log file {source!r} is {message.removeprefix(subject)}"
    return message


def read_log(
    path_or_text, format: str = "auto", column_map: Mapping[str, str] | None = None, *,
    run: int | None = None, logging_steps: int | None = None,
) -> RunLog:
    """Read a training log of any supported format into a `RunLog`.

    path_or_text: a path (file, or a run directory holding trainer_state.json / an event file),
        the log's text (anything with a newline or starting with '{' or '['), or its bytes.
    format: "auto" or one of `FORMATS`.
    column_map: name -> the log's column holding it, for columns the name tables do not know,
        e.g. {"reward": "score", "kl_ref": "my_kl", "step": "iter"}; a name is "step" or one of
        `STANDARD_NAMES`, and a mapped column wins that name over any other (the CLI's
        `--map reward=score,kl_ref=my_kl`). Without a map, common custom names such as
        `reward_mean` or `avg_reward` are recognised (see `logs._names`).
    run: which run of a file that holds several (its step counter starts again: runs appended to one log,
        concatenated logs), 1-based; None reads the last. `RunLog.n_runs` says how many there are.
    logging_steps: the trainer's logging interval, for rows without a step of their own (TRL's `logging_steps`;
        a trainer_state.json records it): the k-th training row is then at step k x logging_steps.

    Raises ConfigError for unreadable input, for a `run` the file does not hold, for a bad or missing mapped column, and for logs of
    other algorithms (DPO, SFT); the errors that advise a map are `ColumnMapError`s.
    A run too short to analyse is returned (see `RunLog.is_too_short`) with a warning.
    """
    if format != "auto" and format not in READERS:
        raise ConfigError(
            f"unknown log format {format!r}; expected 'auto' or one of {', '.join(FORMATS)}"
        )
    column_map = check_column_map(column_map)
    _check_run_options(run, logging_steps)
    step_key = column_map.get("step")
    content, source = _load(path_or_text)
    if Path(source).name == "wandb-summary.json":  # beside W&B's output.log and config.yaml in wandb/run-*/files
        raise ConfigError(f"{source!r} is W&B's summary of a run, its last values, not its curve: give the run's "
                          "history (W&B's 'Export CSV' of the reward panel, or run.history() saved as CSV) or the "
                          "output.log beside it")
    decoded = None  # (text, warnings), decoded once for detection and reading
    try:
        if format == "auto":
            if isinstance(content, bytes) and looks_like_tfrecord(content[:12]):
                format = "tensorboard"
            elif (json_format := _json_format(content)) is not None:
                format, decoded = json_format, (content, [])  # JSON read from the bytes: no decoded copy
            else:
                decoded = _as_text(content)
                format = _row_list_format(decoded[0]) or detect_format(decoded[0])
        elif format in _JSON_FORMATS and _plain_ascii(content):
            decoded = (content, [])
        elif format != "tensorboard":
            decoded = _as_text(content)
    except ConfigError as error:  # empty, binary, not UTF-8: said of the file the user named
        raise ConfigError(_of_file(str(error), source)) from None
    if step_key is not None and format in _STEPS_BUILT_IN:
        raise ColumnMapError(
            ("step", step_key), f": the steps of a {format} log are part of its format, not a column"
        )
    if format == "tensorboard":
        if not isinstance(content, bytes):
            raise ConfigError("a TensorBoard event file must be given as a path or bytes, not text")
        handed = [content]
    else:
        text, decode_warnings = decoded
        del decoded
        if _is_blank(text):
            raise ConfigError(_of_file("the log is empty", source))
        handed = [text]
        del text
    del content  # the reader's argument is then the only reference: it drops the text once parsed
    with _gc_paused():
        raw = READERS[format](handed.pop(), step_key)
        if format != "tensorboard":
            raw.warnings[:0] = decode_warnings
        if format == "csv" and raw.rows:  # TensorBoard's download of one scalar: its tag is in the file's name
            raw.rows = named_value(raw.rows, set().union(*(r for _, r in raw.rows[:50])), source, raw.warnings)
            raw.groups = None
        return build_log(raw, format, source, column_map, run=run, logging_steps=logging_steps)


@contextlib.contextmanager
def _gc_paused():
    """Python's cycle collector paused while a log's rows are made and read (it runs again after, as it was): the
    rows hold no cycles, and each collection the new objects set off would walk every object the process holds."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _no_reward(raw: RawLog, raw_keys: set[str], column_map: dict[str, str]) -> ConfigError:
    """The error for a log that built no reward series: a mapped column that is an evaluation reading or holds no
    numbers, a config file given as the log, else `no_reward_error` (an empty column named as one, not as absent)."""
    if "reward" in column_map:
        return ColumnMapError(("reward", column_map["reward"]), ": that column is an evaluation reading, read apart "
                              "from the training steps; the reward is the training rows' own"
                              if _names.is_eval_key(column_map["reward"]) else ": that column holds no numbers")
    if len(raw.rows) == 1 and (config := config_not_log(sorted(raw_keys))):
        return ConfigError(config)
    return no_reward_error(raw_keys | set(raw.empty_columns))


def _check_run_options(run, logging_steps) -> None:
    """`run` and `logging_steps`: None or a positive int (`run` beyond the file's runs is said by `build_log`)."""
    for name, value in (("run", run), ("logging_steps", logging_steps)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ConfigError(f"{name} must be a positive integer (or None), got {value!r}")


def read_log_history(
    log_history, logging_steps: int | None = None, source: str = "<log_history>",
    column_map: Mapping[str, str] | None = None, *, run: int | None = None,
) -> RunLog:
    """A `RunLog` from TRL `log_history` rows held in memory (e.g. `TrainerState.log_history`).

    The same path as a trainer_state.json file (format "trl_state"): summary rows skipped, eval
    rows apart, names mapped, DPO/SFT refused. `logging_steps` is the trainer's interval if known;
    `column_map` and `run` as in `read_log`.
    """
    column_map = check_column_map(column_map)
    _check_run_options(run, logging_steps)
    if not isinstance(log_history, (list, tuple)):
        raise ConfigError(
            f"log_history must be a list of dicts, got {type(log_history).__name__}"
        )
    raw = read_trl_history(list(log_history), column_map.get("step"), logging_steps)
    return build_log(raw, "trl_state", source, column_map, run=run)


def build_log(raw: RawLog, format: str, source: str, column_map: dict[str, str] | None = None, *,
              run: int | None = None, logging_steps: int | None = None) -> RunLog:
    """The canonical RunLog of a reader's raw rows (refusing non-RL algorithms).

    column_map: a checked map (`check_column_map`); its step column was used by the reader.
    run: which run of the file (1-based; None: the last); logging_steps: the interval to number rows without steps
    by (None: the one the file records, else 1). The rows are settled first (`_rows.settle`: eval rows apart, the
    run, resumed steps), then each kind becomes series (`_rows.series_of`).
    """
    if not raw.rows:
        raise ConfigError(f"no metric rows with a valid step were found in the {format} log")
    groups = raw.groups if raw.groups is not None else key_groups(raw.rows)
    raw_keys = set().union(*groups)
    foreign = foreign_algorithm(raw_keys)  # the file's; where it holds several runs, the run read decides (below)
    if episode_rows(raw_keys):
        raise ConfigError("the log's rows are an agent's steps through an environment episode (an action, a reward, a "
                          "done flag; no loss, KL or other training reading): per-action rewards of an episode, not a "
                          "training run's steps; give the trainer's log")
    chosen = chosen_columns(column_map or {}, raw_keys)
    picked, pick_warnings = training_reward(groups, chosen)  # the reward on the training rows, not a per-sample key's
    chosen = {**chosen, **picked}
    numbered = raw.step_axis == NUMBERED_AXIS or (raw.step_axis is None and any(w.endswith(_NUMBERED)
                                                                                for w in raw.warnings))
    settled = settle(raw.rows, groups, _reward_like(chosen), step_axis=_step_axis(raw, format, numbered),
                     numbered=numbered, every=logging_steps or raw.logging_steps, run=run,
                     ordered=format != "tensorboard", marked=raw.run_starts)
    if settled.n_runs > 1:  # the run read, not the file: an SFT run after a GRPO one holds no reward of its own
        run_keys = set().union(*settled.train_groups) | set(settled.eval_keys.values())
        _refuse_foreign(foreign_algorithm(run_keys), f"run {settled.run_index} of {settled.n_runs} in this file")
    else:
        _refuse_foreign(foreign)
    warnings = _numbering_said(list(raw.warnings), settled.interval) + settled.warnings + pick_warnings
    built, placeholders, zero_keys = without_placeholders(series_of(settled, chosen, warnings))
    # the reader picked the reward (no column named as one, none mapped), before the rules below replace a named one
    guessed = "reward" not in (column_map or {}) and "reward" in built.columns and \
        _names.canonical_name(built.columns["reward"]) != "reward"
    built, means = per_sample_mean(built, mapped="reward" in (column_map or {}))
    built, smoothed = raw_beside_smoothed(built, mapped="reward" in (column_map or {}))
    means += smoothed
    built, far, far_aside = without_out_of_scale(built)
    warnings += placeholders + means + far
    set_aside = list(raw.set_aside)
    set_aside += [f"{settled.dropped} rows dropped where the step counter went back"] if settled.dropped else []
    set_aside += far_aside
    repeats = repeated_rows(built.series, built.from_training)
    if n_repeats := int(repeats.sum()):
        set_aside.append(f"{n_repeats} repeated rows read once")
        built = without_rows(built, ~repeats)
        warnings.append(f"{n_repeats} rows repeat the row before them in every reading (a logger writing its last "
                        "values at each step): each value is read once, at its first step")
    if "reward" not in built.series:
        raise _no_reward(raw, raw_keys, column_map or {})
    if numbered and not (logging_steps or raw.logging_steps):
        _check_numbered(raw, raw_keys, chosen, source)
    trainer = _trainers.guess_trainer(raw_keys)
    version = _trainers.guess_trl_version(raw_keys) if trainer == "trl" else None
    recorded = settled.interval or raw.logging_steps
    log = RunLog(
        steps=built.steps, series=freeze(built.series), format=format, source=source, trainer=trainer,
        version=version, algorithm=_algorithm(trainer), reward_std_kind=_trainers.reward_std_kind(trainer, version),
        logging_interval=_logging_interval(built.steps, built.series["reward"], recorded, warnings),
        warnings=tuple(warnings), diverged=freeze(built.diverged), logged_non_finite=freeze(built.logged),
        step_axis=settled.step_axis, n_runs=settled.n_runs, run_index=settled.run_index,
        run_name=raw.run_names[settled.run_index - 1] if raw.run_names and len(raw.run_names) == settled.n_runs else None,
        columns=MappingProxyType(built.columns), unread=built.unread, n_eval_points=eval_points(built, settled),
        set_aside=tuple(set_aside), placeholders=zero_keys,
        reward_guessed=guessed,
    )
    if log.is_too_short():
        n = log.n_points("reward")
        warnings.append(
            f"only {n} reward point(s): too short to analyse "
            f"(at least {MIN_ANALYSIS_POINTS} needed)"
        )
        log = dataclasses.replace(log, warnings=tuple(warnings))
    return log


def _refuse_foreign(foreign: str | None, which: str = "this log") -> None:
    """Refuse a log (or the run of it read) of an algorithm other than group policy-gradient RL (`foreign_algorithm`)."""
    if foreign is not None:
        runs = " (--run K picks another run)" if which != "this log" else ""
        raise ConfigError(f"{which} is from a run of {foreign}, not of GRPO/GSPO-style RL, and only group "
                          f"policy-gradient RL can be analysed{runs}")


def _check_numbered(raw: RawLog, raw_keys: set[str], chosen: dict[str, str], source: str) -> None:
    """Refuse rows numbered 1, 2, ... that are not one run's steps: rows without a training reading (items, not
    steps; unless a map names the reward), and rows beside a column that counts them and starts again (runs appended
    to one file: `_counters.row_counter`, not within each epoch of one run); either error names such a counter as the
    step."""
    records = [record for _, record in raw.rows]
    counter = row_counter(records, skip=chosen)
    restarting = counter if counter is not None and counter[1] else None  # one that counts on names nothing new
    if restarting is not None and within_epochs(records, restarting[0]):
        restarting = None  # steps counted within each epoch of one run: numbered by row, as they are
    reward = next((column for column, name in chosen.items() if name == "reward"), None)
    if reward is None and untrained_rows(raw_keys):
        raise not_a_run_error(raw_keys, source, restarting and restarting[0])  # rows of items, not of steps
    if restarting is not None:
        raise restarting_counter_error(*restarting, reward)


def _reward_like(chosen: dict[str, str]):
    """key -> whether it holds a reward (the map's reward column, a key named reward or one reward function's)."""
    memo: dict[str, bool] = {}

    def reward_like(key: str) -> bool:
        if key not in memo:
            name = chosen.get(key) or _names.canonical_name(key)
            memo[key] = name == "reward" or (name.startswith("reward/") and key not in chosen)
        return memo[key]
    return reward_like


def _step_axis(raw: RawLog, format: str, numbered: bool) -> str:
    """How the reader found the steps: its own words, else the format's."""
    if numbered:
        return NUMBERED_AXIS
    if raw.step_axis is not None:
        return raw.step_axis
    return {"tensorboard": "TensorBoard steps", "verl_console": "console counter",
            "hf_console": "console counter"}.get(format, "a step column")


def _numbering_said(warnings: list[str], interval: int | None) -> list[str]:
    """The reader's "rows were numbered 1, 2, ..." said with the interval they were numbered by."""
    if not interval or interval == 1:
        return warnings
    said = f"rows were numbered {interval}, {2 * interval}, ... (logging_steps {interval}), evaluation rows apart"
    return [w.replace(_NUMBERED, said) if w.endswith(_NUMBERED) else w for w in warnings]
