"""A launch script that runs TRL's GRPO trainer read as its config: the arguments of its `accelerate launch
train.py --learning_rate 1e-6 --num_generations 8 ...` (or `python`, `torchrun`, `trl grpo`) command, on top of the
YAML its `--config` names (TRL's parser: the file first, the command line over it; open-r1's recipes), with
accelerate's `--num_processes` (or the num_processes of the YAML its `--config_file` names), torchrun's (or
`python -m torch.distributed.run`'s) `--nproc_per_node` x `--nnodes` or deepspeed's `--num_gpus` x `--num_nodes` as the
process count.

    accelerate launch --num_processes=4 src/open_r1/grpo.py --config recipes/grpo.yaml --learning_rate 2e-6
    -> {**recipes/grpo.yaml, "learning_rate": 2e-06, "num_processes": 4}

The command is the one whose program is a `.py` file or `trl grpo`, with a GRPO argument of TRL's (`GRPO_MARKS`), or a
`--config` where the program's name says it trains (`grpo`, `train`, `rl`), or, a name that does not say it evaluates
(`eval`, `test`, `generate`, ...), where the YAML it names holds a GRPO argument (open-r1's `src/open_r1/empo.py
--config recipe.yaml`): not an evaluation's or a data script's. The YAML is looked for beside the script and up to
three folders above it (a repository's root, where the script is run from); one it names but that is not there is one
ConfigError naming it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from gspo_dynamics._errors import ConfigError
from gspo_dynamics._launch_script import named_arguments, trainer_commands

_PROGRAM = re.compile(r"\.py$|^grpo$")
GRPO_MARKS = ("num_generations", "steps_per_generation", "epsilon_high", "importance_sampling_level", "loss_type")
_UP = 3  # folders above the script's where its --config is looked for


def trl_command(text: str, script: Path | None = None) -> tuple[list[str], list[str]] | None:
    """(the words before the program: accelerate's own options; the program's arguments) of the script's one TRL
    launch command, or None; one ConfigError where it has two. `script`: where the script is, to look in the YAML a
    command's --config names (module docstring)."""
    found = []
    for words in trainer_commands(text, re.compile(r"^(?:accelerate|torchrun|python3?|trl|deepspeed)$"), None):
        at = next((i for i, w in enumerate(words) if _PROGRAM.search(w) and (w != "grpo" or words[i - 1] == "trl")),
                  None)
        if at is None:
            continue
        args = named_arguments(words[at + 1:])
        trains = re.search(r"grpo|train|rl", words[at], re.IGNORECASE) is not None  # not an eval or data script's
        other = re.search(r"eval|test|bench|infer|generat|sampl|predict|score|judge", words[at], re.IGNORECASE)
        named = trains or (other is None and _names_grpo(args.get("config"), script))  # a recipe of GRPO's own
        if any(k in args for k in GRPO_MARKS) or ("config" in args and named):
            found.append((words[:at], words[at + 1:]))
    if len(found) > 1:
        raise ConfigError("the launch script runs TRL's trainer more than once (two runs, or one per branch of an if): "
                          "a config is one run's; keep the command of the run you mean in a script of its own")
    return found[0] if found else None


def trl_launch_config(text: str, script: Path, typed) -> tuple[dict[str, Any], Path | None] | None:
    """(the script's TRL launch command's arguments, typed by `typed`, with accelerate's process count; the --config
    file it names, found: `_found`), or None without such a command (module docstring). The caller reads the file and
    lays the arguments over it."""
    command = trl_command(text, script)
    if command is None:
        return None
    before, after = command
    args = {name: typed(value) for name, value in named_arguments(after).items()}
    config = args.pop("config", None)
    module = len(before) > 2 and before[1] == "-m" and before[2] in ("torch.distributed.run", "torch.distributed.launch")
    skip = 2 if before[:2] == ["accelerate", "launch"] else 3 if module else 1
    launcher = named_arguments(before[skip:])
    processes = launcher.get("num_processes")
    if processes is None and isinstance(launcher.get("config_file"), str):  # accelerate's own YAML holds the count
        processes = _accelerate_processes(launcher["config_file"], script)
    if processes is None and (module or before[:1] in (["torchrun"], ["deepspeed"])):
        processes = _launcher_processes(launcher)
    if processes is not None:
        args.setdefault("num_processes", typed(processes))
    return args, _found(str(config), script) if config is not None else None


def _launcher_processes(launcher: dict) -> int | None:
    """torchrun's --nproc_per_node x --nnodes (deepspeed's --num_gpus x --num_nodes), the whole run's processes, where
    both are integers as written (a shell variable, torchrun's `gpu`, an elastic range "1:4", or deepspeed's nodes
    left to its --hostfile: None, not guessed)."""
    if "hostfile" in launcher and not any(n in launcher for n in ("num_nodes", "num-nodes")):
        return None
    def count(*names):
        value = next((launcher[n] for n in names if n in launcher), "1")
        return int(value) if isinstance(value, str) and value.strip("\"'").isdigit() else None

    per_node = (count("nproc_per_node", "nproc-per-node", "num_gpus", "num-gpus")
                if any(n in launcher for n in ("nproc_per_node", "nproc-per-node", "num_gpus", "num-gpus")) else None)
    nodes = count("nnodes", "num_nodes", "num-nodes")
    return None if per_node is None or nodes is None else per_node * nodes


def _accelerate_processes(name: str, script: Path):
    """The num_processes of the accelerate config file `name` (found as `_found` finds a --config), or None where
    the file is not there or does not set it."""
    import yaml

    try:
        settings = yaml.safe_load(_text_of(name, script))
    except yaml.YAMLError:
        return None
    return settings.get("num_processes") if isinstance(settings, dict) else None


def _names_grpo(name, script: Path | None) -> bool:
    """Whether the --config `name` is found (`_found`) and holds a GRPO argument of TRL's as a YAML key."""
    text = _text_of(name, script) if script is not None and isinstance(name, str) else ""
    return re.search(r"^\s*(?:" + "|".join(GRPO_MARKS) + r")\s*:", text, re.MULTILINE) is not None


def _text_of(name: str, script: Path) -> str:
    """The text of the file `name` a launch command names (found as `_found` finds it), or "" where it is not there."""
    try:
        return _found(name, script).read_text(errors="replace")
    except (ConfigError, OSError):
        return ""


def _found(name: str, script: Path) -> Path:
    """The --config file beside the script or up to _UP folders above it (as given, where it is absolute)."""
    given = Path(name)
    places = [given] if given.is_absolute() else [folder / given for folder in
                                                  [script.parent, *script.parent.parents][: _UP + 1]]
    for place in places:
        if place.is_file():
            return place
    raise ConfigError(f"the launch script's training command takes --config {name}, which is not beside it or up to "
                      f"{_UP} folders above it: give that file as --config (the script's other arguments as --set "
                      "key=value)")
