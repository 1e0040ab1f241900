"""The packages' TOML data files (catalogs, framework profiles, CLDR marks), read fast.

The TOML is the source and is always read; its parsed content is also kept as JSON in the `__pycache__` folder next
to it, named by the SHA-256 of the TOML's bytes (`models.toml.<digest>.json`), and read from there by every later
process: the standard library's JSON reader is about 25× faster than tomllib (models.toml: 13 ms → 0.5 ms), and
a cold `gpu-advisor ask` reads six such files. A file whose digest differs (the TOML was edited) is not read; it is
replaced. The JSON holds exactly what tomllib returns (strings, ints, floats, booleans, lists, tables: TOML's dates
would not survive JSON, and a file with one is simply not cached).

Like Python's own bytecode: written only where the folder is writable and `sys.dont_write_bytecode` is off
(`PYTHONDONTWRITEBYTECODE`, `python -B`); a wheel ships them (build_catalogs.py), so a read-only install reads them
too; any failure to read or write one falls back to parsing the TOML.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

CACHE = "__pycache__"


def read_toml(package: str, name: str) -> dict[str, Any]:
    """A package's TOML data file, parsed (`read_toml("engine.catalog", "models.toml")`)."""
    return read(files(package) / name)


def read(source: Traversable) -> dict[str, Any]:
    """A TOML file, parsed: from its JSON copy when one for these bytes exists, else with tomllib (then kept)."""
    raw = source.read_bytes()
    compiled = compiled_path(source, raw)
    if compiled is not None:
        try:
            data: dict[str, Any] = json.loads(compiled.read_bytes())
            return data
        except (OSError, ValueError):
            pass
    data = _parse(raw)
    if compiled is not None and not sys.dont_write_bytecode:
        write(compiled, data)
    return data


def compile_toml(source: Path) -> Path | None:
    """Write the JSON copy of a TOML file whatever `sys.dont_write_bytecode` says (the wheel's build step): its
    path, or None when none could be written."""
    raw = source.read_bytes()
    path = compiled_path(source, raw)
    if path is not None:
        write(path, _parse(raw))
    return path if path is not None and path.is_file() else None


def _parse(raw: bytes) -> dict[str, Any]:
    import tomllib  # only where no JSON copy is there: a start that has them all never loads the TOML parser

    return tomllib.loads(raw.decode("utf-8"))


def compiled_path(source: Traversable, raw: bytes) -> Path | None:
    """Where the JSON copy of these bytes of `source` lives; None for a file not on a file system (a zip)."""
    if not isinstance(source, Path):
        return None
    digest = hashlib.sha256(raw).hexdigest()[:16]
    return source.parent / CACHE / f"{source.name}.{digest}.json"


def write(path: Path, data: dict[str, Any]) -> None:
    """Keep `data` at `path` (atomically), and drop the copies of older versions of the same file; never fails."""
    try:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):  # a TOML date or time: not JSON, parsed each time instead
        return
    try:
        path.parent.mkdir(exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
        source = path.name.rsplit(".", 2)[0]  # "models.toml"
        for old in path.parent.glob(f"{source}.*.json"):
            if old != path:
                old.unlink(missing_ok=True)
    except OSError:
        return
