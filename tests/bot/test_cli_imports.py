"""What a CLI start imports: `ask` and `estimate` answer without the bot's libraries (aiogram, aiohttp), the chart
library or the config readers and writers; `config` does load the writers. A training question loads neither the
serving layer (sizing, KV cache, load plan, launch command) nor the post-training one, nor the config models; a
serving or post-training question does load its layer. Checked in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("matplotlib", "aiogram", "aiohttp", "redis", "yaml", "engine.configs.writers", "engine.configs.readers")
PROBE = """
import contextlib, io, json, sys
from bot.cli import main
with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.suppress(SystemExit):  # --version exits
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


# What a plain fine-tuning answer never needs: each is imported by the functions of the other layers that use it.
NOT_FOR_TRAINING = ("engine.serving.sizing", "engine.serving.load", "engine.serving.loadplan", "engine.serving.core",
                    "engine.serving.command", "engine.posttrain.result", "engine.posttrain.advice",
                    "engine.posttrain.setup", "engine.posttrain.timing", "engine.plan.posttrain", "engine.configs",
                    "bot.views.serving_view", "bot.compute", "bot.enrich", "asyncio", "babel", "matplotlib", "aiogram")


def _loaded(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == n or m.startswith(n + ".") for n in names)]


@pytest.mark.parametrize("argv", [("ask", "70B QLoRA на H100?"), ("ask", "--lang", "en", "LoRA Llama 3.1 8B on a 4090"),
                                  ("estimate", "70B QLoRA на H100?"), ("--version",)])
def test_a_training_answer_loads_no_other_layer(argv: tuple[str, ...]) -> None:
    out, modules = _run(*argv)
    assert out.strip()
    assert _loaded(modules, NOT_FOR_TRAINING) == []


@pytest.mark.parametrize(("argv", "layer"), [
    (("ask", "--lang", "en", "vLLM Llama 3.1 8B on L4, 20 users"), "engine.serving.core"),
    (("ask", "DPO Llama 3.1 8B на H100"), "engine.posttrain.result"),
])
def test_a_serving_or_post_training_answer_loads_its_layer(argv: tuple[str, ...], layer: str) -> None:
    out, modules = _run(*argv)
    assert out.strip()
    assert layer in modules


def test_config_does_load_the_writers() -> None:
    out, modules = _run("config", "70B QLoRA on H100")
    assert "==>" in out
    assert "engine.configs.writers" in modules
