"""The import rule: layers import downward only, the core imports no application module and has
no import cycles (TYPE_CHECKING ones included), and at most 6 modules lie loose at the top.

Every project module's imports are read with ``ast`` -- module-level ones and those inside
functions alike (a function-level import is still a dependency; it only moves the cost).
Layers, from the bottom (docs/ARCHITECTURE.md):

0 core       ``oasis_gym/*``: platform, population, recsys, metrics, the engine (``sim/``), the
             platform agents (``agents/``), the loose modules (``actions``, ``errors``, ...)
1 envs       ``envs/`` (``oasis_gym.envs``)
2 policies   ``policies/`` (``oasis_gym.policies``)
3 drivers    ``train/`` (``oasis_gym.train``) and the application's infrastructure (APPLICATION):
             ``oasis_gym/app/`` (what a command prints, its signals, the run loop) and
             ``oasis_gym/outputs/`` (the output rule)
4 scenarios  ``oasis_gym/scenarios/``
5 cli        ``oasis_gym/cli/``

A module may import its own layer or lower ones. The upward imports that still exist are
listed in KNOWN_UPWARD, each a debt to remove; the test fails when a new one appears and
when a listed one is gone (delete it from the list, so the list only shrinks).

Inside the core, the engine (``oasis_gym.sim``) and the platform agents (``oasis_gym.agents``)
keep rooms of their own: the engine imports nothing of the agents (they plug in through
``sim.agent_protocol``) and names none of them, neither imports gymnasium or pettingzoo (the
envs make the spaces), the agents read the engine only through its protocol and data types,
and the core has no import circle, not even one made of TYPE_CHECKING imports.

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
# the application's infrastructure (layer "drivers"): what a command prints (app.console), its
# signals (app.interrupts), the run loop (app.run), the output rule (outputs). The core imports
# none of it: what the core needs of it is the core's own (signal_hold: a journal's commit holds
# signals) or bound by name (oasis_gym.COMMAND_START, as the registry table binds the envs).
APPLICATION = ("oasis_gym.app", "oasis_gym.outputs")
# the modules that may lie loose at the top of oasis_gym/ (besides __init__ and __main__)
MAX_LOOSE_MODULES = 6

# (importer, imported module) pairs that go upward today. Each is a debt: remove the import,
# then its line here. None is left: a lower layer that must use a higher one's implementation
# names it in the registry table (`oasis_gym.SCENARIOS`, ...) instead of importing it.
KNOWN_UPWARD: set[tuple[str, str]] = set()

# module -> how many project imports it makes inside functions today (shrink-only; see above)
FUNCTION_LEVEL_IMPORTS: dict[str, int] = {
    "oasis_gym.policies.llm.backends": 3,
    "oasis_gym.policies.llm.backends.transformers_backend": 1,
    "oasis_gym.policies.llm.backends.vllm_backend": 1,
    "oasis_gym.app.run": 1,
    "oasis_gym.train.common": 1,
    "oasis_gym.train.ppo": 2,  # SB3 and torch (callbacks, slot policy) load when training starts
    "oasis_gym.train.v1": 2,  # (callbacks, VecEnv adapter)
    "oasis_gym.train.scratch_agents": 1,  # (callbacks: SB3 loads when training starts, not at `scratch`'s start)
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

    if under("oasis_gym.cli") or module == "oasis_gym.__main__":  # `python -m oasis_gym`: the command line
        return LAYERS.index("cli")
    if under("oasis_gym.scenarios"):
        return LAYERS.index("scenarios")
    if under("oasis_gym.train") or any(under(app) for app in APPLICATION):
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
    assert "oasis_gym.sim.simulation" in modules and "oasis_gym.envs.social_env" in modules
    assert "oasis_gym.policies.abm" in modules and "oasis_gym.scenarios.scenario" in modules
    assert "oasis_gym.agents.moderator" in modules
    assert layer("oasis_gym.platform.platform") == 0 and layer("oasis_gym.cli") == 5
    assert layer("oasis_gym.sim.simulation") == 0 and layer("oasis_gym.agents.recommender") == 0
    assert "oasis_gym.sim.content" in imports_of("oasis_gym.sim.simulation")


def test_imports_go_downward_only():
    found = upward_imports()
    new = sorted(found - KNOWN_UPWARD)
    assert not new, "upward imports (a lower layer must not know a higher one): " + "; ".join(
        f"{m} ({LAYERS[layer(m)]}) -> {t} ({LAYERS[layer(t)]})" for m, t in new
    )
    gone = sorted(KNOWN_UPWARD - found)
    assert not gone, f"these debts are paid: delete them from KNOWN_UPWARD: {gone}"


def _cycles(nodes: set[str], runtime: bool = True) -> list[list[str]]:
    """Groups of modules that import each other (strongly connected components with more
    than one module; Tarjan's algorithm). `runtime`: imports under TYPE_CHECKING don't count."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(imports_of(v, runtime=runtime) & nodes):
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


def test_no_import_cycles_in_the_core_type_checking_ones_included():
    core = {m for m in project_modules() if layer(m) == 0}
    cycles = _cycles(core, runtime=False)
    new = [c for c in cycles if c not in KNOWN_CYCLES]
    assert not new, f"import cycles in the core: {new}"
    gone = [c for c in KNOWN_CYCLES if c not in cycles]
    assert not gone, f"these cycles are broken (or changed): update KNOWN_CYCLES: {gone}"


def test_the_checker_sees_function_level_and_relative_imports():
    # function-level imports count: train/ppo imports slot_policy (torch) inside a function,
    # and policies.abm imports the engine at module level
    assert function_level_imports("oasis_gym.train.ppo") >= 1
    assert "oasis_gym.train.slot_policy" in imports_of("oasis_gym.train.ppo")
    assert "oasis_gym.sim" in imports_of("oasis_gym.policies.abm")
    # TYPE_CHECKING imports count (for layers and for cycles) and can be told apart:
    # metrics.online names the engine's types under TYPE_CHECKING only
    assert "oasis_gym.sim" in imports_of("oasis_gym.metrics.online")
    assert "oasis_gym.sim" not in imports_of("oasis_gym.metrics.online", runtime=True)


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


ENGINE, AGENTS = "oasis_gym.sim", "oasis_gym.agents"


def _in(module: str, pkg: str) -> bool:
    return module == pkg or module.startswith(pkg + ".")


def third_party_imports(module: str) -> set[str]:
    """Top-level names of the non-project packages `module` imports anywhere in its file."""
    path = project_modules()[module]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.add(node.module.split(".")[0])
    return out - {"oasis_gym"}


def test_the_engine_imports_nothing_of_the_agents_and_names_none():
    engine = [m for m in project_modules() if _in(m, ENGINE)]
    assert len(engine) >= 8
    found = sorted((m, t) for m in engine for t in imports_of(m) if _in(t, AGENTS))
    assert not found, f"the engine imports the platform agents (plug them in by protocol): {found}"
    names = ("recommender_0", "moderator_0")
    named = sorted(m for m in engine if any(n in project_modules()[m].read_text() for n in names))
    assert not named, f"the engine names a platform agent: {named}"


def test_the_agents_read_the_engine_only_through_its_protocol():
    agents = [m for m in project_modules() if _in(m, AGENTS)]
    assert len(agents) >= 4
    allowed = {f"{ENGINE}.agent_protocol", f"{ENGINE}.batches"}
    found = sorted((m, t) for m in agents for t in imports_of(m) if _in(t, ENGINE) and t not in allowed)
    assert not found, f"the platform agents import the engine beyond its protocol: {found}"


def test_neither_the_engine_nor_the_agents_import_gymnasium_or_pettingzoo():
    rooms = [m for m in project_modules() if _in(m, ENGINE) or _in(m, AGENTS)]
    found = [(m, sorted(third_party_imports(m) & {"gymnasium", "pettingzoo"})) for m in rooms]
    found = [(m, names) for m, names in found if names]
    assert not found, f"spaces belong to the envs (envs/agent_spaces.py): {found}"


def test_the_model_is_the_floor_of_both_paths_and_imports_numpy_only():
    """`oasis_gym.model` (issue 51: one home per mechanism) sits below the fast path and the
    platform path alike: it imports no other project module and no third-party package but numpy."""
    model = {m for m in project_modules() if m == "oasis_gym.model" or m.startswith("oasis_gym.model.")}
    assert "oasis_gym.model.rng" in model and "oasis_gym.model.seeds" in model
    for m in sorted(model):
        assert imports_of(m) <= model, f"{m} imports {sorted(imports_of(m) - model)}"
        tree = ast.parse(project_modules()[m].read_text(encoding="utf-8"))
        third_party = {
            (n.module or "" if isinstance(n, ast.ImportFrom) else a.name).split(".")[0]
            for n in ast.walk(tree)
            if isinstance(n, ast.Import | ast.ImportFrom) and not getattr(n, "level", 0)
            for a in n.names
        } - {"numpy", "__future__", "oasis_gym", "dataclasses", "typing", "collections", "math"}
        assert not third_party, f"{m} imports {sorted(third_party)}"
    # both paths build on it
    assert "oasis_gym.model.rng" in imports_of("oasis_gym.batched.users")
    assert "oasis_gym.model.seeds" in imports_of("oasis_gym.envs.platform_agent_env")


def test_every_core_package_imports_first_in_a_fresh_interpreter():
    """A package imported before any other (a user's first `import`) must not meet a circle through
    a package's `__init__`, which the graph above does not see: `oasis_gym.outputs` once failed
    so (outputs.files -> platform.journal_lock -> platform/__init__ -> oasis_import -> outputs)."""
    import subprocess
    import sys

    packages = sorted(
        m
        for m, path in project_modules().items()
        if path.name == "__init__.py"
        and m != "oasis_gym"
        and (layer(m) == 0 or any(_in(m, app) for app in APPLICATION))
    )
    assert {"oasis_gym.outputs", "oasis_gym.platform", "oasis_gym.model"} <= set(packages)
    for m in packages:
        done = subprocess.run([sys.executable, "-c", f"import {m}"], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"import {m} alone fails:\n{done.stderr[-1500:]}"


def test_at_most_six_modules_lie_loose_at_the_top():
    """A module at ``oasis_gym/``'s top level belongs to no room: only the core's vocabulary and
    small shared tools may (issue 55); everything else lives in a package named for its room."""
    loose = sorted(p.stem for p in (ROOT / "oasis_gym").glob("*.py") if p.stem not in ("__init__", "__main__"))
    assert "actions" in loose and "errors" in loose
    assert len(loose) <= MAX_LOOSE_MODULES, f"{len(loose)} loose modules at oasis_gym/: {loose}"


def test_the_core_imports_no_application_module():
    """The core (layer 0) imports nothing of the application's infrastructure (APPLICATION: a
    command's console, signals and run loop, the output rule), TYPE_CHECKING imports included."""
    modules = project_modules()
    app = sorted(m for m in modules if any(_in(m, a) for a in APPLICATION))
    expected = {"oasis_gym.app.console", "oasis_gym.app.interrupts", "oasis_gym.app.run", "oasis_gym.outputs.folder"}
    assert expected <= set(app) and all(layer(m) == LAYERS.index("drivers") for m in app)
    core = sorted(m for m in modules if layer(m) == 0)
    found = sorted((m, t) for m in core for t in imports_of(m) if any(_in(t, a) for a in APPLICATION))
    assert not found, f"the core imports the application (make it the core's, or bind it by name): {found}"
    # the two that did: a journal's commit holds signals through the core's own signal_hold,
    # and `import oasis_gym` binds the command's start-up by name
    assert "oasis_gym.signal_hold" in imports_of("oasis_gym.platform.journal")
    assert "oasis_gym.signal_hold" in imports_of("oasis_gym.app.interrupts")
