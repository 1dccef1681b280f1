"""The import rule: layers import downward only, and the core has no import cycles.

Every project module's imports are read with ``ast`` -- module-level ones and those inside
functions alike (a function-level import is still a dependency; it only moves the cost).
Layers, from the bottom (docs/ARCHITECTURE.md):

0 core       ``oasis_gym/*``: platform, population, recsys, metrics, simulation, content, ...
1 envs       ``envs/`` (``oasis_gym.envs``)
2 policies   ``policies/`` (``oasis_gym.policies``)
3 drivers    ``train/`` (``oasis_gym.train``) and ``oasis_gym/run.py`` (the run loop)
4 scenarios  ``oasis_gym/scenarios/``
5 cli        ``oasis_gym/cli/``

A module may import its own layer or lower ones. The upward imports that still exist are
listed in KNOWN_UPWARD, each a debt to remove; the test fails when a new one appears and
when a listed one is gone (delete it from the list, so the list only shrinks).

Project imports inside functions are for what must stay lazy (an optional extra behind the
module, a command line's start-up time, a cycle not yet broken): FUNCTION_LEVEL_IMPORTS caps
them per module, with the same shrink-only rule.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# package name -> folder (pyproject's package-dir)
PACKAGE_DIRS = {
    "oasis_gym.envs": "envs",
    "oasis_gym.policies": "policies",
    "oasis_gym.train": "train",
    "oasis_gym": "oasis_gym",
}
LAYERS = ("core", "envs", "policies", "drivers", "scenarios", "cli")

# (importer, imported module) pairs that go upward today. Each is a debt: remove the import,
# then its line here. None is left: a lower layer that must use a higher one's implementation
# names it in the registry table (`oasis_gym.SCENARIOS`, ...) instead of importing it.
KNOWN_UPWARD: set[tuple[str, str]] = set()

# module -> how many project imports it makes inside functions today (shrink-only; see above)
FUNCTION_LEVEL_IMPORTS: dict[str, int] = {
    "oasis_gym.cli": 3,
    "oasis_gym.cli.parser": 4,
    "oasis_gym.cli.run": 8,
    "oasis_gym.policies.factory": 2,
    "oasis_gym.policies.llm.backends": 3,
    "oasis_gym.policies.llm.backends.transformers_backend": 1,
    "oasis_gym.policies.llm.backends.vllm_backend": 1,
    "oasis_gym.policies.llm.defaults": 5,
    "oasis_gym.run": 1,
    "oasis_gym.scenarios.cli": 1,
    "oasis_gym.scenarios.spread_calibration": 2,
    "oasis_gym.train.cli": 5,
    "oasis_gym.train.common": 6,
    "oasis_gym.train.evaluate": 3,
    "oasis_gym.train.moderator": 7,
    "oasis_gym.train.recommender": 4,
    "oasis_gym.train.report": 1,
    "oasis_gym.train.rllib_recommender": 4,
}

# Groups of core modules that import each other (at run time) today; the same shrink-only rule.
KNOWN_CYCLES: list[list[str]] = []


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT)
    for pkg, folder in sorted(PACKAGE_DIRS.items(), key=lambda kv: kv[0] == "oasis_gym"):
        if rel.parts[0] == folder:
            parts = [*pkg.split("."), *rel.parts[1:]]
            break
    else:  # pragma: no cover
        raise AssertionError(path)
    parts[-1] = parts[-1][:-3]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def project_modules() -> dict[str, Path]:
    out = {}
    for folder in PACKAGE_DIRS.values():
        for path in sorted((ROOT / folder).rglob("*.py")):
            out[_module_name(path)] = path
    return out


def layer(module: str) -> int:
    """Layer index of a project module."""

    def under(pkg: str) -> bool:
        return module == pkg or module.startswith(pkg + ".")

    if under("oasis_gym.cli"):
        return LAYERS.index("cli")
    if under("oasis_gym.scenarios"):
        return LAYERS.index("scenarios")
    if under("oasis_gym.train") or under("oasis_gym.run"):
        return LAYERS.index("drivers")
    if under("oasis_gym.policies"):
        return LAYERS.index("policies")
    if under("oasis_gym.envs"):
        return LAYERS.index("envs")
    return LAYERS.index("core")


def _resolve(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _type_checking_nodes(tree: ast.AST) -> set[ast.AST]:
    """Import nodes under ``if TYPE_CHECKING:`` (annotations only: never run)."""
    out: set[ast.AST] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for stmt in node.body:
                out.update(ast.walk(stmt))
    return out


@cache
def imports_of(module: str, runtime: bool = False) -> frozenset[str]:
    """Project modules `module` imports anywhere in its file (the most specific name known);
    `runtime`: without the imports under ``if TYPE_CHECKING:``."""
    modules = project_modules()
    path = modules[module]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    skip = _type_checking_nodes(tree) if runtime else set()
    out = set()
    for node in ast.walk(tree):
        if node in skip:
            continue
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, path.name == "__init__.py", node)
            # `from pkg import sub` imports the submodule pkg.sub when there is one
            names = [f"{target}.{a.name}" if f"{target}.{a.name}" in modules else target for a in node.names]
        else:
            continue
        for name in names:
            while name and name not in modules:  # `import a.b.c` of a name inside a module
                name = name.rpartition(".")[0]
            if name and name != module:
                out.add(name)
    return frozenset(out)


def upward_imports() -> set[tuple[str, str]]:
    return {(m, t) for m in project_modules() for t in imports_of(m) if layer(t) > layer(m)}


def test_every_project_module_is_mapped():
    modules = project_modules()
    assert "oasis_gym.simulation" in modules and "oasis_gym.envs.social_env" in modules
    assert "oasis_gym.policies.abm" in modules and "oasis_gym.scenarios.scenario" in modules
    assert layer("oasis_gym.platform.platform") == 0 and layer("oasis_gym.cli") == 5
    assert "oasis_gym.content" in imports_of("oasis_gym.simulation")


def test_imports_go_downward_only():
    found = upward_imports()
    new = sorted(found - KNOWN_UPWARD)
    assert not new, "upward imports (a lower layer must not know a higher one): " + "; ".join(
        f"{m} ({LAYERS[layer(m)]}) -> {t} ({LAYERS[layer(t)]})" for m, t in new
    )
    gone = sorted(KNOWN_UPWARD - found)
    assert not gone, f"these debts are paid: delete them from KNOWN_UPWARD: {gone}"


def _cycles(nodes: set[str]) -> list[list[str]]:
    """Groups of modules that import each other at run time (strongly connected components
    with more than one module; Tarjan's algorithm). Imports under TYPE_CHECKING don't count."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(imports_of(v, runtime=True) & nodes):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles_in_the_core():
    core = {m for m in project_modules() if layer(m) == 0}
    cycles = _cycles(core)
    new = [c for c in cycles if c not in KNOWN_CYCLES]
    assert not new, f"import cycles in the core: {new}"
    gone = [c for c in KNOWN_CYCLES if c not in cycles]
    assert not gone, f"these cycles are broken (or changed): update KNOWN_CYCLES: {gone}"


def test_the_checker_sees_function_level_and_relative_imports():
    # function-level imports count: scenarios/spread_calibration imports load_scenario inside a
    # function, and policies.abm imports the core at module level
    assert "oasis_gym.scenarios.scenario" in imports_of("oasis_gym.scenarios.spread_calibration")
    assert "oasis_gym.simulation" in imports_of("oasis_gym.policies.abm")
    # TYPE_CHECKING imports count for layers, not for run-time cycles
    assert "oasis_gym.simulation" in imports_of("oasis_gym.step_atomic")
    assert "oasis_gym.simulation" not in imports_of("oasis_gym.step_atomic", runtime=True)
    # so simulation <-> step_atomic (a TYPE_CHECKING import one way) is no cycle
    assert _cycles({"oasis_gym.simulation", "oasis_gym.step_atomic"}) == []


def function_level_imports(module: str) -> int:
    """How many project imports (``from oasis_gym...`` or relative) `module` makes inside
    functions (TYPE_CHECKING blocks excluded)."""
    path = project_modules()[module]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    skip = _type_checking_nodes(tree)
    n = 0
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            for node in ast.walk(fn):
                if node in skip:
                    continue
                if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("oasis_gym")):
                    n += 1
                elif isinstance(node, ast.Import) and any(a.name.startswith("oasis_gym") for a in node.names):
                    n += 1
    return n


def test_function_level_project_imports_only_shrink():
    found = {m: n for m in project_modules() if (n := function_level_imports(m))}
    grown = {m: (FUNCTION_LEVEL_IMPORTS.get(m, 0), n) for m, n in found.items() if n > FUNCTION_LEVEL_IMPORTS.get(m, 0)}
    assert not grown, f"new function-level project imports (import at module level): {grown}"
    shrunk = {m: (n, found.get(m, 0)) for m, n in FUNCTION_LEVEL_IMPORTS.items() if found.get(m, 0) < n}
    assert not shrunk, f"fewer function-level imports than listed: lower FUNCTION_LEVEL_IMPORTS: {shrunk}"
