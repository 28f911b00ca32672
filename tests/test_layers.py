"""The package's layers (docs/ARCHITECTURE.md), enforced on the source: imports flow down, never
into another package's private modules or names, and theory/predict stay free of torch.

Read from the syntax tree (no import is executed), so a lazy import inside a function counts too.
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
    "theory": 1,  # the reduced-order model: numpy/scipy/sympy
    "predict": 2, "objectives": 2, "logs": 2,  # predictions from theory; losses; log readers
    "sim": 3, "fit": 3,  # testbeds; closed-form fits
    "train": 4, "diagnose": 4, "experiments": 4,  # the LLM trainer; verdicts on a log; figure data
    "plots": 5, "integrations": 5, "repro": 5,  # figures; the TRL callback; the claims runner
    "cli": 6,  # the command: parses, calls one library function, prints
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
