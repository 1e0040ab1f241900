"""A bare size said as a mixture of experts ("30b moe", "MoE 30B", "100b mixture of experts") is computed as an MoE
of that total with the typical active share of the catalog's MoE models, said in the answer's assumptions; a size
that names its active part ("30b-a3b") uses it as said; a bare size without "moe" stays dense."""

from __future__ import annotations

import pytest

from bot.pipeline import AnswerOptions, ask_text
from engine.answer import answer
from engine.catalog import typical_moe_share
from engine.parse import parse
from engine.schema import PlannedAnswer, ServingAnswer


@pytest.mark.parametrize(("question", "total"), [("lora 30b moe на 4090", 30), ("serve a MoE 30B on h100 vllm", 30),
                                                 ("full 100b mixture of experts on 8 h100", 100)])
def test_a_bare_moe_size_gets_the_typical_active_share_and_says_so(question: str, total: int) -> None:
    r = parse(question)
    assert r.model is not None and r.model.params_b == total
    assert r.model.active_params_b == pytest.approx(total * typical_moe_share(), rel=0.01)
    assert "model.active_params_b" in r.assumed
    a = answer(r)
    if not isinstance(a, ServingAnswer):
        assert isinstance(a, PlannedAnswer) and a.scenario.arch.experts > 0  # computed as an MoE, not a dense 30B
        assert any(x.key == "moe_active" for x in a.assumptions)
    else:
        assert any(x.key == "moe_active" for x in a.serving.assumptions)


def test_the_typical_share_is_the_catalogs_median() -> None:
    share = typical_moe_share()
    assert 0.03 < share < 0.3  # between Kimi-K2's 3 % and Mixtral's 28 %


@pytest.mark.parametrize(("lang", "words"), [("en", "active per token"), ("ru", "на токен активны")])
def test_the_assumption_is_worded_in_the_answer(lang: str, words: str) -> None:
    for question in ("lora 30b moe on 4090", "инференс 30b moe на h100 vllm"):
        text = ask_text(question, AnswerOptions(lang=lang))
        assert words in text and "moe_active" not in text, text[-600:]


def test_a_said_active_size_and_a_dense_size() -> None:
    said = parse("lora 30b-a3b на 4090")
    assert said.model is not None and said.model.active_params_b == 3.0 and "model.active_params_b" not in said.assumed
    dense = parse("лора 30b на 4090")
    assert dense.model is not None and dense.model.active_params_b is None
    moe, plain = answer(parse("lora 30b moe on 4090")), answer(parse("lora 30b on 4090"))
    assert moe.scenario is not None and plain.scenario is not None and plain.scenario.arch.experts == 0
