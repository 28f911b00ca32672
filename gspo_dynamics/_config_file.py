"""A config file read into a dict: JSON, YAML, TOML or a verl, OpenRLHF or TRL launch script's arguments by its
suffix, one loader for every command.

    load_config_file("grpo.yaml")     # predict --config, diagnose --config, train --config
    load_config_file("run.toml")
    load_config_file("run_grpo.sh")   # {"actor_rollout_ref": {"actor": {"optim": {"lr": 1e-06}}}, ...}
    load_config_file("wandb/run-20250101_000000-abc/files/config.yaml")   # W&B's copy, each {value: v} unwrapped

W&B writes a run's config as one entry per key, `key: {value: v}` (`desc: ...` beside it in older releases), with its
own `_wandb` (and `wandb_version: 1`); such a file is read as the config it records (`wandb_values`), and says so
(`ConfigParts.wandb`): every key in it was recorded from the run's arguments, none typed by hand.

A file that does not parse is one `ConfigError` naming the line and column and what is wrong there
(`gspo-dynamics: error: the config file 'grpo.yaml' is not valid YAML: line 3, column 1: a tab; YAML
indents with spaces`), never the parser's own trace.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any, NamedTuple

from gspo_dynamics._errors import ConfigError

FORMATS = ("JSON, YAML (.yaml / .yml), TOML (.toml), a verl, OpenRLHF or TRL launch script (.sh) or a TRL program "
           "(.py)")  # what `load_config_file` reads
_YAML_SUFFIXES = (".yaml", ".yml")
_SCRIPT_SUFFIXES = (".sh", ".bash")  # a verl launch script (`_launch_script`)
_TAB = "a tab; YAML indents with spaces"
WANDB_OWN = ("_wandb", "wandb_version")  # W&B's own entries in a run's config.yaml, beside the run's keys


@functools.lru_cache(maxsize=2)  # one class per kind: every config, override and interpolation default reuses it
def yaml_loader(fast: bool = False):
    """PyYAML's safe loader with YAML 1.2 floats: `1e-6` (no dot) is a number there, as TRL's and
    verl's config parsers read it, and a string under YAML 1.1's rules. `fast`: on libyaml's C parser where PyYAML
    has it (~10x faster; its error marks are coarser: for files this tool ships or reads from a library, not a user's)."""
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader) if fast else yaml.SafeLoader

    class Loader(base):
        pass

    Loader.add_implicit_resolver("tag:yaml.org,2002:float", re.compile(
        r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$|^[-+]?\.[0-9_]+(?:[eE][-+]?[0-9]+)?$"), list("-+0123456789."))
    return Loader


def yaml_problem(error, text: str) -> str:
    """Where a YAML parse failed and what is there: `line 3, column 1: a tab; YAML indents with spaces`, or
    PyYAML's problem (`line 2, column 5: mapping values are not allowed here`)."""
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    if mark is None:
        return problem
    line = text.splitlines()[mark.line] if mark.line < len(text.splitlines()) else ""
    indent = line[: len(line) - len(line.lstrip(" \t"))]
    if "\t" in indent and mark.column <= len(indent):  # PyYAML: "found character '\t' that cannot start any token"
        return f"line {mark.line + 1}, column {indent.index(chr(9)) + 1}: {_TAB}"
    if line[mark.column: mark.column + 1] == "\t":
        return f"line {mark.line + 1}, column {mark.column + 1}: a tab, which YAML does not allow there; use spaces"
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}"


class ConfigParts(NamedTuple):
    """A config file read: its dict, the dotted keys a launch script adds with Hydra's `+key=` / `++key=` (keys added
    on purpose, which a key check names as such, never as a misspelling; empty for a file of another format), and
    whether it is W&B's record of a run's config (`wandb_values`: its keys recorded, none typed by hand), and the
    defaults of the file's own trainer where they are not its framework's."""

    data: dict[str, Any]
    added: frozenset[str]
    wandb: bool
    defaults: dict[str, Any]  # a framework default the file's own trainer does not share (OpenRLHF's trainer
    # before Ray, `openrlhf.cli.train_ppo`: rollout_batch_size 512), taken where the config leaves the key unset
    notes: tuple[str, ...] = ()  # what the reading of a launch script left to its last assignment (`branch_assignments`)
    command_line: frozenset[str] = frozenset()  # the names a TRL launch's command line gives, which TRL's parser
    # (argparse) also reads as the one field they begin: `--num_train_epoch 6` is num_train_epochs


def load_config_file(path: str | Path) -> dict[str, Any]:
    """The dict held by a JSON, YAML or TOML file (W&B's record of a run's config unwrapped), or set by a verl launch
    script's overrides (by its suffix: .yaml / .yml, .toml, .sh / .bash, else JSON), or one ConfigError."""
    return load_config_parts(path).data


def hydra_added(path: Path) -> set[str]:
    """The keys a Hydra run added with `+key=` (`added_key`), recorded in the `overrides.yaml` Hydra writes beside the
    composed `.hydra/config.yaml` of a run; empty for any other file, or where that record is not there or unreadable."""
    record = path.parent / "overrides.yaml"
    if path.parent.name != ".hydra" or not record.is_file():
        return set()
    import yaml

    try:
        items = yaml.safe_load(record.read_text(errors="replace"))
    except (OSError, yaml.YAMLError):
        return set()
    if not isinstance(items, list):
        return set()
    return {key for item in items if isinstance(item, str) and (key := added_key(item))}


def added_key(item: str) -> str | None:
    """The dotted key of a Hydra `+key=value` / `++key=value` override (a key added on purpose), else None."""
    return item.partition("=")[0].strip().lstrip("+") if item.lstrip().startswith("+") else None


def load_config_parts(path: str | Path) -> ConfigParts:
    """`load_config_file`'s dict with what else the file says of its keys (`ConfigParts`)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:  # a binary file, or another encoding
        raise ConfigError(f"the config file {str(path)!r} is not UTF-8 text (byte {exc.object[exc.start]:#04x} at "
                          f"position {exc.start}); a config is {FORMATS}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read the config file {str(path)!r}: {exc.strerror or exc}") from None
    if not text.strip():  # every format alike (JSON's own message would be "Expecting value")
        raise ConfigError(f"the config file {str(path)!r} is empty")
    added: set[str] = set()
    defaults: dict[str, Any] = {}
    command_line: set[str] = set()
    data = _parse(path, text, added, defaults, command_line)
    added |= hydra_added(path)
    if data is None:
        raise ConfigError(f"the config file {str(path)!r} is empty")
    if not isinstance(data, dict):
        raise ConfigError(f"the config file {str(path)!r} must hold one mapping of keys to values, got {type(data).__name__}")
    values = wandb_values(data)
    if values is not None and not values:
        raise ConfigError(f"the config file {str(path)!r} is W&B's record of a run's config, and it records no key "
                          "of the run (only W&B's own)")
    if path.suffix.lower() in _SCRIPT_SUFFIXES:
        from gspo_dynamics._launch_script import branch_assignments

        branches = branch_assignments(text)
    else:
        branches = []
    notes = (f"the script assigns {', '.join(branches)} in more than one branch of an if or case: read on the last "
             "assignment; --set KEY=VALUE gives the branch you run",) if branches else ()
    if path.suffix.lower() == ".py":  # a program's LoRA, which its GRPOConfig does not hold
        from gspo_dynamics._python_config import program_notes

        notes += program_notes(text)
    return ConfigParts(data if values is None else values, frozenset(added), values is not None, defaults,
                       notes=notes, command_line=frozenset(command_line))


def wandb_values(data: dict[str, Any]) -> dict[str, Any] | None:
    """The run's config held by W&B's record of it, else None. W&B writes each key k as {"value": v} (older releases
    {"desc": d, "value": v}) beside its own `_wandb` entry (older: `wandb_version: 1`, before any key); the record is
    told by every entry but W&B's own having that shape, with W&B's own entry there or a `desc` in every entry (a
    config of the user's own whose every value is a {"value": v} table, unmarked, stays as it is)."""
    entries = {k: v for k, v in data.items() if k not in WANDB_OWN}
    if not all(isinstance(v, dict) and "value" in v and set(v) <= {"value", "desc"} for v in entries.values()):
        return None
    if not any(k in data for k in WANDB_OWN) and not (entries and all("desc" in v for v in entries.values())):
        return None
    return {k: v["value"] for k, v in entries.items()}


def set_override(out: dict[str, Any], item: str, as_written: bool = False) -> None:
    """Set one Hydra-style `dotted.key=value` override in the nested dict `out` (the value read as YAML: 1e-6, true,
    [0.9, 0.99]; nested keys created as needed), or one ConfigError. `as_written`: a value that is not valid YAML is
    kept as its text (a launch script's, `data.train_files="[${HOME}/a.parquet, ...]"` with HOME the caller's: a key
    the mapping reads then fails by name, one it does not read is passed by)."""
    import yaml

    key, sep, text = item.partition("=")
    key = key.strip().lstrip("+")
    if not sep or not key or any(not part for part in key.split(".")):
        raise ConfigError(f"an override must read key=value (dotted keys for nested configs), got {item!r}")
    try:
        value = yaml.load(text, Loader=yaml_loader())
    except yaml.YAMLError:
        if not as_written:
            raise ConfigError(f"the value of override {item!r} is not valid YAML") from None
        value = text
    node = out
    *path, last = key.split(".")
    for part in path:
        if not isinstance(node.get(part, {}), dict):
            raise ConfigError(f"override {item!r}: {part!r} holds a value, not a table of keys")
        node = node.setdefault(part, {})
    node[last] = value


def _parse(path: Path, text: str, added: set[str], defaults: dict[str, Any], command_line: set[str]):
    suffix = path.suffix.lower()
    if suffix in _SCRIPT_SUFFIXES:  # a verl / OpenRLHF launch script: its trainer command's arguments (`_launch_script`)
        from gspo_dynamics._launch_script import (
            NON_RAY_DEFAULTS, openrlhf_arguments, openrlhf_program, overrides_of, runs_verl,
        )

        program = openrlhf_program(text)
        if program is not None:  # OpenRLHF's: its arguments by name, each value read as YAML (8, 1e-6, true)
            if "train_ppo_ray" not in program:  # the trainer before Ray: train_ppo_ray's arguments, one default its own
                defaults.update(NON_RAY_DEFAULTS)
            return {name: _typed(value) for name, value in openrlhf_arguments(text).items()}
        out: dict[str, Any] = {}
        if not runs_verl(text):  # TRL's trainer under accelerate / python / torchrun / trl grpo (`_trl_launch`)
            from gspo_dynamics._trl_launch import trl_launch_config

            trl = trl_launch_config(text, path, _typed)
            if trl is not None:  # the command line over the file its --config names (TRL's parser)
                args, config = trl
                command_line |= set(args)
                return {**(load_config_file(config) if config is not None else {}), **args}
        for item in overrides_of(text, f"the launch script {str(path)!r}"):
            set_override(out, item, as_written=True)
            added |= {added_key(item)} - {None}
        return out
    if suffix == ".toml":
        import tomllib

        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:  # its message names the line and column
            raise ConfigError(f"the config file {str(path)!r} is not valid TOML: {exc}") from None
    if suffix in _YAML_SUFFIXES:
        import yaml

        try:
            return yaml.load(text, Loader=yaml_loader())
        except yaml.YAMLError as exc:
            raise ConfigError(f"the config file {str(path)!r} is not valid YAML: {yaml_problem(exc, text)}") from None
    if suffix == ".py":  # a TRL program: its GRPOConfig(...) call's literal arguments (`_python_config`)
        from gspo_dynamics._python_config import python_config

        return python_config(text, f"the program {str(path)!r}")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data" and _one_object_per_line(text):
            raise ConfigError(f"{str(path)!r} holds one JSON object per line: a training log (JSONL), not a config; "
                              "give it as --pilot (predict) or as the log (diagnose)") from None
        hint = "" if suffix == ".json" else f" (a config is {FORMATS}, told apart by its suffix)"
        raise ConfigError(f"the config file {str(path)!r} is not valid JSON: line {exc.lineno}, column {exc.colno}: "
                          f"{exc.msg}{hint}") from None


def _typed(value: Any) -> Any:
    """An argument's word (or words) read as YAML scalars (`8` -> 8, `1e-6` -> 1e-06), a flag's True as it is."""
    import yaml

    if isinstance(value, list):
        return [_typed(v) for v in value]
    if not isinstance(value, str):
        return value
    try:
        out = yaml.load(value, Loader=yaml_loader())
    except yaml.YAMLError:
        return value
    return out if isinstance(out, (int, float, bool, str)) or out is None else value


def _one_object_per_line(text: str) -> bool:
    """Whether the first line of `text` is a JSON object on its own (a JSONL log's first record)."""
    try:
        return isinstance(json.loads(text.lstrip().split("\n", 1)[0]), dict)
    except json.JSONDecodeError:
        return False
