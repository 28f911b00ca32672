"""The package's layers (docs/ARCHITECTURE.md), enforced on the source: imports flow down, never
into another package's private modules or names, theory/predict stay free of torch, fit never imports
predict, and no module imports itself through a circle of others.

Read from the syntax tree (no import is executed), so a lazy import inside a function and one under
`if TYPE_CHECKING:` count too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "gspo_dynamics"

# rank of each top-level package or module: a module may import its own package and lower ranks
# only (the base modules, rank 0, also each other)
LAYERS: dict[str, int] = {
    "__init__": 0, "_checks": 0, "_errors": 0, "_keys": 0, "_progress": 0, "_plain": 0, "real_logs": 0,  # base: shared by all
    "_config_file": 0, "_launch_script": 0, "_shell_words": 0, "_trl_launch": 0, "_python_config": 0,
    "theory": 1,  # the reduced-order model: numpy/scipy/sympy
    "objectives": 2, "logs": 2,  # losses; log readers
    "fit": 3,  # curves fitted to a log
    "predict": 4,  # everything `predict` computes: from a config, a pilot log (fitted by fit) and finished runs
    "sim": 5, "diagnose": 5,  # testbeds and prediction vs simulation; verdicts on a log
    "train": 6, "experiments": 6,  # the LLM trainer; figure data
    "plots": 7, "integrations": 7, "repro": 7, "report": 7,  # figures; the TRL callback; the claims runner; reports
    "cli": 8,  # the command: parses, calls one library function, prints
    "__main__": 9,  # `python -m gspo_dynamics`: the command
}
TORCH_FREE = ("theory", "predict")
# (importer, imported module) pairs allowed for now, each with the reason
KNOWN_PRIVATE_IMPORTS: set[tuple[str, str]] = set()


def _layer(relative: Path) -> str:
    return relative.parts[0] if len(relative.parts) > 1 else relative.stem


def _imports(path: Path):
    """(module, names) of every `import` / `from ... import` of gspo_dynamics in the file."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("gspo_dynamics"):
            yield node.module, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("gspo_dynamics"):
                    yield alias.name, []


def _target(module: str, names: list[str]) -> list[tuple[str, str | None]]:
    """(top-level package, first private part or None) of each thing imported."""
    parts = module.split(".")[1:]
    if not parts:  # `from gspo_dynamics import x`: x is the package or module imported
        return [(n, None) if n in LAYERS or n == "__version__" else (n, n) for n in names]
    private = next((p for p in parts[1:] if p.startswith("_")), None)
    if private is None:
        private = next((n for n in names if n.startswith("_")), None)
    return [(parts[0], private)]


SOURCES = sorted(PACKAGE.rglob("*.py"))


def _module_name(path: Path) -> str:
    """The dotted name of a source file; a package's __init__.py is the package."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in SOURCES}


def _resolve(module: str, names: list[str]) -> list[str]:
    """The modules one import statement loads: `from pkg import name` is pkg.name where that is a module, else
    pkg's __init__; `import a.b` is a.b. (The parent packages Python also runs first are not counted: every
    package's __init__ imports its own modules, so counting them would make every package a circle.)"""
    return [f"{module}.{n}" if f"{module}.{n}" in MODULES else module for n in names] if names else [module]


def _import_graph() -> dict[str, set[str]]:
    """Module -> the gspo_dynamics modules its import statements load (module-level, lazy and TYPE_CHECKING)."""
    return {name: {t for m, ns in _imports(path) for t in _resolve(m, ns) if t in MODULES} for name, path in MODULES.items()}


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of `graph`: its strongly connected components of more than one module, and any module
    that imports itself (Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = stack[stack.index(v):]
            del stack[stack.index(v):]
            if len(component) > 1 or v in graph.get(v, ()):
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def test_every_package_has_a_layer():
    assert {_layer(p.relative_to(PACKAGE)) for p in SOURCES} <= set(LAYERS)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_flow_down_and_stay_public(path):
    relative = path.relative_to(PACKAGE)
    own = _layer(relative)
    for module, names in _imports(path):
        for target, private in _target(module, names):
            if target == own or target == "__version__":
                continue
            assert LAYERS[target] < LAYERS[own] or LAYERS[own] == 0, f"{relative}: {own} (layer {LAYERS[own]}) imports {module} " \
                f"({target}, layer {LAYERS[target]}): imports flow down only"
            if (str(relative), module) in KNOWN_PRIVATE_IMPORTS:
                continue
            assert private is None, f"{relative}: imports {private} of {module}, private to {target}"


@pytest.mark.parametrize("layer", TORCH_FREE)
def test_theory_and_predict_never_import_torch(layer):
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not any(m == "torch" or m.startswith("torch.") for m in modules), f"{path.name} imports torch"


def test_the_known_exceptions_are_still_needed():
    found = {(str(p.relative_to(PACKAGE)), m) for p in SOURCES for m, _ in _imports(p)}
    assert KNOWN_PRIVATE_IMPORTS <= found, "an exception is no longer needed: remove it"


def test_the_architecture_note_names_every_layer():
    note = (PACKAGE.parent / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    rows = [line for line in note.splitlines() if line.startswith("| ")]
    for name, rank in LAYERS.items():
        if name != "__init__":
            row = next((r for r in rows if f"`{name}" in r.split("|")[2]), "")
            assert row.startswith(f"| {rank} |"), f"docs/ARCHITECTURE.md does not place {name} in layer {rank}"


def test_no_module_imports_itself_through_others():
    cycles = find_cycles(_import_graph())
    assert not cycles, "import circles (every import statement counts, lazy and TYPE_CHECKING ones too): " + \
        "; ".join(" <-> ".join(c) for c in cycles)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_a_packages_modules_import_their_siblings_not_their_own_package(path):
    """A module inside a package imports its siblings by module path, never the package's __init__ (or an
    enclosing package's), whose re-exports import it back."""
    name = _module_name(path)
    enclosing = {name.rsplit(".", k)[0] for k in range(1, name.count("."))}  # gspo_dynamics itself excepted
    for module, names in _imports(path):
        own = enclosing.intersection(_resolve(module, names))
        assert not own, f"{name} imports {sorted(own)[0]}'s __init__ ({module} import {', '.join(names)}): import the module"


def test_fit_never_imports_predict():
    """fit fits curves to logs; predict builds on it, never the reverse."""
    graph = _import_graph()
    for name in sorted(n for n in graph if n == "gspo_dynamics.fit" or n.startswith("gspo_dynamics.fit.")):
        wrong = sorted(t for t in graph[name] if t == "gspo_dynamics.predict" or t.startswith("gspo_dynamics.predict."))
        assert not wrong, f"{name} imports {wrong[0]}: fit sits below predict"


def test_the_cycle_finder_finds_planted_cycles():
    """A synthetic graph: a three-module circle, a module importing itself, a module that only imports into a
    circle (not part of it), and a chain; then the package's own graph with one import planted back from the
    fall chance into the pilot forecast that imports it."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}, "f": {"g"}, "g": set()}
    assert sorted(find_cycles(graph)) == [["a", "b", "c"], ["e"]]
    assert find_cycles({"a": {"b"}, "b": set()}) == []
    planted = {k: set(v) for k, v in _import_graph().items()}
    planted["gspo_dynamics.predict._fall_chance"].add("gspo_dynamics.predict._pilot")
    assert any({"gspo_dynamics.predict._pilot", "gspo_dynamics.predict._fall_chance"} <= set(c) for c in find_cycles(planted))


def test_an_import_resolves_to_the_submodule_it_names_else_the_package():
    assert _resolve("gspo_dynamics.theory", ["collapse"]) == ["gspo_dynamics.theory.collapse"]
    assert _resolve("gspo_dynamics.predict", ["pilot_forecast", "_pilot"]) == ["gspo_dynamics.predict",
                                                                                "gspo_dynamics.predict._pilot"]
    assert _resolve("gspo_dynamics.fit._fall", []) == ["gspo_dynamics.fit._fall"]
