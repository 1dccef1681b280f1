"""The newcomer's material runs as written: every script in examples/ and every code block of
the guides in docs/ (all but ARCHITECTURE.md and one-world-plan.md, which hold no code to run).

Examples: each script runs in a subprocess with its smallest settings, its output folder under
`tmp_path`, its working folder and TMPDIR there too, so the test sees every file it writes;
it must exit 0, print its human summary (`Summary:`, the outputs, `Try next:`) and write
nothing outside the folder it was given.

Guides: the blocks of one page run in order, in one empty folder, as a reader following the
page would (a later block may read what an earlier one wrote): ```python blocks with the
venv's interpreter, ```bash blocks whose first command is `oasis-gym` or `python` through
bash with the venv first on PATH. A block with `<!-- not run: reason -->` on the line before
it is skipped, and then only the `oasis-gym` options it names are checked against the
command's `--help`. Like tests/test_readme.py for README.md, whose extraction is a one-line
regex for python blocks: this file needs the bash blocks and the markers too, so it has its
own small parser (`code_blocks`).

The hybrid LLM example runs against real OpenAI-compatible servers started as
tests/test_llm_serve.py (`transformers serve` hosting the tiny random Llama of
tests/llm_fixtures.py; unmarked, like that file) and tests/test_llm_vllm.py (vLLM's server,
marked `vllm` like that file) start them.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_llm_serve import served  # noqa: F401 - the transformers-serve fixture, reused

pytest_plugins = ["llm_fixtures"]

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
DOCS = ROOT / "docs"
# the guides (every page but the map and the plan of issue 51, which hold no code to run: the map's
# one block is its import drawing, checked by tests/test_architecture_doc.py)
DESIGN_PAGES = ("ARCHITECTURE.md", "one-world-plan.md")
GUIDES = sorted(p for p in DOCS.glob("*.md") if p.name not in DESIGN_PAGES)
VENV_BIN = Path(sys.executable).parent
NOT_RUN = re.compile(r"^<!--\s*not run:\s*(\S.*?)\s*-->\s*$")
FENCE = re.compile(r"^```(\w*)\s*$")


# --------------------------------------------------------------------------- the guides' blocks


@dataclass
class Block:
    """One fenced code block of a page."""

    page: str
    line: int  # of the opening fence, 1-based
    lang: str
    code: str
    skip_reason: str | None  # the `<!-- not run: ... -->` reason above it, if any

    @property
    def label(self) -> str:
        return f"{self.page}:{self.line} ({self.lang})"

    def commands(self) -> list[str]:
        """The shell commands of a bash block (comment and blank lines left out)."""
        return [ln.strip() for ln in self.code.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]

    @property
    def runnable(self) -> bool:
        if self.skip_reason is not None:
            return False
        if self.lang == "python":
            return True
        if self.lang == "bash":
            first = self.commands()[0].split()[0] if self.commands() else ""
            return first == "oasis-gym" or first.startswith("python")
        return False


def code_blocks(path: Path) -> list[Block]:
    """Every fenced block of a markdown file, with the not-run marker of the line above it."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, lang = i, m.group(1)
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        if j == len(lines):
            raise AssertionError(f"{path.name}:{start + 1}: unclosed code block")
        above = lines[start - 1] if start else ""
        marker = NOT_RUN.match(above)
        blocks.append(Block(path.name, start + 1, lang, "\n".join(lines[start + 1 : j]) + "\n", marker and marker[1]))
        i = j + 1
    return blocks


def run_block(block: Block, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run one block in `cwd` (python: the venv's interpreter; bash: `set -e`, venv first on PATH)."""
    env = dict(os.environ, PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}", MPLBACKEND="Agg")
    if block.lang == "python":
        cmd = [sys.executable, "-c", block.code]
    else:
        cmd = ["bash", "-e", "-o", "pipefail", "-c", block.code]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_every_guide_has_runnable_blocks_and_reasons_for_the_others():
    names = {p.name for p in GUIDES}
    assert {"quickstart.md", "policies.md", "training.md", "scenarios.md", "llm_backends.md", "from_oasis.md"} <= names
    for page in GUIDES:
        blocks = code_blocks(page)
        assert any(b.runnable for b in blocks), f"{page.name} has no block the tests run"
        for b in blocks:
            assert b.lang in ("python", "bash", "toml", "text", "sql"), f"{b.label}: unknown language {b.lang!r}"
            if b.lang in ("python", "bash") and b.skip_reason is None:
                assert b.runnable, f"{b.label}: a bash block the tests cannot run needs <!-- not run: reason -->"


@pytest.mark.parametrize("page", GUIDES, ids=lambda p: p.name)
def test_guide_blocks_run_as_written(page, tmp_path):
    for block in code_blocks(page):
        if not block.runnable:
            continue
        res = run_block(block, tmp_path)
        assert res.returncode == 0, f"{block.label} failed:\n{res.stdout[-2000:]}\n{res.stderr[-3000:]}"


def _help_options(command: tuple[str, ...]) -> set[str]:
    res = subprocess.run(
        [sys.executable, "-m", "oasis_gym.cli", *command, "--help"], capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stderr
    return set(re.findall(r"(?<![\w-])--[a-z][\w-]*", res.stdout))


def test_options_of_blocks_not_run_exist():
    """A block that cannot run still names only options `oasis-gym <command> --help` lists."""
    wanted: dict[tuple[str, ...], set[tuple[str, str]]] = {}
    for page in GUIDES:
        for block in code_blocks(page):
            if block.lang != "bash" or block.skip_reason is None:
                continue
            for command in block.commands():
                for part in command.split("&&"):
                    words = shlex.split(part, comments=True)
                    if not words or words[0] != "oasis-gym":
                        continue
                    # (a command with targets, each with its own options: `train moderator`, `scratch moderator`)
                    targets = words[1:2] in (["train"], ["benchmark"], ["scratch"])
                    sub = tuple(words[1:3]) if targets else tuple(words[1:2])
                    options = {w.split("=")[0] for w in words if w.startswith("--")}
                    wanted.setdefault(sub, set()).update((o, block.label) for o in options)
    for sub, options in wanted.items():
        known = _help_options(sub)
        missing = sorted((o, where) for o, where in options if o not in known)
        assert not missing, f"oasis-gym {' '.join(sub)} has no option {missing}"


# --------------------------------------------------------------------------- the examples


# torch makes its compile cache $TMPDIR/torchinductor_<user> when SB3 builds a model: torch's, not the example's
LIBRARY_CACHES = ("torchinductor_",)


def run_example(script: str, *args: str, tmp_path: Path, timeout: float = 600) -> str:
    """Run examples/<script> with `--out tmp_path/out`, its working folder and TMPDIR in
    `tmp_path`; check its exit code, its summary and that it wrote nothing but its output."""
    out, tmp = tmp_path / "out", tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp), MPLBACKEND="Agg")
    res = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args, "--out", str(out)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert res.returncode == 0, f"{script} failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    # no warning of any kind (train_recommender.py printed Gymnasium's DeprecationWarning)
    assert not re.search(r"Warning\b|WARN", res.stderr), f"{script} printed a warning:\n{res.stderr[-3000:]}"
    text = res.stdout
    assert f"output folder: {out}" in text and "\nSummary: " in text and "\nTry next: " in text, text[-2000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "tmp"], "wrote outside its folder"
    left = sorted(p.name for p in tmp.iterdir() if not p.name.startswith(LIBRARY_CACHES))
    assert not left, f"left files in TMPDIR: {left}"
    return text


def test_every_example_has_a_test():
    tested = set(re.findall(r'run_example\(\s*"(\w+\.py)"', Path(__file__).read_text(encoding="utf-8")))
    assert tested == {p.name for p in EXAMPLES.glob("*.py")}


def test_example_custom_policy(tmp_path):
    text = run_example("custom_policy.py", "--users", "200", "--steps", "5", tmp_path=tmp_path)
    assert "Same actions and results on both paths: True." in text
    assert {p.name for p in (tmp_path / "out").glob("*.db")} == {"per_agent.db", "batched.db"}


def test_example_custom_policy_defaults_to_a_fresh_temp_folder(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    res = subprocess.run(
        [sys.executable, str(EXAMPLES / "custom_policy.py"), "--users", "50", "--steps", "2"],
        cwd=tmp_path,
        env=dict(os.environ, TMPDIR=str(tmp)),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    folder = Path(re.search(r"^output folder: (.+)$", res.stdout, re.M)[1])
    assert folder.parent == tmp and (folder / "batched.db").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tmp"]


def test_example_train_recommender(tmp_path):
    text = run_example(
        "train_recommender.py",
        *("--timesteps", "20", "--n-steps", "10", "--users", "60", "--max-cycles", "5", "--eval-seeds", "1000"),
        tmp_path=tmp_path,
    )
    assert "held_out_seeds" in text and "held_out_population" in text and "PPO wins" in text
    assert {p.name for p in (tmp_path / "out").iterdir()} == {"recommender_ppo.zip", "eval.json", "ppo_log"}


def test_example_scenario_sweep(tmp_path):
    text = run_example("scenario_sweep.py", "--param", "rho=0.4,1.2", "--seeds", "2", "--steps", "3", tmp_path=tmp_path)
    assert "policy.abm.opinion_params.rho" in text
    names = {p.name for p in (tmp_path / "out").iterdir() if not p.name.startswith(".")}
    assert {"runs.csv", "summary.csv", "summary.json", "effect_vs_rho.png"} <= names


def test_example_read_journal(tmp_path):
    text = run_example("read_journal.py", "--users", "100", "--steps", "3", tmp_path=tmp_path)
    assert "most-liked posts" in text and "actions per step (trace)" in text and "over 3 steps" in text
    db = tmp_path / "out" / "run.db"
    assert sorted(p.name for p in db.parent.iterdir() if p.name.startswith("run.db")) == ["run.db"]  # no -wal/-shm
    cmd = [sys.executable, str(EXAMPLES / "read_journal.py"), "--db", str(db)]
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and "\nSummary: read " in again.stdout, again.stderr[-3000:]
    assert sorted(p.name for p in db.parent.iterdir() if p.name.startswith("run.db")) == ["run.db"]


LLM_DECISIONS = re.compile(r"LLM decisions: (\d+) \((\d+) valid, (\d+) invalid replies, (\d+) failed requests")


def _hybrid(url: str, model: str, tmp_path: Path) -> tuple[int, int, int, int]:
    text = run_example(
        "hybrid_llm_endpoint.py",
        *("--endpoint", url, "--model", model, "--users", "60", "--core-users", "2", "--steps", "2"),
        *("--activation", "1.0", "--timeout", "240", "--step-deadline", "480"),
        tmp_path=tmp_path,
    )
    assert (tmp_path / "out" / "hybrid.db").is_file()
    agents, valid, invalid, failed = (int(x) for x in LLM_DECISIONS.search(text).groups())
    assert agents == 4 and valid + invalid == agents and failed == 0, text[-2000:]  # 2 LLM users x 2 steps
    return agents, valid, invalid, failed


def test_example_hybrid_llm_endpoint_on_transformers_serve(served, tmp_path):  # noqa: F811 - the imported fixture
    """`transformers serve` ignores response_format: the random model's free text becomes
    counted invalid replies, and the run goes on."""
    url, model = served
    _hybrid(url, model, tmp_path)


@pytest.fixture(scope="module")
def vllm_server_url(tiny_model_dir, tmp_path_factory):
    from test_llm_vllm import running_server  # imported here: it imports torch and vLLM's backend module

    log = tmp_path_factory.mktemp("vllm_example") / "serve.log"
    with running_server(str(tiny_model_dir), log) as (url, _proc):
        yield url + "/v1"


@pytest.mark.vllm
def test_example_hybrid_llm_endpoint_on_a_vllm_server(vllm_server_url, tmp_path):
    """vLLM's server constrains the replies (response_format): every decision is an action."""
    _, valid, _, _ = _hybrid(vllm_server_url, "tiny", tmp_path)
    assert valid >= 1
