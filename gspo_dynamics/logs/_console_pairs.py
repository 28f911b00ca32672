"""`key: value` lists and step counters in one console line (`_console` reads the lines).

    step, name, start, end = counter("Step 12/200 | reward: 0.31")   # (12, "Step", 0, 11)
    pairs("Step 12/200 | reward: 0.31 | kl: 0.002", memo)          # {"reward": 0.31, "kl": 0.002}
    spaced_pairs(" reward 0.3 loss 0.2")                            # {"reward": 0.3, "loss": 0.2}
    epoch_of("Epoch 2/3, Step 10, Loss: 0.1")                       # 2

A key is the words before a `:` or `=` after the last separator (`|`, `,`, `;`, brackets, ` - `), up to
_MAX_KEY_WORDS of them (`Avg Response Len: 271.4`), else the last word; a value is a number as Python, numpy or
torch print it, non-finite spellings included; `key=[v1, v2, ...]` is the list's mean.
"""

from __future__ import annotations

import re

from gspo_dynamics.logs._runlog import to_step

# A number as printed by Python, JSON, numpy or torch, non-finite spellings included.
NUM = r"[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|(?:nan|NaN|NAN|inf|Inf|INF|Infinity|infinity)(?!\w))"
_KEY_WORD = re.compile(r"[A-Za-z_][\w./@\-]*")
# key:value / key=value: the separator attached to the key (`reward: 0.3`, not a banner's `Num Epochs = 1`), a number.
_VALUE = re.compile(r"[:=][ \t]*(" + NUM + r")(?![\w.:/]|,\d)")
_NUMBER = re.compile(NUM)
# key=[a, b, ...] / key: ['0.8', '0.1']: a list of numbers (per-completion rewards of a step), read as its mean
_LIST_PAIR = re.compile(r"([A-Za-z_][\w./@\-]*)[ \t]*[:=][ \t]*\[([^\[\]\n]{1,4000})\]")
_EQUALS_PAIR = re.compile(r"([A-Za-z_][\w./@\-]*)[ \t]+=[ \t]+(" + NUM + r")(?![\w.:/]|,\d)")  # after a counter only
_LAST_SEPARATOR = re.compile(r".*(?:[|,;\[\]()]|\s-\s)")  # a key's words start after the last of these
_NOTHING = object()
_MEMO_SIZE = 100_000
_MAX_KEY_WORDS = 4  # `Avg Response Len: 271.4`
# Step counters, matched in the lowercased line (the character before is checked apart: no lookbehind, for speed).
_COUNTER = re.compile(r"(global[_ ]step|step|iteration|iter|it|update|episode)[ \t]*[:=#]?[ \t]*\[?[ \t]*(\d+)"
                      r"(?:[ \t]*/[ \t]*\d+)?(?![\w.])")
_EPOCH_FRACTION = re.compile(r"(?i)epoch\W{0,3}\[?\s*(\d+)\s*/\s*\d+\s*\]?\s*[(\[]\s*(\d+)\s*/\s*(\d+)\s*[)\]]")
# "Epoch 2/3" beside a step counter (`Epoch 2/3, Step 10, Loss: ...`): the epoch, for a counter that restarts in each
_EPOCH_OF = re.compile(r"(?i)(?<![\w/])epoch\s*[#:=]?\s*\[?\s*(\d+)\s*/\s*\d+")
# `[12/1000]  loss: ...` at a line's start: a hand-written loop's step of its total, its name unwritten
_BARE_COUNTER = re.compile(r"\s*\[[ \t]*(\d+)[ \t]*/[ \t]*(\d+)[ \t]*\]")
_COUNTER_RANK = {"global_step": 0, "global step": 0, "step": 1, "iteration": 2, "iter": 2, "it": 2, "update": 3,
                 "episode": 3}


def counter(line: str) -> tuple[int | None, str | None, int, int]:
    """(the line's step counter, its name as written, where it starts and ends) or (None, None, 0, 0); the
    highest-ranked of several (global step first). A counter too large for a step gives None."""
    low = line.lower()
    best = None
    if "step" in low or "it" in low or "update" in low or "episode" in low:
        for match in _COUNTER.finditer(low):
            at = match.start()
            if at and (low[at - 1].isalnum() or low[at - 1] in "_/."):
                continue
            name = match.group(1)
            rank = _COUNTER_RANK[name.replace("_", " ") if name.startswith("global") else name]
            if best is None or rank < best[0]:
                best = (rank, to_step(int(match.group(2))), line[at:match.end(1)], at, match.end())
    if best is not None:
        return best[1:]
    epoch = _EPOCH_FRACTION.search(line) if "poch" in low else None
    if epoch is None:
        return None, None, 0, 0
    e, n, per_epoch = (int(g) for g in epoch.groups())
    return to_step(max(e - 1, 0) * per_epoch + n), None, epoch.start(), epoch.end()


def bare_counter(line: str) -> tuple[int | None, str | None, int, int]:
    """`counter`'s answer for a line that starts with a step of its total in brackets and no name (`[12/1000]  loss:
    -6.9, entropy: 87.1`, paulkroe/llm-rl's loop), the step no more than the total; else (None, None, 0, 0). Read only
    where no named counter is met (`_console`): under a counter line it would be an item's index, not the step."""
    match = _BARE_COUNTER.match(line)
    if match is None or int(match.group(1)) > int(match.group(2)):
        return None, None, 0, 0
    return to_step(int(match.group(1))), None, match.start(), match.end()


def epoch_of(line: str) -> int | None:
    """The epoch an `Epoch e/E` in the line names, or None."""
    match = _EPOCH_OF.search(line) if "poch" in line else None
    return None if match is None else int(match.group(1))


def _key_before(segment: str, set_apart: bool) -> str | None:
    """The key that ends `segment` (the text since the last pair, up to a `:` or `=`): the words after its last
    separator where one sets them apart (or the pair before), else its last word; None if it ends in a space."""
    if not segment or segment[-1].isspace():
        return None
    cut = _LAST_SEPARATOR.match(segment)
    words = segment[cut.end() if cut else 0:].split()
    if not words:
        return None
    if (set_apart or cut) and len(words) <= _MAX_KEY_WORDS and all(_KEY_WORD.fullmatch(w) for w in words):
        key = " ".join(words)
    else:
        key = words[-1] if _KEY_WORD.fullmatch(words[-1]) else None
    return None if key is None or key.endswith(".py") else key  # not a logger's file.py:line


def pairs(line: str, memo: dict) -> dict:
    """The `key: value` / `key=value` pairs of a line, values as floats (the key after a pair memoised by the text
    before it: a log repeats it line after line); `key=[v1, v2, ...]`, a list of numbers, is their mean (a step's
    per-completion rewards)."""
    record, last = {}, 0
    for match in _VALUE.finditer(line):
        segment = line[last:match.start()]
        if not last:
            key = _key_before(segment, False)
        elif (key := memo.get(segment, _NOTHING)) is _NOTHING:
            key = _key_before(segment, True)
            if len(memo) < _MEMO_SIZE:
                memo[segment] = key
        if key is not None:
            record[key] = float(match.group(1))
            last = match.end()
    if "[" in line:
        for key, items in _LIST_PAIR.findall(line):
            values = [item.strip().strip("'\"") for item in items.split(",")]
            if key not in record and values and all(_NUMBER.fullmatch(v) for v in values):
                record[key] = sum(map(float, values)) / len(values)
    return record


def spaced_pairs(rest: str) -> dict:
    """`reward 0.3 loss 0.2` or `reward = 0.3, kl = 0.01` after a counter (`it 10`, `step 5:`): the rest's pairs
    where it alternates keys and numbers (`=` between them aside), else {}."""
    if "=" in rest:
        equals = _EQUALS_PAIR.findall(rest)
        return {k: float(v) for k, v in equals} if equals else {}
    tokens = rest.replace(" - ", " ").replace("|", " ").replace(",", " ").split()
    keys, values = tokens[0::2], tokens[1::2]
    if not tokens or len(keys) != len(values):
        return {}
    if all(_KEY_WORD.fullmatch(k) for k in keys) and all(_NUMBER.fullmatch(v) for v in values):
        return {k: float(v) for k, v in zip(keys, values)}
    return {}
