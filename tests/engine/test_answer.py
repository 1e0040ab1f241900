"""engine.answer: one verdict decided once, with the one fit rule, and everything a view needs as data."""

from __future__ import annotations

import pytest

from engine.answer import answer
from engine.catalog import find_gpu, usable_memory_gib
from engine.fit import HEADROOM, capacity, fits, headroom_gb, tight
from engine.parse import parse
from engine.schema import Assumption, Breakdown


def peak(total: float, context: float = 0.5) -> Breakdown:
    return Breakdown(weights=total, adapters=0, gradients=0, optimizer=0, activations=0, logits=0, kv_cache=0,
                     overhead=0, total=total, cuda_context=context, cpu_ram=0, trainable_params=0)


def test_the_fit_rule_is_the_driver_reported_capacity_with_the_cuda_context() -> None:
    usable = capacity("H100", 80)
    assert usable == usable_memory_gib(find_gpu("H100")) == 79.19  # not the label, not label x 0.98
    assert fits(peak(usable - 0.5), usable, 0.0) and not fits(peak(usable - 0.49), usable, 0.0)
    with_headroom = usable * (1 - HEADROOM)
    assert fits(peak(with_headroom - 0.5), usable, HEADROOM) and not fits(peak(with_headroom), usable, HEADROOM)
    assert headroom_gb(peak(70.0), usable) == pytest.approx(usable - 70.5, abs=0.01)
    # tight: under 10 % to spare, or only because the allocator gave back its cache
    assert tight(peak(usable - 1), usable) and not tight(peak(60), usable)
    assert tight(peak(60).model_copy(update={"pressure": True}), usable)
    assert not tight(peak(usable), usable)  # does not fit at all


@pytest.mark.parametrize(("question", "verdict"), [
    ("7b qlora on H200", "fits"),
    ("34B inference on H100", "tight"),
    ("full 7b on A100 80GB", "fits_with_changes"),
    ("405B full fine-tuning on RTX 3060", "no_fit"),
    ("70B qlora RTX 4090 vs H100", "compare"),
    ("full fine-tune 7B", None),
])
def test_the_verdict_is_data(question: str, verdict: str | None) -> None:
    assert answer(parse(question)).verdict == verdict


def test_fits_with_changes_means_a_listed_change_fits_on_the_gpus_asked() -> None:
    a = answer(parse("full 7b on A100 80GB"))
    assert any(c.fits and c.key != "more_gpus" for c in a.changes)
    # only more GPUs would do: that is not the GPUs asked
    b = answer(parse("QLoRA 70B on 24GB"))
    assert [c.key for c in b.changes if c.fits] == ["more_gpus"] and b.verdict == "no_fit"


def test_a_tight_fit_fits_but_not_with_the_planners_headroom() -> None:
    a = answer(parse("34B inference on H100"))
    assert a.breakdown is not None and a.asked is not None
    room = capacity(a.asked.gpu, a.asked.memory_gb)
    assert a.capacity_gib == room
    assert fits(a.breakdown, room, 0.0) and not fits(a.breakdown, room, HEADROOM)


def test_the_asked_arrangement_and_the_totals_are_named() -> None:
    a = answer(parse("full 70B on 8xH100 with offload"))
    assert a.asked is not None and (a.asked.gpu, a.asked.memory_gb, a.asked.count) == ("H100 SXM", 80.0, 8)
    assert a.breakdown is not None
    assert a.need_gb == pytest.approx(a.breakdown.total + a.breakdown.cuda_context)
    assert a.cluster_gb == pytest.approx(8 * a.need_gb)
    assert a.cpu_ram_gb == pytest.approx(8 * a.breakdown.cpu_ram)  # one machine holds the 8 GPUs' shares


def test_no_model_is_an_error_key_not_an_exception() -> None:
    for text in ("", "hello", "🤖" * 500):
        a = answer(parse(text))
        keys = [e.key for e in a.errors]  # what the parser could not use ("empty"), then the missing model
        assert keys[-1] == "no_model" and set(keys) <= {"request_error", "no_model"}
        assert a.kind == "error" and a.verdict is None


def test_assumptions_are_keys_with_values() -> None:
    a = answer(parse("LoRA 8B на 4090"))
    by_key = {x.key: x.value for x in a.assumptions}
    assert by_key["seq_len"] == 2048 and by_key["gradient_checkpointing"] == "on"
    assert str(Assumption(key="seq_len", value=2048)) == "seq_len=2048"
    assert str(Assumption(key="architecture", value="Llama-3.1-8B")) == "architecture=like Llama-3.1-8B"


def test_a_cheaper_gpu_is_apart_from_the_alternatives_and_prices_are_dated() -> None:
    idle = answer(parse("7b qlora on H200"))
    assert idle.cheaper is not None and idle.alternatives == [] and idle.price_date
    never = answer(parse("405B full fine-tuning on RTX 3060"))
    assert never.cheaper is None and never.alternatives and not never.plans


def test_capacity_lines_carry_the_answers_own_fit() -> None:
    a = answer(parse("LoRA Llama 3.1 8B on a 4090, 8k context"))
    asked = [c for c in a.capacity if c.role == "asked"]
    assert [(c.gpu, c.fits) for c in asked] == [("RTX 4090", False)]
    assert any(c.fits for c in a.capacity if c.role == "common")
    assert all(c.fits == (a.need_gb <= capacity(c.gpu, c.memory_gb)) for c in a.capacity)
