"""docs/ARCHITECTURE.md stays true of the tree (issue 55).

- "Where is X": every `file.py` and `file.py:name` it names exists (the file, and the name
  defined in it: a function, class, method or module-level value);
- "Modules": every .py module under oasis_gym/, envs/, policies/ and train/ is named there (an
  ``__init__.py`` by its folder), and every module path it names exists;
- the import drawing is what tests/import_drawing.py draws from the code, and it shows the
  model once, under the fast path and the platform path.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from import_drawing import mermaid, package_imports

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "ARCHITECTURE.md"
FOLDERS = ("oasis_gym", "envs", "policies", "train")
TOKEN = re.compile(r"`([^`\s]+)`")
QUESTIONS = (
    "A like reaching SQLite",
    "The user reward",
    "The recommender's action to a ranking",
    "The moderator's observation",
    "An LLM reply to an action",
    "A task's tiers",
)


def section(title: str, text: str | None = None) -> str:
    """The text of the page's section `title` (a ``## `` heading), up to the next one."""
    text = PAGE.read_text(encoding="utf-8") if text is None else text
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def defined(path: Path, dotted: str) -> bool:
    """Whether the module at `path` defines `dotted` (``f``, ``Class``, ``Class.method``, a
    module-level name)."""
    body = ast.parse(path.read_text(encoding="utf-8")).body
    for name in dotted.split("."):
        found = None
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
                found = node
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                    found = node
        if found is None:
            return False
        body = getattr(found, "body", [])
    return True


def test_where_is_x_answers_the_six_questions_with_files_and_names_that_exist():
    text = section("Where is X")
    for question in QUESTIONS:
        assert f"**{question}.**" in text, question
    named = [t for t in TOKEN.findall(text) if re.fullmatch(r"[\w/]+\.py(:[\w.]+)?", t)]
    assert len(named) >= 12
    missing = []
    for token in named:
        file, _, name = token.partition(":")
        path = ROOT / file
        if not path.is_file() or (name and not defined(path, name)):
            missing.append(token)
    assert missing == []


def test_defined_reads_functions_methods_and_values():
    path = ROOT / "oasis_gym" / "model" / "tiers.py"
    assert defined(path, "tier") and defined(path, "Dynamics") and defined(path, "TIERS_V4")
    assert defined(ROOT / "oasis_gym" / "batched" / "tasks.py", "ModeratorTask.observe")
    assert not defined(path, "no_such_name") and not defined(path, "Dynamics.no_such_method")


# ----------------------------------------------------------------------------- the module lines


def project_files() -> set[str]:
    """Every .py file of the four package folders, as a path from the repository root."""
    return {p.relative_to(ROOT).as_posix() for folder in FOLDERS for p in (ROOT / folder).rglob("*.py")}


def _folders(line: str) -> list[str]:
    return [t.rstrip("/") for t in TOKEN.findall(line) if (ROOT / t.rstrip("/")).is_dir() or t.endswith("/")]


def _join(base: str, path: str) -> str:
    return Path(base, path).as_posix().removeprefix("./")


def module_names(text: str) -> tuple[set[str], list[str]]:
    """What the Modules section `text` names: (the files its paths resolve to, the .py paths
    that resolve to no file). A bullet's path resolves against the repository root,
    `oasis_gym/`, the folders its ``###`` heading and the paragraph above it name (and their
    parents), and the folders named in the bullet itself (``llm/backends/``:
    `vllm_backend.py`; `recsys/reddit.py`, `twitter.py`); a folder names its ``__init__.py``."""
    heading: list[str] = []
    para: list[str] = []
    in_para = False
    blocks: list[tuple[str, list[str]]] = []  # (a bullet's text, the folders above it)
    for line in text.splitlines():
        if line.startswith("### "):
            heading, para, in_para = _folders(line), [], False
            blocks.append((line, []))
        elif line.startswith("- "):
            blocks.append((line, [*heading, *para]))
            in_para = False
        elif line.startswith("  ") and blocks:
            blocks[-1] = (blocks[-1][0] + " " + line.strip(), blocks[-1][1])
        elif line.strip():
            para = [*para, *_folders(line)] if in_para else _folders(line)
            in_para = True
            blocks.append((line, []))
        else:
            in_para = False
    named: set[str] = set()
    dangling: list[str] = []
    for block, above in blocks:
        bases = {"", "oasis_gym"} | {b for f in above for b in (f, Path(f).parent.as_posix())}
        tokens = TOKEN.findall(block)  # its folders, and those of its paths (`a/b.py`, `c.py`)
        own = [t.rstrip("/") for t in tokens if t.endswith("/")] + [
            Path(t).parent.as_posix() for t in tokens if "/" in t
        ]
        bases |= {_join(b, f) for b in list(bases) for f in own if (ROOT / b / f).is_dir()}
        for token in tokens:
            hits = [_join(b, token.rstrip("/")) for b in bases if (ROOT / b / token.rstrip("/")).exists()]
            named |= {f"{h}/__init__.py" if (ROOT / h).is_dir() else h for h in hits}
            if token.endswith(".py") and not hits:
                dangling.append(token)
    return named & project_files(), dangling


def test_every_module_has_a_line_and_every_module_line_names_a_module():
    named, dangling = module_names(section("Modules"))
    assert dangling == []  # a line about a module that is not there
    assert sorted(project_files() - named) == []  # a module nobody can find on the map


def test_the_module_scan_resolves_by_context_and_reports_what_is_missing():
    text = """
### policies (`policies/`, `oasis_gym.policies`)

- `llm/backends/`: `vllm_backend.py` (in-process vLLM)
- `gone.py`: a module no longer there

The engine (`oasis_gym/sim/`):

- `simulation.py`: `Simulation`
"""
    named, dangling = module_names(text)
    assert {"policies/llm/backends/vllm_backend.py", "policies/llm/backends/__init__.py"} <= named
    assert "oasis_gym/sim/simulation.py" in named and dangling == ["gone.py"]


# ----------------------------------------------------------------------------- the import drawing


def test_the_import_drawing_in_the_page_is_what_the_code_draws():
    blocks = re.findall(r"```mermaid\n(.*?)\n```", PAGE.read_text(encoding="utf-8"), re.S)
    assert blocks == [mermaid()], "the imports changed: paste `python tests/import_drawing.py` into the page"


def test_the_drawing_shows_the_model_once_under_both_paths():
    edges = package_imports()
    assert ("batched", "model") in edges and ("world", "model") in edges  # the fast path, the platform path
    assert not [dst for src, dst in edges if src == "model"]  # the floor: it imports no package
    assert mermaid().count('model["model/"]') == 1
