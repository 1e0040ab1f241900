"""Full fine-tuning asked: the headline is honest about full fine-tuning (what holds it: the count of GPUs the plans
find), a switch to LoRA is never its fix, and LoRA comes after what keeps full fine-tuning in the changes, its CPU
offload named for what it moves (the parameters too, not only the optimizer state)."""

from __future__ import annotations

import pytest

from bot.pipeline import AnswerOptions, ask_text
from engine.answer import answer, changes_method
from engine.parse import parse

QUESTIONS = [("full fine-tune 70b on 2 4090s", "en"), ("фулл файнтюн 70b на 2 4090", "ru"),
             ("полный файнтюн 13b на 3090", "ru"), ("full finetune llama 3.1 8b on a 4090", "en"),
             ("fft of a 34b on two rtx 3090", "en")]


@pytest.mark.parametrize(("question", "lang"), QUESTIONS)
def test_lora_is_never_the_fix_of_full_fine_tuning(question: str, lang: str) -> None:
    request = parse(question)
    assert request.method == "full"
    a = answer(request)
    assert a.fix is None or not changes_method(a.fix), a.fix
    methods = [changes_method(c) for c in a.changes]
    assert methods == sorted(methods), a.changes  # what keeps full fine-tuning first, LoRA after it
    text = ask_text(question, AnswerOptions(lang=lang))
    head = text.split("What to change" if lang == "en" else "Что можно изменить")[0]
    assert "LoRA" not in head, head
    if a.verdict == "no_fit" and a.plans:
        lead = "It takes" if lang == "en" else "Понадобится"
        assert lead in text.splitlines()[0], text.splitlines()[:2]  # the count that holds full fine-tuning leads


@pytest.mark.parametrize(("question", "lang", "words"), [
    ("full fine-tune 70b on 2 4090s", "en", "CPU offload of the parameters and the optimizer state"),
    ("полный файнтюн 13b на 3090", "ru", "выгрузка параметров и состояний оптимизатора")])
def test_an_offload_that_moves_the_weights_says_so(question: str, lang: str, words: str) -> None:
    text = ask_text(question, AnswerOptions(lang=lang))
    # the offload that makes it fit moves the 16-bit weights too (ZeRO-3 offload_param, or with LoRA)
    fitting = [ln for ln in text.splitlines() if ln.startswith("•") and "offload" in ln.lower() and "✓" in ln]
    assert fitting and all(words in ln for ln in fitting), fitting
