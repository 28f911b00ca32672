"""The run's config as its trainer printed it at the start of a console log: verl's `main_ppo` prints its resolved
config (`pprint(OmegaConf.to_container(config, resolve=True))`), a Python dict literal over a few hundred lines, each
behind Ray's `(TaskRunner pid=N)` prefix, with other processes' lines in between.

    found = printed_config(text)      # PrintedConfig(config={'actor_rollout_ref': {...}, ...}, line=20) or None

Only the lines with the first line's own prefix are the dict's; the dict is read as a literal (`ast.literal_eval`:
no code runs), and a block that does not parse as one (cut short, a value printed as no literal) is None, not a
guess.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_STRING = re.compile(r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"")  # a repr'd string (pprint splits long ones by line)
_START = "{'actor_rollout_ref':"  # verl's config: its first key, as pprint sorts them
_MAX_LINES = 5000  # a printed verl config is 200-700 lines; other processes' lines may come between them
HEAD_CHARS = 4_000_000  # the config is printed before the first step: the head of the log holds it


@dataclass(frozen=True)
class PrintedConfig:
    config: dict
    line: int  # 1-based line of the log where the printed dict starts
    framework: str = "verl"


def printed_config(text: str) -> PrintedConfig | None:
    """verl's config as the log printed it (module docstring), or None where the log holds none that parses."""
    at = text.find(_START, 0, HEAD_CHARS)
    if at < 0:
        return None
    line_start = text.rfind("\n", 0, at) + 1
    prefix = _ANSI.sub("", text[line_start:at])
    lines = text[line_start:].split("\n", _MAX_LINES)[:_MAX_LINES]
    block, depth = [], 0
    for raw in lines:
        line = _ANSI.sub("", raw.rstrip("\r"))
        if not line.startswith(prefix):
            continue  # another process's line between the dict's
        body = line[len(prefix):]
        block.append(body)
        bare = _STRING.sub("", body)  # a string's braces (a chat template's `{%`) are no nesting
        depth += sum(bare.count(c) for c in "{[(") - sum(bare.count(c) for c in "}])")
        if depth <= 0:
            return _parsed(block, text.count("\n", 0, line_start) + 1)
    return None


def _parsed(block: list[str], line: int) -> PrintedConfig | None:
    """The block as a dict literal, or None where it is not one."""
    try:
        config = ast.literal_eval("\n".join(block))
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    return PrintedConfig(config, line) if isinstance(config, dict) else None
