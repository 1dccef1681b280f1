"""The bench scripts as the tests see them: files to list and commands to run, never modules to import.

Imported by tests with ``from bench_scripts import ...`` (pytest puts tests/ on sys.path).
A test that needs a bench's measurement runs the script in a fresh interpreter
(`run_bench`) and reads its JSON line; code a test needs lives in the package or in tests/
(tests/test_bench_index.py checks that no test imports from bench/).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"


def bench_scripts() -> list[str]:
    """Every bench script, as its path from the repository root (bench/<folder>/<name>.py)."""
    return sorted(p.relative_to(ROOT).as_posix() for p in BENCH.rglob("*.py"))


def run_bench(script: str, *args: str, timeout: float = 1200) -> dict:
    """Run bench/`script` (e.g. "research/recommender_personalization.py") with `args` in a
    fresh interpreter; it must exit 0; its last stdout line, parsed as JSON."""
    done = subprocess.run([sys.executable, str(BENCH / script), *args], capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
