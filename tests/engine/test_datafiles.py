"""The TOML data files' JSON copies (engine/datafiles.py): the same data as tomllib gives, type for type, read from the
copy once it is there, a new copy for edited bytes, and the TOML parsed whenever no copy can be read or written."""

from __future__ import annotations

import json
import shutil
import sys
import tomllib
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest

from engine import datafiles

PACKAGES = ("engine.catalog", "engine.frameworks", "bot.views")


def _package_tomls() -> list[Path]:
    found = [Path(str(files(p))) for p in PACKAGES]
    return sorted(t for folder in found for t in folder.glob("*.toml"))


def _typed(value: Any) -> Any:
    """The value with every leaf's type beside it: 1 and 1.0, True and 1 compare unequal here."""
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return (type(value).__name__, value)


@pytest.fixture
def writable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)


def _no_toml_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(raw: bytes) -> dict[str, Any]:
        raise AssertionError("parsed the TOML")

    monkeypatch.setattr(datafiles, "_parse", refuse)


def test_there_are_data_files_to_check() -> None:
    names = {p.name for p in _package_tomls()}
    assert {"models.toml", "prices.toml", "trl.toml", "cldr.toml"} <= names


@pytest.mark.parametrize("source", _package_tomls(), ids=lambda p: p.name)
@pytest.mark.usefixtures("writable")
def test_every_data_file_reads_back_from_its_copy_as_tomllib_parses_it(
        source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / source.name
    shutil.copyfile(source, copy)
    want = _typed(tomllib.loads(source.read_text("utf-8")))
    assert _typed(datafiles.read(copy)) == want  # parsed, and the copy written
    kept = list((tmp_path / "__pycache__").glob(f"{source.name}.*.json"))
    assert len(kept) == 1
    _no_toml_parsing(monkeypatch)
    assert _typed(datafiles.read(copy)) == want  # from the copy


@pytest.mark.usefixtures("writable")
def test_an_edited_file_gets_a_new_copy_and_the_old_one_goes(tmp_path: Path) -> None:
    source = tmp_path / "prices.toml"
    source.write_text('[a]\nx = 1\n', encoding="utf-8")
    assert datafiles.read(source) == {"a": {"x": 1}}
    first = datafiles.compiled_path(source, source.read_bytes())
    source.write_text('[a]\nx = 2.5\n', encoding="utf-8")
    assert datafiles.read(source) == {"a": {"x": 2.5}}
    second = datafiles.compiled_path(source, source.read_bytes())
    assert first is not None and second is not None and first != second
    assert not first.exists() and second.exists()


@pytest.mark.usefixtures("writable")
def test_a_damaged_copy_is_parsed_again_and_replaced(tmp_path: Path) -> None:
    source = tmp_path / "x.toml"
    source.write_text('name = "ok"\n', encoding="utf-8")
    path = datafiles.compiled_path(source, source.read_bytes())
    assert path is not None
    path.parent.mkdir()
    path.write_text('{"name": "o', encoding="utf-8")
    assert datafiles.read(source) == {"name": "ok"}
    assert json.loads(path.read_text(encoding="utf-8")) == {"name": "ok"}


def test_no_copy_is_written_when_bytecode_is_not(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    source = tmp_path / "x.toml"
    source.write_text("n = 3\n", encoding="utf-8")
    assert datafiles.read(source) == {"n": 3}
    assert not (tmp_path / "__pycache__").exists()
    kept = datafiles.compile_toml(source)  # the wheel's build step writes it all the same
    assert kept is not None and json.loads(kept.read_text(encoding="utf-8")) == {"n": 3}


@pytest.mark.usefixtures("writable")
def test_a_folder_that_cannot_hold_a_copy_still_reads(tmp_path: Path) -> None:
    (tmp_path / "__pycache__").write_text("a file where the folder would be", encoding="utf-8")
    source = tmp_path / "x.toml"
    source.write_text("n = 3\n", encoding="utf-8")
    assert datafiles.read(source) == {"n": 3}
    assert datafiles.read(source) == {"n": 3}
    assert datafiles.compile_toml(source) is None


@pytest.mark.usefixtures("writable")
def test_a_toml_date_is_not_copied_and_stays_a_date(tmp_path: Path) -> None:
    source = tmp_path / "x.toml"
    source.write_text("day = 2026-01-02\n", encoding="utf-8")
    assert datafiles.read(source)["day"].isoformat() == "2026-01-02"
    assert list(tmp_path.rglob("*.json")) == []
