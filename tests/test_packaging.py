"""The package installs cleanly: hash-checked locks, declared imports, a licence, and a wheel that works alone.

The wheel test builds ``verbatim-*.whl`` (``pip wheel --no-deps``), installs it into a fresh virtual environment
outside the checkout from the production lock, and runs ``verbatim --version``, ``verbatim db upgrade`` on a
fresh SQLite file and ``verbatim db check`` there — no checkout on the path, no ``alembic.ini``. Packages come
from the registry through pip's own cache, so after the first run nothing is downloaded again.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("bot", "retrieval", "storage", "migrations")
DEV_ONLY = {"pytest", "pytest-asyncio", "pytest-timeout", "setuptools", "iniconfig", "pluggy"}
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def pins(lock: Path) -> dict[str, str]:
    """name -> version of every requirement in a uv lock; each must carry at least one hash."""
    text = lock.read_text(encoding="utf-8")
    found: dict[str, str] = {}
    for block in re.split(r"\n(?=[A-Za-z0-9])", text.split("\n", 2)[2]):
        match = re.match(r"([A-Za-z0-9_.-]+)==([^ ;\\]+)", block)
        assert match, f"{lock.name}: cannot read the requirement {block[:60]!r}"
        assert "--hash=sha256:" in block, f"{lock.name}: {match[1]} has no hash"
        found[match[1].lower()] = match[2]
    return found


def test_the_production_and_development_locks_are_hash_checked_and_agree() -> None:
    production, development = pins(ROOT / "requirements.lock"), pins(ROOT / "requirements-dev.lock")

    assert not DEV_ONLY & set(production), "the production lock holds development tools"
    assert {"pytest", "pytest-asyncio"} <= set(development)
    assert {name: development.get(name) for name in production} == production


def test_requirements_txt_is_the_production_lock_as_make_generates_it() -> None:
    lock = (ROOT / "requirements.lock").read_text(encoding="utf-8").split("\n", 2)[2]
    generated = (ROOT / "requirements.txt").read_text(encoding="utf-8")

    assert generated.startswith("# Generated from requirements.lock") and generated.endswith(lock), (
        "requirements.txt is stale: run `make requirements.txt`")


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()  # PEP 503


def test_every_third_party_package_imported_is_declared_in_pyproject() -> None:
    imported: set[str] = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    imported |= {alias.name.split(".")[0] for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    imported.add(node.module.split(".")[0])
    third_party = imported - set(sys.stdlib_module_names) - set(PACKAGES)
    declared = {normalized(re.split(r"[\[=<>~! ]", d, maxsplit=1)[0]) for d in PYPROJECT["project"]["dependencies"]}
    distributions = packages_distributions()
    undeclared = {name for name in third_party
                  if not {normalized(d) for d in distributions.get(name, [name])} & declared}

    assert not undeclared, f"imported but not declared in pyproject.toml: {sorted(undeclared)}"


def test_the_license_file_matches_pyproject_and_python_version_is_supported() -> None:
    assert PYPROJECT["project"]["license"] == "Apache-2.0"
    assert "Apache License\n                           Version 2.0" in (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert (ROOT / ".python-version").read_text(encoding="utf-8").strip() == "3.11"
    assert PYPROJECT["project"]["requires-python"] == ">=3.11"


def run(command: list[str], *, cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{' '.join(command)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.mark.timeout(900)
def test_the_built_wheel_installs_alone_and_migrates_a_fresh_database(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "DATABASE_URL")}
    run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w",
         str(tmp_path / "dist"), str(ROOT)], cwd=tmp_path, env=env)
    [wheel] = (tmp_path / "dist").glob("verbatim-*.whl")
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path, env=env)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-deps", "--no-compile"]
    run([*pip, "--require-hashes", "-r", str(ROOT / "requirements.lock")], cwd=tmp_path, env=env)
    run([*pip, str(wheel)], cwd=tmp_path, env=env)
    verbatim = str(venv / "bin" / "verbatim")
    home = tmp_path / "home"
    env |= {"VERBATIM_HOME": str(home), "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'fresh.sqlite3'}"}

    where = run([str(venv / "bin" / "python"), "-c", "import bot, migrations; print(bot.__file__, migrations.__file__)"],
                cwd=tmp_path, env=env)
    version = run([verbatim, "--version"], cwd=tmp_path, env=env)
    upgraded = run([verbatim, "db", "upgrade"], cwd=tmp_path, env=env)
    checked = run([verbatim, "db", "check"], cwd=tmp_path, env=env)

    assert all(path.startswith(str(venv)) for path in where.split()), where
    assert version.strip() == f"verbatim {PYPROJECT['project']['version']}"
    assert "is at revision" in upgraded and "as this version needs" in checked
