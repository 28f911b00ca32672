"""A TRL training program read as its config: the keyword arguments of its one `GRPOConfig(...)` call, read from the
program's syntax tree, never run.

    args = GRPOConfig(output_dir="out", learning_rate=LR, num_generations=8, **COMMON)
    args.max_steps = 500
    -> {"output_dir": "out", "learning_rate": 5e-06, "num_generations": 8, ..., "max_steps": 500}

A value is read where the program writes it as a literal (numbers, strings, booleans, None, lists, tuples, dicts, with
unary minus and + - * / ** between numbers), as a name the program assigns once to such a literal (`LR = 5e-6`,
anywhere in the file), or as a `**NAME` of such a dict; an attribute the program sets on the config afterwards
(`args.max_steps = 500` or `setattr(args, "max_steps", 500)`, the variable the call is bound to) overrides it; the call
is found under its own name or an `import GRPOConfig as X` alias. Any other value (`args.lr` of an argument parser, a
function's result, a name assigned twice or changed in place by `.update`, `args.max_steps += 400`) is Python's to
compute: it is kept as its text ending in COMPUTED
(`a.bf16 (computed by the program)`), so that a key the mapping reads fails by name (`--set KEY=VALUE` gives it) and
one it does not read passes by, named as written. A program
with no GRPOConfig call, or several, is one ConfigError.
"""

from __future__ import annotations

import ast
import functools
import operator
from collections import Counter
from typing import Any

from gspo_dynamics._errors import ConfigError

CONFIG_CLASS = "GRPOConfig"
_MUTATORS = {"update", "setdefault", "pop", "popitem", "clear", "append", "extend", "insert", "remove"}
_ARITHMETIC = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
               ast.Pow: operator.pow, ast.FloorDiv: operator.floordiv}


COMPUTED = " (computed by the program)"  # ends the text of a value Python computes: `args.lr (computed by ...)`


def is_computed(value: Any) -> bool:
    """Whether a config value is the text of one the program computes (`_value`)."""
    return isinstance(value, str) and value.endswith(COMPUTED)


@functools.lru_cache(maxsize=1)
def _tree(text: str) -> ast.Module:
    """The program's syntax tree, parsed once for `python_config` and `program_notes` (a 7 MB program takes seconds)."""
    return ast.parse(text)


class _Unknown(Exception):
    """A value that is no literal of the program's."""


def python_config(text: str, source: str) -> dict[str, Any]:
    """The keyword arguments of the program's one GRPOConfig(...) call and the attributes it sets on its result after
    (module docstring), or one ConfigError."""
    try:
        tree = _tree(text)
    except SyntaxError as exc:
        raise ConfigError(f"{source} is not valid Python (line {exc.lineno}: {exc.msg})") from None
    names = _class_names(tree)
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and _named(node.func) in names]
    if not calls and any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(tree)):  # TrlParser((..., GRPOConfig))
        raise ConfigError(f"{source} builds its {CONFIG_CLASS} from its command line or a recipe (TrlParser, "
                          "HfArgumentParser): give the recipe (--config recipe.yaml) or the launch script that runs it "
                          "(.sh), both read")
    if not calls:
        raise ConfigError(f"{source} has no {CONFIG_CLASS}(...) call: save the config it builds "
                          "as JSON (json.dump(config.to_dict(), f), or trainer.args.to_dict()) and give that, or the "
                          "launch script that runs it (.sh)")
    if len(calls) > 1:
        lines = ", ".join(str(c.lineno) for c in sorted(calls, key=lambda c: c.lineno))
        raise ConfigError(f"{source} calls {CONFIG_CLASS}(...) {len(calls)} times (lines {lines}): a config is one "
                          "run's; keep the call of the run you mean in a program of its own, or give its JSON")
    env = _literal_names(tree)
    out: dict[str, Any] = {}
    for keyword in calls[0].keywords:
        if keyword.arg is None:  # **NAME: a dict the program writes as a literal, else not known
            spread = _value(keyword.value, env)
            if not isinstance(spread, dict):
                raise ConfigError(f"{source} builds its {CONFIG_CLASS} from **{ast.unparse(keyword.value)}, which "
                                  "Python computes: save the config it builds as JSON and give that")
            out.update(spread)
        else:
            out[keyword.arg] = _value(keyword.value, env)
    out.update(_set_after(tree, calls[0], env))
    return out


LORA_CALLS = {"get_peft_model", "LoraConfig"}


def program_notes(text: str) -> tuple[str, ...]:
    """What the program does to the run outside its GRPOConfig that the answer must say: LoRA adapters (a call of
    get_peft_model or LoraConfig, or a trainer given peft_config=...), which no key of the config holds."""
    try:
        tree = _tree(text)  # the tree `python_config` parsed: one parse per program
    except SyntaxError:
        return ()
    lora = sorted({(node.lineno, _named(node.func)) for node in ast.walk(tree) if isinstance(node, ast.Call) and (
        _named(node.func) in LORA_CALLS)} | {(node.lineno, "peft_config=") for node in ast.walk(tree)
                                             if isinstance(node, ast.Call) for k in node.keywords
                                             if k.arg == "peft_config" and not (isinstance(k.value, ast.Constant)
                                                                                and k.value.value is None)})
    if not lora:
        return ()
    line, how = lora[0]
    return (f"the program trains LoRA adapters ({how}, line {line}), which its GRPOConfig does not hold: not modelled "
            "(a low-rank update, whose lr scale differs from full fine-tuning's; the lr read is the adapters')",)


def _named(func: ast.expr) -> str | None:
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _class_names(tree: ast.AST) -> set[str]:
    """The names the program calls GRPOConfig by: its own, and each `from ... import GRPOConfig as X`."""
    return {CONFIG_CLASS} | {alias.asname for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                             for alias in node.names if alias.name == CONFIG_CLASS and alias.asname}


def _literal_names(tree: ast.AST) -> dict[str, ast.expr]:
    """NAME -> its value's node, for every name the program assigns exactly once (`NAME = ...`, anywhere): one
    assigned twice is not known without running the program."""
    counts: Counter = Counter()
    nodes: dict[str, ast.expr] = {}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATORS
                and isinstance(node.func.value, ast.Name)):  # COMMON.update({...}): changed where it runs
            counts[node.func.value.id] += 1
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AnnAssign, ast.AugAssign, ast.For)) else []
        for target in targets:
            for name in (n.id for n in ast.walk(target) if isinstance(n, ast.Name)):
                counts[name] += 1
                if isinstance(node, ast.Assign) and isinstance(target, ast.Name):
                    nodes[name] = node.value
    return {name: value for name, value in nodes.items() if counts[name] == 1}


def _value(node: ast.expr, env: dict[str, ast.expr]) -> Any:
    """The literal `node` holds (module docstring), else its text ending in COMPUTED."""
    try:
        return _literal(node, env, depth=0)
    except _Unknown:
        return ast.unparse(node) + COMPUTED


def _literal(node: ast.expr, env: dict[str, ast.expr], depth: int) -> Any:
    if depth > 8:
        raise _Unknown
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name) and node.id in env:
        return _literal(env[node.id], env, depth + 1)
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(e, env, depth + 1) for e in node.elts]
    if isinstance(node, ast.Dict) and None not in node.keys:
        return {_literal(k, env, depth + 1): _literal(v, env, depth + 1) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.Dict):  # {**A, "k": v}: each spread a literal dict
        out: dict = {}
        for k, v in zip(node.keys, node.values):
            part = _literal(v, env, depth + 1)
            if k is None and not isinstance(part, dict):
                raise _Unknown
            out.update(part if k is None else {_literal(k, env, depth + 1): part})
        return out
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _literal(node.operand, env, depth + 1)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        a, b = _literal(node.left, env, depth + 1), _literal(node.right, env, depth + 1)
        if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b)):
            try:
                return _ARITHMETIC[type(node.op)](a, b)
            except (ZeroDivisionError, OverflowError):
                raise _Unknown from None
    raise _Unknown


def _set_after(tree: ast.AST, call: ast.Call, env: dict[str, ast.expr]) -> dict[str, Any]:
    """The attributes the program sets on the call's result after it (`args = GRPOConfig(...)` then
    `args.max_steps = 500`), in the program's order; none where the call is bound to no single name."""
    bound = next((node.targets[0].id for node in ast.walk(tree) if isinstance(node, ast.Assign) and node.value is call
                  and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)), None)
    if bound is None:
        return {}
    later = sorted((node for node in ast.walk(tree) if isinstance(node, (ast.Assign, ast.AugAssign, ast.Call))
                    and node.lineno > call.lineno), key=lambda node: (node.lineno, node.col_offset))
    out: dict[str, Any] = {}
    for node in later:
        if isinstance(node, ast.Call):  # setattr(args, "max_steps", 500)
            if (_named(node.func) == "setattr" and len(node.args) == 3 and isinstance(node.args[0], ast.Name)
                    and node.args[0].id == bound):
                name = _value(node.args[1], env)
                if not isinstance(name, str) or name.endswith(COMPUTED):
                    raise ConfigError("the program sets an attribute of its config that Python computes "
                                      f"({ast.unparse(node)}): save the config it builds as JSON and give that")
                out[name] = _value(node.args[2], env)
            continue
        for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == bound:
                out[target.attr] = (_value(node.value, env) if isinstance(node, ast.Assign)  # args.x += 1: computed
                                    else ast.unparse(node) + COMPUTED)
    return out
