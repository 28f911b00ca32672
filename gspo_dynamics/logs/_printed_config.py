"""The run's config as its trainer printed it at the start of a console log: verl's `main_ppo` prints its resolved
config (`pprint(OmegaConf.to_container(config, resolve=True))`), a Python dict literal over a few hundred lines, each
behind Ray's `(TaskRunner pid=N)` prefix (or a logger's timestamp), with other processes' lines in between.

    found = printed_config(text)      # PrintedConfig(config={'actor_rollout_ref': {...}, ...}, line=20) or None

Only the lines whose prefix has the first line's shape (the same text, digits aside: a timestamp, a pid) are the
dict's; the dict is read as a literal (`ast.literal_eval`: no code runs), pprint's bare `inf` and `nan` read as
float('inf') and None. A log that printed several different configs (runs appended to one file) gives none of them:
which run's is the answer's is not the log's to say. A block that does not parse as a dict (cut short, a value
printed as no literal) is said with its reason (`PrintedConfig.config` None), not guessed at.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_STRING = re.compile(r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"")  # a repr'd string (pprint splits long ones by line)
_NON_FINITE = re.compile(r"(?<=[\s\[(:,])(-?)(inf|nan)(?=[\s,\]})])")  # pprint's bare inf / nan, outside names
_DIGIT = re.compile(r"\d")
_START = "{'actor_rollout_ref':"  # verl's config: its first key, as pprint sorts them
MAX_LINES = 20_000  # a printed verl config is 200-700 lines; other processes' lines may come between them
HEAD_CHARS = 8_000_000  # the configs are printed before the first steps: the head of the log holds them


@dataclass(frozen=True)
class PrintedConfig:
    """A config a log printed."""

    config: dict | None  # the printed dict; None where it did not parse (`why` says why)
    line: int  # 1-based line of the log where the printed dict starts
    framework: str = "verl"  # whose config the printed dict is
    why: str | None = None  # why `config` is None


def printed_config(text: str) -> PrintedConfig | None:
    """verl's config as the log printed it (module docstring); None where the log printed none."""
    found, at = [], text.find(_START, 0, HEAD_CHARS)
    while at >= 0:
        found.append(_block_at(text, at))
        at = text.find(_START, at + len(_START), HEAD_CHARS)
    if not found:
        return None
    configs = [f.config for f in found if f.config is not None]
    if len(found) > 1 and any(c != configs[0] for c in configs[1:]):
        lines = ", ".join(str(f.line) for f in found)
        why = f"the log printed {len(found)} different configs (lines {lines}): runs appended to one file"
        return PrintedConfig(None, found[0].line, why=why + ", whose is not the log's to say")
    return next((f for f in found if f.config is not None), found[0])


def _block_at(text: str, at: int) -> PrintedConfig:
    """The dict printed from `at` on: its lines are those whose prefix has the first line's shape, until its braces
    close outside strings."""
    line_start = text.rfind("\n", 0, at) + 1
    line = text.count("\n", 0, line_start) + 1
    prefix = _ANSI.sub("", text[line_start:at])
    shape = _DIGIT.sub("0", prefix)
    block, depth = [], 0
    for raw in text[line_start:].split("\n", MAX_LINES)[:MAX_LINES]:
        clean = _ANSI.sub("", raw.rstrip("\r"))
        if _DIGIT.sub("0", clean[:len(prefix)]) != shape:
            continue  # another process's line between the dict's
        body = clean[len(prefix):]
        block.append(body)
        bare = _STRING.sub("", body)  # a string's braces (a chat template's `{%`) are no nesting
        depth += sum(bare.count(c) for c in "{[(") - sum(bare.count(c) for c in "}])")
        if depth <= 0:
            return _parsed(block, line)
    return PrintedConfig(None, line, why=f"its braces do not close within {MAX_LINES} lines (cut short?)")


def _parsed(block: list[str], line: int) -> PrintedConfig:
    """The block as a dict literal (pprint's bare inf / nan as 1e999 / None), or why it is none."""
    text = _NON_FINITE.sub(lambda m: f"{m.group(1)}1e999" if m.group(2) == "inf" else "None", "\n".join(block))
    try:
        config = ast.literal_eval(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError) as error:
        return PrintedConfig(None, line, why=f"it does not read as a Python dict literal ({type(error).__name__})")
    if not isinstance(config, dict):
        return PrintedConfig(None, line, why="it is not a dict")
    return PrintedConfig(config, line)
