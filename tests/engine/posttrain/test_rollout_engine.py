"""The rollout's vLLM as the serving engine profiles it: it starts when its pool holds one full sequence
(vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory), a batch larger than the pool is generated in rounds
(slower, not a failure), and the hours of the plan list are the step line's."""

from __future__ import annotations

import re

from bot.pipeline import AnswerOptions, ask_text
from engine.answer import answer
from engine.parse import parse
from engine.posttrain.compose import rollout_engine, vllm_batch, vllm_share_gib
from engine.posttrain.result import posttrain_result
from engine.posttrain.setup import build_setup
from engine.schema import PostTrainAnswer

SERVER = "GRPO Qwen2.5-32B on 8xH100 with vLLM server mode"


def test_a_server_that_holds_the_weights_and_one_sequence_runs_and_queues_the_rest() -> None:
    request = parse(SERVER)
    setup = build_setup(request, None)
    engine = rollout_engine(setup)
    assert setup.rollout == "server" and engine.headroom == 1.0  # profiled by the serving engine
    share = vllm_share_gib(setup)
    # 61 GiB of bf16 weights and the profiled reserves leave the 0.9 share room for some, not all, of 7 x 8 sequences
    assert engine.held_gib + engine.sequence_gib <= share < engine.held_gib + vllm_batch(setup) * engine.sequence_gib
    waves = engine.waves(share)
    assert waves >= 2
    r = posttrain_result(request, advise=False)
    assert "posttrain.note.vllm_share_too_small" not in r.notes and "posttrain.note.vllm_batch_queued" in r.notes
    a = answer(request)
    assert isinstance(a, PostTrainAnswer) and a.verdict in ("fits", "tight")
    first = ask_text(SERVER, AnswerOptions(lang="en")).splitlines()[0]
    assert not first.startswith("❌") and "does not run" not in first


def test_rounds_slow_the_generation_down() -> None:
    """The same run with a share that holds the whole batch generates in one round, faster."""
    queued = posttrain_result(parse(SERVER), advise=False)
    roomy = posttrain_result(parse("GRPO Qwen2.5-32B on 8xH200 with vLLM server mode"), advise=False)
    assert queued.time is not None and roomy.time is not None
    assert "posttrain.note.vllm_batch_queued" not in roomy.notes
    assert queued.time.generation_s > roomy.time.generation_s * 1.3


def test_a_server_that_cannot_hold_the_weights_does_not_run() -> None:
    r = posttrain_result(parse("GRPO Qwen2.5-72B on 8xH100 with vLLM server mode"), advise=False)
    assert "posttrain.note.vllm_share_too_small" in r.notes


def test_the_plan_lines_hours_are_the_step_lines() -> None:
    text = ask_text(SERVER, AnswerOptions(lang="en"))
    plan = re.search(r"• 8×H100 SXM: ([\d.]+)\s?h", text)
    step = re.search(r"1,000 prompts = \d+ steps ≈ ([\d.]+)\s?h", text)
    assert plan and step and plan.group(1) == step.group(1)


def test_a_tight_change_comes_after_a_comfortable_one() -> None:
    """Colocated 32B: sleep mode with the share vLLM needs fills the card to its edge; splitting vLLM over 2 GPUs
    leaves room, so it leads."""
    a = answer(parse("GRPO Qwen2.5-32B on 8xH100 with vLLM"))
    assert isinstance(a, PostTrainAnswer)
    fitting = [c for c in a.posttrain.changes if c.fits]
    assert fitting and not fitting[0].tight
    assert [c.tight for c in fitting] == sorted(c.tight for c in fitting)
