"""ALST / ArcticTraining named in a question: DeepSpeed with the recipe's switches where the question says nothing
else; and a length said before the word «контекст» with a GPU count after it, with or without a preposition."""

from __future__ import annotations

import pytest

from engine.parse import _parse as parse_strict


@pytest.mark.parametrize("q", [
    "ALST llama 8b 500k контекст на 1 h100",
    "arctictraining qwen3 32b 128k on 8xh100",
    "Arctic Training llama 70b 1M context on 16 h100",
    "обучение через alst, llama 3.1 8b, 256k, 4 h100",
])
def test_alst_is_arctictraining_with_the_recipe_switches(q: str) -> None:
    r = parse_strict(q)
    assert r.error is None, (q, r.error)
    assert r.framework == "arctictraining"
    assert r.method == "full"
    assert (r.activation_offload, r.tiled_mlp, r.fused_loss, r.offload) == (True, True, True, True)
    assert "alst" in r.assumed
    count = r.gpus[0].count
    assert r.context_parallel == (count if count > 1 else None)


def test_what_the_question_says_wins_over_the_alst_recipe() -> None:
    r = parse_strict("ALST lora llama 8b 128k на 8 h100 без tiled mlp, ulysses 4")
    assert (r.method, r.tiled_mlp, r.context_parallel) == ("lora", False, 4)
    assert r.activation_offload is True


@pytest.mark.parametrize("q", ["DeepSpeed ALST llama 8b 300k на 1 h200 без tiled mlp без оффлоада активаций",
                               "alst via deepspeed, qwen3 32b, 1m ctx, 16 h100"])
def test_deepspeed_named_with_alst_is_arctictraining(q: str) -> None:
    assert parse_strict(q).framework == "arctictraining"


def test_deepspeed_alone_fills_no_alst_switch() -> None:
    r = parse_strict("full llama 8b deepspeed zero3 на 8 h100 8k")
    assert r.framework == "deepspeed"
    assert (r.activation_offload, r.tiled_mlp) == (None, None)
    assert "alst" not in r.assumed


@pytest.mark.parametrize(("q", "seq_len", "gpu", "count"), [
    ("лора 8b 128k контекст 8xh100", 131_072, "H100", 8),
    ("full llama 8b 128k context 8xh100", 131_072, "H100", 8),
    ("llama 70b 1M context 16xh100 лора", 1_048_576, "H100", 16),
    ("лора 7b контекст 32k 2х3090", 32_768, "3090", 2),
    ("инфер 8б 32к контекст 4090 vllm", 32_768, "4090", 1),
    ("qlora 8b 16k контекст 2 a100", 16_384, "A100", 2),
    ("лора 8b контекст 4096 на h100", 4096, "H100", 1),
])
def test_a_gpu_after_the_context_word_is_not_the_context(q: str, seq_len: int, gpu: str, count: int) -> None:
    r = parse_strict(q)
    assert r.error is None, (q, r.error)
    assert r.seq_len == seq_len, q
    assert gpu in (r.gpus[0].name or ""), (q, r.gpus)
    assert r.gpus[0].count == count, q


def test_the_alst_assumption_names_only_the_switches_the_job_keeps() -> None:
    from engine.answer import answer
    from engine.parse import parse

    def said(q: str) -> list[str]:
        return [str(x) for x in answer(parse(q)).assumptions]

    assert "alst_recipe=full+fused_loss+offload" in said(
        "ALST llama 3.1 8b 300k контекст на 1 h200 без tiled mlp без оффлоада активаций")
    assert "alst_recipe=full+activation_offload+tiled_mlp+fused_loss+offload" in said(
        "ALST llama 3.1 8b 1M context on 8 h100")
