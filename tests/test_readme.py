"""The README's layout names the tree as it is, and its test command is what CI runs."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def layout() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Layout\n", 1)[1].split("\n## ", 1)[0]
    paths, parent = [], ""
    for line in section.splitlines():
        m = re.match(r"^    (\s*)([\w./-]+(?:/|\.py|\.toml))", line)
        if not m:
            continue
        name = m.group(2)
        if not m.group(1):  # a top-level entry
            parent = name if name.endswith("/") else ""
            paths.append(name)
        elif m.group(1) == "  ":  # an entry inside it (deeper lines continue a description)
            paths.append(parent + name)
    return paths


def test_every_path_of_the_layout_exists() -> None:
    paths = layout()
    assert len(paths) > 20 and "engine/answer/" in paths and "bot/views/" in paths
    missing = [p for p in paths if not (ROOT / p).exists()]
    assert missing == []


def test_every_engine_and_bot_module_is_in_the_layout() -> None:
    named = set(layout())
    text = (ROOT / "README.md").read_text(encoding="utf-8").split("## Layout\n", 1)[1].split("\n## ", 1)[0]
    for top in ("engine", "bot"):
        for path in sorted((ROOT / top).iterdir()):
            if (path.name.startswith(("_", ".")) and path.name != "__main__.py") or path.suffix not in (".py", ""):
                continue
            entry = f"{top}/{path.name}" + ("/" if path.is_dir() else "")
            assert entry in named or path.name in text, entry


def test_ci_runs_the_readmes_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"    {ci}\n" in readme and ".venv/bin/vulture" in ci


def sample_answers() -> list[tuple[list[str], list[str]]]:
    """The README's `$ gpu-advisor ask ...` samples: the arguments and the lines printed under them."""
    import shlex

    text = (ROOT / "docs" / "samples.md").read_text(encoding="utf-8")
    lines = text.split("## Sample answers\n", 1)[1].split("\n`", 1)[0]
    samples: list[tuple[list[str], list[str]]] = []
    for line in lines.splitlines():
        if line.startswith("    $ gpu-advisor "):
            samples.append((shlex.split(line.removeprefix("    $ gpu-advisor ")), []))
        elif samples:
            samples[-1][1].append(line.removeprefix("    "))
    return samples


def masked(line: str) -> str:
    """A line with its figures masked: numbers follow the engine's data, the words are what is checked."""
    return re.sub(r"\d+(?:[.,\u00a0 ]\d+)*", "#", line).strip()


def test_the_sample_answers_are_what_the_code_prints() -> None:
    """The headline, the summary, the table's labels and the section titles of each README sample are what
    `gpu-advisor ask` prints today (figures masked: they follow the catalog's data)."""
    import contextlib
    import io

    from bot.cli import main

    samples = sample_answers()
    assert len(samples) >= 4
    for args, shown in samples:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(args) == 0
        printed = out.getvalue().rstrip("\n").split("\n")
        assert [masked(x) for x in printed[:3]] == [masked(x) for x in shown[:3]], args
        labels = [x[:26].strip() for x in printed if re.fullmatch(r".{26,34}\d[\d.,\u00a0 ]*", x)]
        assert labels == [x[:26].strip() for x in shown if re.fullmatch(r".{26,34}\d[\d.,\u00a0 ]*", x)], args
        titles = [x for x in printed if x and not x[0].isdigit() and x.endswith(("варианты", "fit", "Сравнение"))]
        assert all(t in shown for t in titles), args
