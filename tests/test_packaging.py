"""The package's data files: every one the code reads is declared as package data (so a wheel carries it), and
the code finds them through importlib.resources, not relative to a checkout."""

from __future__ import annotations

import fnmatch
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD_OUTPUTS = {".mo"}  # compiled into the wheel by build_catalogs.py, never committed


def _declared() -> list[str]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        data = tomllib.load(f)["tool"]["setuptools"]["package-data"]
    return [f"{pkg.replace('.', '/')}/{pattern}" for pkg, patterns in data.items() for pattern in patterns]


def _data_files() -> list[str]:
    out = []
    for top in ("engine", "bot"):
        for path in (ROOT / top).rglob("*"):
            skipped = path.suffix in {".py", ".pyc", *BUILD_OUTPUTS} or "__pycache__" in path.parts
            if path.is_file() and not skipped:
                out.append(path.relative_to(ROOT).as_posix())
    return sorted(out)


def test_every_data_file_of_the_packages_is_declared_package_data() -> None:
    patterns = _declared()
    files = _data_files()
    assert any(f.startswith("engine/frameworks/") for f in files) and any(f.endswith(".po") for f in files)
    missing = [f for f in files if not any(fnmatch.fnmatch(f, p) for p in patterns)]
    assert missing == []


def test_the_compiled_catalogs_are_declared_too() -> None:
    patterns = _declared()
    for lang in ("en", "ru"):
        assert any(fnmatch.fnmatch(f"bot/locales/{lang}/LC_MESSAGES/messages.mo", p) for p in patterns)


def test_no_module_finds_its_data_relative_to_the_checkout() -> None:
    offenders = []
    for top in ("engine", "bot"):
        for path in (ROOT / top).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            if "Path(__file__)" in text and path.relative_to(ROOT).as_posix() != "bot/i18n.py":  # i18n: a checkout tool
                offenders.append(path.relative_to(ROOT).as_posix())
    assert offenders == []


def test_version_is_the_installed_distributions() -> None:
    from importlib.metadata import version

    out = subprocess.run([sys.executable, "-m", "bot", "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"gpu-advisor {version('gpu-advisor')}"
