"""«какую модель можно запустить на 4090»: the largest model of typical shape each precision (or the training method
said) fits, found with the engine's own answers (engine.answer.models_fit). Phrasings written for these tests."""

from __future__ import annotations

import json

import pytest

from bot.cli import main
from bot.pipeline import ask_text
from engine.answer import answer
from engine.answer.models_fit import SIZES
from engine.parse import parse
from engine.schema import ModelsAnswer, Request


@pytest.mark.parametrize("text", ["какую модель можно запустить на 4090", "what model can I run on a 3090?",
                                  "ollama на маке m2 32гб какую модель", "which llm fits 24gb",
                                  "какие модели влезут в 2x3090 для лоры"])
def test_which_model_is_heard(text: str) -> None:
    r = parse(text)
    assert "models" in r.asks and r.model is None and r.gpus


def fits(request: Request, size: float, method: str, bits: int, quantization: str | None = None) -> bool:
    data = {**request.model_dump(), "model": {"params_b": size}, "method": method, "bits": bits, "asks": []}
    if quantization:
        data["quantization"] = quantization
    return answer(Request.model_validate(data)).verdict in ("fits", "tight")


def test_each_row_is_the_edge_of_the_engines_own_verdict() -> None:
    request = parse("какую модель можно запустить на 4090")
    a = answer(request)
    assert isinstance(a, ModelsAnswer) and [(r.method, r.bits) for r in a.rows] == \
        [("inference", 16), ("inference", 8), ("inference", 4)]
    sizes = [r.params_b for r in a.rows]
    assert all(s is not None for s in sizes) and sizes == sorted(sizes)  # fewer bits, a larger model
    for r in a.rows:
        assert r.params_b is not None
        assert fits(request, r.params_b, r.method, r.bits)
        bigger = SIZES[SIZES.index(r.params_b) + 1]
        assert not fits(request, bigger, r.method, r.bits)


def test_llama_cpp_and_ollama_rows_are_gguf_files_and_say_the_layers_in_ram() -> None:
    a = answer(parse("ollama на маке m2 32гб какую модель"))
    assert isinstance(a, ModelsAnswer)
    text = ask_text("ollama на маке m2 32гб какую модель")
    assert "Q4_K_M: до" in text and "F16: до" in text
    sizes = [r.params_b for r in a.rows]
    assert sizes == sorted(sizes) and len(set(sizes)) > 1  # the GGUF type of each row is read


def test_a_training_method_gives_its_own_row() -> None:
    a = answer(parse("какие модели влезут в 2x3090 для лоры"))
    assert isinstance(a, ModelsAnswer) and [r.method for r in a.rows] == ["lora"] and a.count == 2
    qlora = answer(parse("which model can I qlora on an a100 40gb?"))
    assert isinstance(qlora, ModelsAnswer) and qlora.rows[0].method == "qlora"
    assert qlora.rows[0].params_b is not None and qlora.rows[0].params_b > a.rows[0].params_b  # type: ignore[operator]


def test_the_reply_in_both_languages_and_the_plan_json(capsys: pytest.CaptureFixture[str]) -> None:
    ru = ask_text("какую модель можно запустить на 4090").split("\n")
    assert ru[0] == "🧩 Самые большие модели, которые помещаются на 1×RTX 4090:"
    assert ru[1].startswith("• bf16: до ") and "веса" in ru[1]
    assert "назовите модель" in ru[-1]
    en = ask_text("which llm fits 24gb").split("\n")
    assert en[0] == "🧩 The largest models that fit on a 24\u00a0GB card:"
    assert main(["plan", "какую модель можно запустить на 4090"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["bits"] for r in out["models"]] == [16, 8, 4] and out["plans"] == []


def test_a_named_model_is_answered_as_itself() -> None:
    assert not isinstance(answer(parse("какую модель взять, llama 8b на 4090 потянет?")), ModelsAnswer)


def test_a_precision_said_is_its_row_alone() -> None:
    a = answer(parse("какую максимальную модель можно запустить на h100 в 4 битах"))
    assert isinstance(a, ModelsAnswer) and [(r.method, r.bits) for r in a.rows] == [("inference", 4)]


@pytest.mark.parametrize(("text", "start"), [
    ("какая модель лучше для кода?", "🧩 Я подбираю GPU под модель, а не модель по качеству"),
    ("which model is best for coding?", "🧩 I size GPUs for models, I do not pick one by its quality")])
def test_which_model_without_a_gpu_says_what_the_tool_does_and_how_to_ask(text: str, start: str) -> None:
    reply = ask_text(text)
    assert reply.startswith(start) and ("4090" in reply)
