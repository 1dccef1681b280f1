"""The wheel ships every package and the data files the code reads.

pyproject.toml lists packages explicitly (the envs/, policies/ and train/ folders install as
oasis_gym.envs, oasis_gym.policies and oasis_gym.train), so a new sub-package must be added
there by hand; an editable install hides the omission, a normal install loses the modules.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _setuptools() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def _folder_of(package: str, package_dir: dict[str, str]) -> Path:
    """The source folder of a dotted package name under the package-dir mapping."""
    best = max((k for k in package_dir if package == k or package.startswith(k + ".")), key=len)
    rest = package[len(best) :].lstrip(".")
    return ROOT / package_dir[best] / Path(*rest.split(".")) if rest else ROOT / package_dir[best]


def test_every_source_package_is_listed():
    cfg = _setuptools()
    package_dir = cfg["package-dir"]
    listed = set(cfg["packages"])
    found = set()
    for name, folder in package_dir.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            found.add(".".join([name, *rel.parts]) if rel.parts else name)
    assert found - listed == set(), "packages missing from pyproject.toml [tool.setuptools] packages"
    for (
        folder
    ) in package_dir.values():  # a folder of modules without __init__.py: a namespace package a wheel leaves out
        bare = {p.parent for p in (ROOT / folder).rglob("*.py")} - {
            i.parent for i in (ROOT / folder).rglob("__init__.py")
        }
        assert not bare, f"folders of modules without __init__.py: {sorted(map(str, bare))}"
    assert all(_folder_of(p, package_dir).joinpath("__init__.py").is_file() for p in listed)


def test_package_data_globs_match_files():
    cfg = _setuptools()
    for package, globs in cfg["package-data"].items():
        folder = _folder_of(package, cfg["package-dir"])
        for pattern in globs:
            assert list(folder.glob(pattern)), f"{package}: {pattern} matches no file"


def test_the_license_pyproject_names_is_at_the_root():
    text = (ROOT / "LICENSE").read_text()
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]["text"] == "Apache-2.0"
    assert text.lstrip().startswith("Apache License") and "Version 2.0, January 2004" in text


def test_python_m_oasis_gym_is_the_command():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "oasis_gym", "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.startswith("usage: oasis-gym")


def test_the_train_extra_installs_what_sb3s_progress_bar_imports():
    """`oasis-gym train` and `benchmark` show SB3's progress bar (ProgressBarCallback imports
    tqdm and rich, which stable-baselines3 itself does not require): an install of only
    `.[train]` must have both (the main venv hides the omission: vllm pulls rich)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {re.split(r"[<>=!~\[ ]", d, maxsplit=1)[0].lower() for d in project["dependencies"]}
    declared |= {re.split(r"[<>=!~\[ ]", d, maxsplit=1)[0].lower() for d in project["optional-dependencies"]["train"]}
    assert {"stable-baselines3", "tqdm", "rich"} <= declared
