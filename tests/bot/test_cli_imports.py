"""What a CLI start imports: `ask` and `estimate` answer without the bot's libraries (aiogram, aiohttp), the chart
library or the config readers and writers; `config` does load the writers. A training question loads neither the
serving layer (sizing, KV cache, load plan, launch command) nor the post-training one, nor the config models; a
serving or post-training question does load its layer. A training answer builds the validators of the pydantic models
it uses and no others, and a start that finds the data files' JSON copies parses no TOML. Checked in a fresh
interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HEAVY = ("matplotlib", "aiogram", "aiohttp", "redis", "yaml", "engine.configs.writers", "engine.configs.readers")
PROBE = """
import contextlib, io, json, sys
from bot.cli import main
with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.suppress(SystemExit):  # --version exits
    main(sys.argv[1:])
modules = sorted(sys.modules)
built = []
if "pydantic" in sys.modules:
    from pydantic import BaseModel
    from pydantic._internal._mock_val_ser import MockValSer
    todo = list(BaseModel.__subclasses__())
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        validator = cls.__dict__.get("__pydantic_validator__")
        if validator is not None and not isinstance(validator, MockValSer):
            built.append(f"{cls.__module__}.{cls.__qualname__}")
print(json.dumps({"out": out.getvalue(), "modules": modules, "built": sorted(built)}))
"""


def _probe(*argv: str, env: dict[str, str] | None = None) -> dict[str, list[str] | str]:
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, check=True, env=env)
    data: dict[str, list[str] | str] = json.loads(done.stdout)
    return data


def _run(*argv: str) -> tuple[str, list[str]]:
    data = _probe(*argv)
    return str(data["out"]), list(data["modules"])


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


# Models a training answer never constructs: each builds its validator on first use (defer_build), not at import.
NOT_BUILT_FOR_TRAINING = (
    "engine.schema.answer.AnswerBase", "engine.schema.answer.PlannedAnswer", "engine.schema.answer.MarketAnswer",
    "engine.schema.answer.ErrorAnswer", "engine.schema.answer.ServingAnswer", "engine.schema.answer.PostTrainAnswer",
    "engine.schema.prices.RunCost", "engine.schema.prices.FxRate", "engine.schema.prices.Rental",
    "engine.schema.result.Fit", "engine.schema.serving.ServingResult", "engine.schema.serving.HostedRange",
    "engine.schema.serving.ServingSide", "engine.schema.posttrain.PostTrainResult", "engine.speed.costs.OffloadCost",
    "engine.speed.costs.CommunicationCost", "engine.speed.costs.MultiNodeCost", "engine.speed.inference.InferenceSpeed",
    "engine.parse.followup.FollowUp", "engine.parse.price.PriceArgs")


def test_a_training_answer_builds_only_the_models_it_uses() -> None:
    data = _probe("ask", "70B QLoRA на H100?")
    built = list(data["built"])
    assert "engine.schema.answer.TrainingAnswer" in built and "engine.schema.request.Request" in built
    assert [m for m in NOT_BUILT_FOR_TRAINING if m in built] == []


def test_a_price_question_builds_the_market_answer() -> None:
    data = _probe("ask", "сколько стоит H100 в час?")
    assert "engine.schema.answer.MarketAnswer" in data["built"]


def test_a_start_with_the_data_files_copies_parses_no_toml() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # as an installed wheel runs
    _probe("ask", "70B QLoRA на H100?", env=env)  # writes the copies a checkout lacks (a wheel carries them)
    again = _probe("ask", "70B QLoRA на H100?", env=env)
    assert "engine.catalog.lookup" in again["modules"]  # it did read the catalogs
    assert "tomllib" not in again["modules"]
