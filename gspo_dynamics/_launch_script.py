"""A verl or OpenRLHF launch script read as its config: the Hydra overrides it passes to verl's trainer, or the
arguments it passes to OpenRLHF's (`openrlhf_arguments`: `python3 -m openrlhf.cli.train_ppo_ray --n_samples_per_prompt 8
...`, often after `ray job submit ... --`; or `deepspeed --module openrlhf.cli.train_ppo ...`, the trainer before Ray),
both after the one expansion below (`command_words`).

    python3 -m verl.trainer.main_ppo \\
        algorithm.adv_estimator=grpo \\
        actor_rollout_ref.actor.optim.lr=1e-6 \\
        actor_rollout_ref.rollout.n=$N ...

`overrides_of(text)` gives the `key=value` arguments of the script's command that runs a verl trainer (a module or
file whose name ends in `main_ppo`, as verl's examples and recipes launch it), in order, after:

    continuations   a backslash at a line's end joins the next line;
    variables       `$NAME`, `${NAME}` and `${NAME:-default}` take the value of the script's own assignment before the
                    command (`NAME=value`, `export NAME=value`), else the default (`:-` where it is unset or empty,
                    as the shell does: `X=${X:-}` then `${X:-512}` is 512; `-` where it is unset); a variable the
                    script does not set (one from the caller's shell) stays as written, so a key the model reads fails
                    there by name;
    words           as the shell splits them (quotes removed: `trainer.logger='["console"]'`);
    arrays          `NAME=( word ... )` over several lines, expanded by `"${NAME[@]}"` (or `${NAME[@]}`) to its words,
                    as verl's newer examples group their overrides (DATA=(...), ACTOR=(...));
    strings         `NAME="..."` over several lines, expanded by `$NAME` and split into its words;
    arithmetic      `$(( expression ))` of integers, + - * / % and parentheses, the script's variables by name
                    (`$((train_bsz * n))`); an expression with anything else stays as written;
    substitution    a variable set to a command's output (`X="$(awk ... )"`, backticks) is not known from the script:
                    one word, `$(command)` (COMMAND_OUTPUT), where the command has several words (a one-word one,
                    `$(pwd)`, stays as written), so a multi-line program's text never splits into the command line.

Assignments are taken in the order written, the last before the command winning, except one whose value is only the
caller's option argument (`N=$OPTARG` in a `getopts` loop, `N="$2"` in an argument loop: set only where the caller
passes the option, so the script's own value or default stands: `N=${N:-8}` is 8, audit s43c D3); a `case` whose
subject the script's own variables give runs its matching branch alone (`_in_case`); if / else branches are not told
apart: a variable set in more than one of them, or in several branches of a case whose subject the script does not
give, is read on its last assignment, and said (`branch_assignments`). A script that runs the trainer more than once (two runs, or one command
per branch) is one ConfigError: which run it means, it does not say.

`+key=value` and `++key=value` (Hydra's append and force) keep their `+`: the loader reads them as `key=value` and
names the key as one the script adds on purpose (`_config_file.load_config_parts`); `~key` (a deletion) is left out.
A script that names a base config (`--config-name` / `--config-path`) is read only where that base is verl's own
shipped one: `--config-name` one of VERL_BASES (`ppo_trainer`, `ppo_megatron_trainer`, `.yaml` or not) under verl's
own config folder (`--config-path` absent, `config` or `./config`: Hydra resolves it beside the trainer's file, and
the trainer is verl's `verl.trainer.main_ppo`; or a clone's `.../verl/trainer/config`), whose defaults the loader
takes for every key the script leaves out.
Any other base is refused: its keys outside the command line live in a file this reader does not see, and reading
the overrides alone would take verl's defaults for them.
"""

from __future__ import annotations

import re

from gspo_dynamics._errors import ConfigError
from gspo_dynamics._shell_words import commands as _commands
from gspo_dynamics._shell_words import expanded as _expanded
from gspo_dynamics._shell_words import logical_lines as _logical_lines
from gspo_dynamics._shell_words import words as _words

_ARRAY = re.compile(r"^\s*(?:export\s+)?([A-Za-z_]\w*)=\((.*)\)\s*$")
_ASSIGNMENT = re.compile(r"^\s*(?:export\s+)?([A-Za-z_]\w*)=(.*?)\s*$")
# hold one ${...} of its own: ${CONFIG_DIR:-"${HOME}/verl/trainer/config"}
_TRAINER = re.compile(r"(?:main_ppo(?:_format)?|recipe[/.]dapo[/.]main_dapo)(?:\.py)?$")  # _format: Search-R1's entry
# with its format reward; main_dapo: verl's DAPO recipe (its dapo_trainer.yaml on ppo_trainer: `_verl_fields.DAPO_RECIPE`)
_FORK_TRAINER = re.compile(r"(?:^|[/.])verl[/.]trainer[/.]main_ppo_\w+(?:\.py)?$")  # a fork's main_ppo_<name>
_OVERRIDE = re.compile(r"^\+{0,2}[A-Za-z_][\w.\-]*=")
_OPENRLHF = re.compile(r"(?:^|[/.])openrlhf[/.]cli[/.]train_ppo(?:_ray)?(?:\.py)?$")
_PASSED_THROUGH = {"$@", "$*", "${@}", "${@:1}", "${*}"}  # the script's own arguments, passed on to the trainer
_OPENRLHF_IN = re.compile(r"openrlhf[/.]cli[/.]train_ppo(?:_ray)?\b")  # the trainer inside a word (`bash -c "..."`)
# OpenRLHF's trainer before Ray (`openrlhf.cli.train_ppo`, under `deepspeed --module`; removed in March 2025, 15d31511):
# its arguments are a subset of train_ppo_ray's of the same commit, each with the same default but this one
NON_RAY_DEFAULTS = {"rollout_batch_size": 512}  # train_ppo_ray's: 1024
_SHELL = re.compile(r"^(?:\|\|?|&&?|;|\d*>.*|<.*)$")  # a pipe, a list operator or a redirection ends the command
_NUMBER = re.compile(r"^-\d|^-\.\d")  # a negative number is a value, not an option (argparse's rule)
_VERL_TRAINER = re.compile(r"(?:^|[/.])verl[/.]trainer[/.]main_ppo(?:\.py)?$")
VERL_BASES = ("ppo_trainer", "ppo_megatron_trainer")  # verl's shipped base configs (its trainer/config/*.yaml)
_OWN_PATHS = ("config", "./config", "config/", "./config/")  # verl's config folder, beside verl/trainer/main_ppo.py
_BASE_OPTIONS = {"--config-name": "name", "-cn": "name", "--config-path": "path", "-cp": "path"}


def overrides_of(text: str, source: str = "the script") -> list[str]:
    """The `key=value` overrides of the script's verl trainer command, a Hydra `+` kept (module docstring); one
    ConfigError where the
    script runs no verl trainer, or names its own base config."""
    words = command_words(text, _TRAINER, source=source)
    fork = command_words(text, _FORK_TRAINER, source=source) if words is None else None
    if fork is not None:
        raise ConfigError(f"{source} runs {fork[0]}, a fork's own entry point beside verl's main_ppo: the base config "
                          "it composes (named in its own code) is not verl's shipped one, and its keys outside the "
                          "command line are not in the script; give the run's resolved config (Hydra's "
                          ".hydra/config.yaml in its output folder, or W&B's config.yaml) as --config")
    entry = _foreign_entry(text) if words is None else None
    if entry is not None:  # audit s43c D4: `python -m sp3f.main_grpo` with 60 verl keys was "runs no verl trainer"
        raise ConfigError(f"{source} runs {entry[0]} with {entry[1]} of verl's keys: a fork's own entry point, not "
                          "verl's main_ppo, so the base config it composes (named in its own code) may not be verl's "
                          "shipped one, and its keys outside the command line are not in the script; give the run's "
                          "resolved config (Hydra's .hydra/config.yaml in its output folder, or W&B's config.yaml) as "
                          "--config")
    if words is None:
        raise ConfigError(f"{source} runs no verl trainer (no command ending in main_ppo, as `python3 -m "
                          "verl.trainer.main_ppo key=value ...`), OpenRLHF's (`python3 -m openrlhf.cli.train_ppo_ray "
                          "--arg value ...`) nor TRL's (`accelerate launch train.py --num_generations 8 ...`, "
                          "`trl grpo --config recipe.yaml`): give the run's config as JSON, YAML or TOML")
    rest = words[1:]
    base, named = _base_config(rest)
    if named and not (base.get("name", "").removesuffix(".yaml") in VERL_BASES
                      and _own_path(base.get("path", "config")) and _VERL_TRAINER.search(words[0])):
        raise ConfigError(f"{source} names its own base config ({' '.join(named)}): its keys outside the command "
                          "line are in that file; give the file as --config and the script's overrides with --set")
    return [w for w in rest if _OVERRIDE.match(w)]


_ENTRY = re.compile(r"(?:^|[/.])main_\w+(?:\.py)?$")  # a fork's entry point: sp3f.main_grpo, recipe/x/main_x.py
_VERL_KEY = re.compile(r"^\+{0,2}(?:actor_rollout_ref|algorithm|data|trainer|critic|reward_model)\.[\w.\-]*=")
VERL_KEYS_OF_A_FORK = 3  # a command with at least this many verl keys passes them to a verl trainer of its own


def _foreign_entry(text: str) -> tuple[str, int] | None:
    """(the entry point, its verl keys) of a command that runs a module or file named main_<x> with at least
    VERL_KEYS_OF_A_FORK of verl's Hydra keys (a fork's trainer), else None."""
    for words in trainer_commands(text, _ENTRY, None):
        keys = sum(bool(_VERL_KEY.match(w)) for w in words[1:])
        if keys >= VERL_KEYS_OF_A_FORK:
            return words[0], keys
    return None


def _own_path(path: str) -> bool:
    """Whether a --config-path is verl's own config folder: beside verl/trainer/main_ppo.py (`config`), or a clone's
    (`$(pwd)/verl/trainer/config`)."""
    return path in _OWN_PATHS or path.rstrip("/").endswith("verl/trainer/config")


def runs_verl(text: str) -> bool:
    """Whether the script's command runs a verl trainer (`overrides_of`'s)."""
    return command_words(text, _TRAINER) is not None


def openrlhf_program(text: str) -> str | None:
    """The OpenRLHF PPO trainer the script's command runs (`openrlhf.cli.train_ppo_ray`, or `openrlhf.cli.train_ppo`,
    the trainer before Ray), as written, or None."""
    words = command_words(text, _OPENRLHF, _OPENRLHF_IN)
    return None if words is None else words[0]


def runs_openrlhf(text: str) -> bool:
    """Whether the script's command runs OpenRLHF's PPO trainer (`openrlhf_program`)."""
    return openrlhf_program(text) is not None


def openrlhf_arguments(text: str, source: str = "the script") -> dict[str, str | list[str] | bool]:
    """The arguments of the script's `openrlhf.cli.train_ppo_ray` command as argparse reads them, by name without
    its dashes: `--name value` and `--name=value` a word, `--name v1 v2` (nargs 2) a list, a flag alone (`--packing_samples`)
    True; the last of a repeated one wins. The values stay words (typed by the caller); the script's own arguments
    passed through (`"$@"`) are left out, and the command ends at a pipe, `&&` or a redirection. One ConfigError where the script runs no such command."""
    words = command_words(text, _OPENRLHF, _OPENRLHF_IN, source)
    if words is None:
        raise ConfigError(f"{source} runs no OpenRLHF PPO trainer (`python3 -m openrlhf.cli.train_ppo_ray --arg value`)")
    return named_arguments(words[1:])


def named_arguments(words: list[str]) -> dict[str, str | list[str] | bool]:
    """A command's words after its program as argparse reads them (`openrlhf_arguments`), up to its end."""
    out: dict[str, str | list[str] | bool] = {}
    name, values = None, []
    for word in [w for w in _own_words(words) if w not in _PASSED_THROUGH] + ["--"]:
        if word.startswith("--") or (word.startswith("-") and not _NUMBER.match(word)):
            if name:
                out[name] = True if not values else values[0] if len(values) == 1 else values
            name, eq, value = word.lstrip("-").partition("=")
            values = [value] if eq else []
        elif name:
            values.append(word)
    return out


def _own_words(words: list[str]) -> list[str]:
    """The command's words up to a pipe, a list operator or a redirection (`2>&1 | tee log`, `&& next`), those inside
    a command substitution left unexpanded (`$(cd ... && pwd)`) kept."""
    depth = 0
    for i, word in enumerate(words):
        if depth == 0 and _SHELL.match(word):
            return words[:i]
        depth = max(0, depth + word.count("$(") - word.count(")"))
    return words


def command_words(text: str, trainer: re.Pattern, nested: re.Pattern | None = None,
                  source: str = "the launch script") -> list[str] | None:
    """The words of the script's command with a word `trainer` matches, from that word on, after the shell's
    expansion of the lines before it (module docstring); None where no command has one, one ConfigError where
    several have (two runs, or one per branch of an if: which was run, the script does not say). `nested`: a word of several
    that `nested` finds in holds a whole command line (`srun ... bash -c "ray job submit ... -- python3 -m ..."`): it
    is split again and searched too (OpenRLHF's reader; verl's reads as it always has). Shared by verl's reader (`overrides_of`) and OpenRLHF's
    (`openrlhf_arguments`)."""
    found = trainer_commands(text, trainer, nested)
    if len(found) > 1:
        raise ConfigError(f"{source} runs {found[0][0]} {len(found)} times (two runs, or one per branch of an if): a "
                          "config is one run's; keep the command of the run you mean in a script of its own")
    return found[0] if found else None


def trainer_commands(text: str, trainer: re.Pattern, nested: re.Pattern | None,
                     guessed: dict[str, set] | None = None) -> list[list[str]]:
    """The words, from the trainer's on, of every command with a word `trainer` matches, each after the shell's
    expansion of the lines before it (`command_words`). `guessed`, where given, gets each variable assigned inside a
    case whose subject the script does not give, with the (case, branch) pairs assigning it."""
    values: dict[str, str] = {}
    arrays: dict[str, list[str]] = {}
    found = []
    cases: list[dict] = []  # the open `case WORD in` blocks: their subject, the branch running, whether one ran
    for line in (part for whole in _logical_lines(text) for part in _commands(whole)):
        line = _in_case(line, cases, values, arrays)
        if line is None:  # a `case` line, a branch not taken, or a branch's end
            continue
        array = _ARRAY.match(line)
        if array:  # NAME=( ... ): its words, each expanded
            arrays[array.group(1)] = _words(_expanded(array.group(2), values, arrays))
            continue
        code = _expanded(line, values, arrays)
        words = _words(code)
        if nested:
            words = [part for w in words for part in (_words(w) if " " in w and nested.search(w) else [w])]
        start = next((i for i, w in enumerate(words) if trainer.search(w)), None)
        if start is not None:
            found.append(words[start:])
            continue
        assignment = _ASSIGNMENT.match(code)
        written = _ASSIGNMENT.match(line)  # as written: a command's output ($(...), `...`) is not known
        if assignment and written and _CALLERS.match(written.group(2)):
            continue  # an option's argument (getopts' $OPTARG, a positional $2): set only where the caller passes it
        if assignment:
            value = " ".join(_words(assignment.group(2)))
            command = (written is not None and _SUBSTITUTION.search(_unquoted(written.group(2))) is not None
                       and " " in value)
            values[assignment.group(1)] = COMMAND_OUTPUT if command else value  # one word, $(pwd), stays as written
            if guessed is not None and cases and not cases[-1]["known"]:
                guessed.setdefault(assignment.group(1), set()).add((id(cases[-1]), cases[-1]["branch"]))
    return found


# a value that is only the caller's option argument: getopts' $OPTARG or a positional parameter, quoted or not
_CALLERS = re.compile(r"""^(["']?)\$(?:OPTARG|\{OPTARG\}|\d|\{\d+\})\1$""")
_SUBSTITUTION = re.compile(r"\$\((?!\()|`")  # $( not $(( (arithmetic, which `_expanded` does), or a backtick
COMMAND_OUTPUT = "$(command)"  # a variable set to a command of several words reads so: one word, unknown
_QUOTED = re.compile(r""""[^"]*"|'[^']*'""")  # left to right: a double-quoted span, or a single-quoted one
_IF, _FI = re.compile(r"^\s*if\b"), re.compile(r"^\s*fi\b")
_NOTHING = re.compile(r"(?!)")  # matches no word: `trainer_commands` walked for its assignments alone


def _unquoted(text: str) -> str:
    """`text` without its single-quoted spans (a double-quoted one is kept whole, single quotes in it too), where the
    shell substitutes nothing: `X='$(date +%s)'` is that text, no command."""
    return _QUOTED.sub(lambda m: m.group(0) if m.group(0)[0] == '"' else "", text)


def branch_assignments(text: str) -> list[str]:
    """The variables the script assigns more than once inside if / elif / else blocks, or in more than one branch of
    a case on a subject the script does not give (`case "$1" in`), in order: read on the last assignment (module
    docstring), which branch runs being the shell's to decide; said, not silent (audit s38c C3)."""
    depth, counts = 0, {}
    for line in (part for whole in _logical_lines(text) for part in _commands(whole)):
        depth += 1 if _IF.match(line) else -1 if _FI.match(line) and depth else 0
        assignment = _ASSIGNMENT.match(re.sub(r"^\s*(?:then|else|elif\b[^;]*)\s+", "", line)) if depth else None
        if assignment:
            counts[assignment.group(1)] = counts.get(assignment.group(1), 0) + 1
    in_cases: dict[str, set] = {}
    trainer_commands(text, _NOTHING, None, in_cases)
    names = [name for name, n in counts.items() if n > 1]
    return names + [name for name, branches in in_cases.items() if len(branches) > 1 and name not in names]


_CASE = re.compile(r"^\s*case\s+(.+?)\s+in\s*$")
_ESAC = re.compile(r"^\s*esac\b")
# `gpu)`, `"a"|b)`, `*) X=1`: words without spaces between the bars (a command in a branch, `echo "x)"`, is none)
_BRANCH = re.compile(r"^\s*\(?\s*([^()=\s|]+(?:\s*\|\s*[^()=\s|]+)*)\s*\)\s*(.*)$")


def _in_case(line: str, cases: list[dict], values: dict[str, str], arrays: dict[str, list[str]]) -> str | None:
    """`line` as `case` blocks run it: None for the `case` and `esac` lines, a branch's `pattern)` (the rest of its
    line kept) and any line of a branch not taken; the line itself otherwise. A case whose subject the script's own
    variables give (`DEVICE=gpu` before `case "$DEVICE" in`) runs its first branch whose patterns match it (the shell's
    glob, `fnmatch`); one whose subject they do not give runs every branch, the last assignment winning (audit s38c
    C3: a GPU and an NPU branch were read on the NPU's batch sizes)."""
    from fnmatch import fnmatchcase

    opened = _CASE.match(line)
    if opened:
        subject = " ".join(_words(_expanded(opened.group(1), values, arrays)))
        cases.append({"subject": subject, "known": "$" not in subject, "running": False, "ran": False, "branch": 0})
        return None
    if not cases:
        return line
    case = cases[-1]
    if _ESAC.match(line):
        cases.pop()
        return None
    branch = _BRANCH.match(line) if not _ASSIGNMENT.match(line) else None
    if branch:
        patterns = [p.strip().strip("\"'") for p in branch.group(1).split("|")]
        case["running"] = not case["known"] or (not case["ran"] and any(fnmatchcase(case["subject"], p)
                                                                             for p in patterns))
        case["ran"] |= case["running"]
        case["branch"] += 1
        line = branch.group(2)
    return line if case["running"] and line.strip() else None


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
