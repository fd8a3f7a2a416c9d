"""The layers of timely import only the layers below them.

Each module of ``timely/`` belongs to a layer (see the README, "How it is
built"); this walks every import in the source (``.py`` by its AST, ``.pyx``
and ``.pxd`` by their ``import``/``cimport`` lines, lazy imports inside
functions included) and fails on an import of a layer that is not below, and
on any import of a name starting with ``_`` from another package.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "timely"

# What each part of timely may import (itself always included).
BELOW = {
    "errors": set(),
    "progress": {"errors"},
    "container": {"errors", "progress"},
    "communication": {"errors", "progress", "container"},
    "dataflow": {"errors", "progress", "container", "communication"},
}
BELOW["runtime"] = {"errors", "progress", "container", "communication", "dataflow"}
FEATURES = {"capture", "synchronization", "logging", "viz", "spark", "algorithms"}
for _feature in FEATURES:
    BELOW[_feature] = BELOW["runtime"] | {"runtime"} | FEATURES
BELOW["examples"] = set(BELOW) | {"examples", "root"}
BELOW["root"] = set(BELOW)          # timely/__init__.py re-exports the public names

# Modules at the runtime's level that live in a feature package: what the
# worker records as it runs (the Rust crate keeps these beside the worker).
RUNTIME_MODULES = {"timely.worker", "timely.launch", "timely.config",
                   "timely.logging.events", "timely.logging.registry"}


def layer_of(module: str) -> str:
    if module in RUNTIME_MODULES:
        return "runtime"
    parts = module.split(".")
    if parts == ["timely"]:
        return "root"
    name = parts[1]
    if name in BELOW:
        return name
    raise AssertionError(f"{module} belongs to no layer: add it to tests/test_layers.py")


def package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def resolve(module: str, target: str, level: int, is_package: bool) -> str:
    if not level:
        return target
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def imports(path: Path):
    """``(line, imported module, [names])`` of every import in ``path``."""
    module = module_name(path)
    text = path.read_text()
    if path.suffix == ".py":
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield node.lineno, alias.name, []
            elif isinstance(node, ast.ImportFrom):
                target = resolve(module, node.module or "", node.level,
                                 path.name == "__init__.py")
                yield node.lineno, target, [a.name for a in node.names]
        return
    pattern = re.compile(r"^\s*(?:from\s+([\w.]+)\s+c?import\s+\(?\s*([\w, ]*)|c?import\s+([\w.]+))")
    for lineno, line in enumerate(text.splitlines(), 1):
        match = pattern.match(line)
        if match:
            if match.group(3):
                yield lineno, match.group(3), []
            else:
                names = [n.strip().split(" ")[0] for n in match.group(2).split(",") if n.strip()]
                yield lineno, match.group(1), names


def sources():
    for path in sorted(PACKAGE.rglob("*")):
        if path.suffix in (".py", ".pyx", ".pxd") and "__pycache__" not in path.parts:
            yield path


def violations():
    found = []
    for path in sources():
        module = module_name(path)
        mine = layer_of(module)
        for lineno, target, names in imports(path):
            if not target.startswith("timely"):
                continue
            where = f"{path.relative_to(ROOT)}:{lineno}"
            # `from timely.x import y` may name a submodule y.
            targets = [target] if not names else [
                f"{target}.{n}" if (PACKAGE.parent / f"{target}.{n}".replace(".", "/")).with_suffix(
                    ".py").exists() or (PACKAGE.parent / f"{target}.{n}".replace(".", "/")).is_dir()
                else target for n in names]
            for t in set(targets):
                theirs = layer_of(t) if t != "timely" else "root"
                if theirs != mine and theirs not in BELOW[mine]:
                    found.append(f"{where}: {module} ({mine}) imports {t} ({theirs})")
            if package_of(target) != package_of(module) or target == "timely":
                for n in names:
                    if n.startswith("_") and n != "__version__":
                        found.append(f"{where}: {module} imports private {n} from {target}")
                if any(part.startswith("_") for part in target.split(".")[1:]):
                    found.append(f"{where}: {module} imports private module {target}")
    return found


def test_every_import_goes_down_the_layers():
    found = violations()
    assert not found, "imports against the layers:\n" + "\n".join(found)


def test_the_walk_sees_a_violation():
    # The checker itself: an upward import and a private one are found.
    assert "dataflow" not in BELOW["progress"]
    assert layer_of("timely.progress.frontier") == "progress"
    assert layer_of("timely.logging.stream") == "logging"
    assert layer_of("timely.logging.registry") == "runtime"
    assert resolve("timely.progress.subgraph", "frontier", 1, False) == "timely.progress.frontier"


def _loaded_after(statement: str) -> set:
    code = f"import sys; {statement}; print('\\n'.join(sorted(m for m in sys.modules if m.startswith('timely'))))"
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    return set(run.stdout.split())


@pytest.mark.parametrize("package, forbidden", [
    ("timely.progress", ("dataflow", "communication", "capture", "container", "worker")),
    ("timely.container", ("dataflow", "communication", "capture", "worker")),
    ("timely.communication", ("dataflow", "capture", "worker", "launch")),
])
def test_a_layer_loads_nothing_above_it(package, forbidden):
    loaded = _loaded_after(f"import {package}")
    above = sorted(m for m in loaded if package_of(m) in forbidden)
    assert not above, f"import {package} loads {above}"


def test_import_timely_loads_no_feature():
    # Features load when they are used; `import timely` stays light (its time
    # is measured by benchmarks/test_import.py).
    loaded = _loaded_after("import timely")
    heavy = sorted(m for m in loaded if package_of(m) in FEATURES)
    assert not heavy, f"import timely loads {heavy}"
