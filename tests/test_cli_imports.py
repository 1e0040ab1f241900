"""What a CLI start imports: `ask` and `estimate` answer without the bot's libraries (aiogram, aiohttp), the chart
library or the config readers and writers; `config` does load the writers. Checked in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("matplotlib", "aiogram", "aiohttp", "redis", "yaml", "engine.configs.writers", "engine.configs.readers")
PROBE = """
import contextlib, io, json, sys
from bot.cli import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    main(sys.argv[1:])
print(json.dumps({"out": out.getvalue(), "modules": sorted(sys.modules)}))
"""


def _run(*argv: str) -> tuple[str, list[str]]:
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, check=True)
    data = json.loads(done.stdout)
    return data["out"], data["modules"]


def _heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]


@pytest.mark.parametrize("argv", [("ask", "70B QLoRA на H100?"), ("ask", "--lang", "en", "serve Llama 3.1 8B on L4"),
                                  ("estimate", "70B QLoRA на H100?")])
def test_an_answer_imports_none_of_the_heavy_libraries(argv: tuple[str, ...]) -> None:
    out, modules = _run(*argv)
    assert out.strip()  # it did answer
    assert _heavy(modules) == []


def test_config_does_load_the_writers() -> None:
    out, modules = _run("config", "70B QLoRA on H100")
    assert "==>" in out
    assert "engine.configs.writers" in modules
