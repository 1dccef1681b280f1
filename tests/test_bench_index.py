"""bench/ is an indexed suite of commands, not code the tests lean on (issue 55).

Every bench script is listed in bench/README.md and every path listed there exists; no test
imports a bench script (a test runs one as a command: tests/bench_scripts.py's `run_bench`),
read from the tests' syntax trees: no import of a bench module's name, no bench folder put
on sys.path.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from bench_scripts import BENCH, ROOT, bench_scripts

TESTS = Path(__file__).resolve().parent
FOLDERS = ("throughput", "oasis", "research")


def indexed_paths() -> list[str]:
    """The script paths bench/README.md names (`bench/<folder>/<name>.py`), in its order."""
    return re.findall(r"`(bench/[\w/]+\.py)`", (BENCH / "README.md").read_text())


def test_every_bench_script_is_in_the_index_and_every_listed_path_exists():
    listed = indexed_paths()
    assert sorted(set(bench_scripts()) - set(listed)) == []  # a script nobody can find
    assert [p for p in listed if not (ROOT / p).is_file()] == []  # an index line to nowhere


def test_bench_scripts_live_in_their_purpose_folders():
    assert [p for p in bench_scripts() if p.split("/")[1] not in FOLDERS] == []


def bench_imports(tree: ast.AST, names: set[str]) -> list[str]:
    """What in a test's syntax tree reaches into bench/: an import of a bench script's module
    name (or of ``bench``), or a sys.path entry / ``syspath_prepend`` whose expression names bench."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] in names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] in names:
                found.append(node.module)
        elif isinstance(node, ast.Call):
            target = ast.unparse(node.func)
            on_path = target.startswith("sys.path.") or target.endswith("syspath_prepend")
            if on_path and any("bench" in ast.unparse(a).lower() for a in node.args):
                found.append(ast.unparse(node))
            elif target.endswith("import_module"):
                found += [ast.unparse(node) for a in node.args if isinstance(a, ast.Constant) and a.value in names]
    return found


def test_no_test_imports_a_bench_script():
    names = {Path(p).stem for p in bench_scripts()} | {"bench"}
    offenders = {}
    for path in sorted(TESTS.rglob("*.py")):
        found = bench_imports(ast.parse(path.read_text(), str(path)), names)
        if found:
            offenders[path.name] = found
    assert offenders == {}


def test_the_scan_finds_each_way_a_test_used_to_reach_into_bench():
    names = {"recommender_personalization", "bench"}
    src = """
import sys
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import recommender_personalization as bench
from recommender_personalization import kind_features
monkeypatch.syspath_prepend(str(ROOT / "bench"))
importlib.import_module("recommender_personalization")
"""
    assert len(bench_imports(ast.parse(src), names)) == 5
    assert bench_imports(ast.parse("from oasis_gym.train.privileged import kind_features"), names) == []
