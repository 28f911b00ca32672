"""A verl launch script read as its config: the Hydra overrides it passes to verl's trainer.

    python3 -m verl.trainer.main_ppo \\
        algorithm.adv_estimator=grpo \\
        actor_rollout_ref.actor.optim.lr=1e-6 \\
        actor_rollout_ref.rollout.n=$N ...

`overrides_of(text)` gives the `key=value` arguments of the script's command that runs a verl trainer (a module or
file whose name ends in `main_ppo`, as verl's examples and recipes launch it), in order, after:

    continuations   a backslash at a line's end joins the next line;
    variables       `$NAME`, `${NAME}` and `${NAME:-default}` take the value of the script's own assignment before the
                    command (`NAME=value`, `export NAME=value`), else the default; a variable the script does not
                    set (one from the caller's shell) stays as written, so a key the model reads fails there by name;
    words           as the shell splits them (quotes removed: `trainer.logger='["console"]'`).

`+key=value` and `++key=value` (Hydra's append and force) keep their `+`: the loader reads them as `key=value` and
names the key as one the script adds on purpose (`_config_file.load_config_and_added`); `~key` (a deletion) is left out.
A script that names a base config (`--config-name` / `--config-path`) is read only where that base is verl's own
shipped one: `--config-name` one of VERL_BASES (`ppo_trainer`, `ppo_megatron_trainer`, `.yaml` or not) under verl's
own config folder (`--config-path` absent, `config` or `./config`: Hydra resolves it beside the trainer's file, and
the trainer is verl's `verl.trainer.main_ppo`), whose defaults the loader takes for every key the script leaves out.
Any other base is refused: its keys outside the command line live in a file this reader does not see, and reading
the overrides alone would take verl's defaults for them.
"""

from __future__ import annotations

import re
import shlex

from gspo_dynamics._errors import ConfigError

_ASSIGNMENT = re.compile(r"^\s*(?:export\s+)?([A-Za-z_]\w*)=(.*?)\s*$")
_VARIABLE = re.compile(r"\$\{([A-Za-z_]\w*)(?::?-([^}]*))?\}|\$([A-Za-z_]\w*)")
_TRAINER = re.compile(r"main_ppo(?:\.py)?$")
_OVERRIDE = re.compile(r"^\+{0,2}[A-Za-z_][\w.\-]*=")
_VERL_TRAINER = re.compile(r"(?:^|[/.])verl[/.]trainer[/.]main_ppo(?:\.py)?$")
VERL_BASES = ("ppo_trainer", "ppo_megatron_trainer")  # verl's shipped base configs (its trainer/config/*.yaml)
_OWN_PATHS = ("config", "./config", "config/", "./config/")  # verl's config folder, beside verl/trainer/main_ppo.py
_BASE_OPTIONS = {"--config-name": "name", "-cn": "name", "--config-path": "path", "-cp": "path"}


def overrides_of(text: str, source: str = "the script") -> list[str]:
    """The `key=value` overrides of the script's verl trainer command, a Hydra `+` kept (module docstring); one
    ConfigError where the
    script runs no verl trainer, or names its own base config."""
    values: dict[str, str] = {}
    for line in re.sub(r"\\\r?\n", " ", text).splitlines():
        code = _expanded(re.sub(r"(^|\s)#.*$", "", line), values)  # a comment, from a `#` that starts a word
        words = _words(code)
        start = next((i for i, w in enumerate(words) if _TRAINER.search(w)), None)
        if start is None:
            assignment = _ASSIGNMENT.match(code)
            if assignment:
                values[assignment.group(1)] = " ".join(_words(assignment.group(2)))
            continue
        rest = words[start + 1:]
        base, named = _base_config(rest)
        if named and not (base.get("name", "").removesuffix(".yaml") in VERL_BASES
                          and base.get("path", "config") in _OWN_PATHS and _VERL_TRAINER.search(words[start])):
            raise ConfigError(f"{source} names its own base config ({' '.join(named)}): its keys outside the command "
                              "line are in that file; give the file as --config and the script's overrides with --set")
        return [w for w in rest if _OVERRIDE.match(w)]
    raise ConfigError(f"{source} runs no verl trainer (no command ending in main_ppo, as `python3 -m "
                      "verl.trainer.main_ppo key=value ...`): give the run's config as JSON, YAML or TOML")


def _base_config(words: list[str]) -> tuple[dict[str, str], list[str]]:
    """({"name": ..., "path": ...} of the base-config options among `words`, as given), and those options' words as
    written, for the error; `--config-name=X` and `--config-name X` alike."""
    base: dict[str, str] = {}
    named: list[str] = []
    for i, word in enumerate(words):
        option, eq, value = word.partition("=")
        if option in _BASE_OPTIONS:
            value = value if eq else (words[i + 1] if i + 1 < len(words) else "")
            base[_BASE_OPTIONS[option]] = value
            named.append(word if eq else f"{word} {value}")
    return base, named


def _expanded(text: str, values: dict[str, str]) -> str:
    """`text` with the variables the script set replaced (module docstring); the others as written."""
    def value(match: re.Match) -> str:
        name = match.group(1) or match.group(3)
        if name in values:
            return values[name]
        return match.group(2) if match.group(2) is not None else match.group(0)
    return _VARIABLE.sub(value, text)


def _words(text: str) -> list[str]:
    """`text` split as the shell splits it (quotes removed); a line it cannot split (an open quote) gives none."""
    try:
        return shlex.split(text, posix=True)
    except ValueError:
        return []
