"""Every python example in README.md runs exactly as written (each on its own, as a reader
would paste it, in a fresh namespace and an empty working folder)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
EXAMPLES = re.findall(r"^```python\n(.*?)^```", README.read_text(encoding="utf-8"), re.S | re.M)


def test_the_readme_has_python_examples():
    assert len(EXAMPLES) >= 2


@pytest.mark.parametrize("index", range(len(EXAMPLES)))
def test_readme_python_example_runs_as_written(index, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = compile(EXAMPLES[index], f"README.md python example {index + 1}", "exec")
    namespace: dict = {"__name__": "__main__"}
    exec(code, namespace)  # noqa: S102 - the README's own code
    env = namespace.get("env")
    if env is not None:
        env.close()
