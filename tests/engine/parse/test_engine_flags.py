"""Serving-engine flags written into a question are read through the engines' own flag tables (as a pasted launch
line's are): the options they set reach the answer and its launch command; a flag the engine has but the estimate
does not use is named; a trainer's keys are left to the training parser."""

from __future__ import annotations

from bot.pipeline import ask_text
from engine.parse import parse


def test_the_engine_options_of_a_question_reach_the_request() -> None:
    r = parse("llama 3.1 70b on 2 h100, max_num_seqs=64 --max-model-len 32k --tensor-parallel-size 2")
    assert r.engine_options is not None and r.engine_options.max_num_seqs == 64
    assert r.engine_options.max_model_len == 32768 and r.seq_len == 32768
    assert r.tensor_parallel == 2  # a flag the question's own extractors read is left to them
    r = parse("сколько юзеров выдержит qwen 32b на h100 в sglang --mem-fraction-static 0,8 --max-running-requests 32")
    assert r.engine_options is not None and r.engine_options.gpu_memory_utilization == 0.8
    assert r.engine_options.max_num_seqs == 32


def test_the_option_is_in_the_answer_and_its_command() -> None:
    text = ask_text("qwen 7b на 4090 vllm --gpu-memory-utilization 0.85")
    assert "--gpu-memory-utilization 0.85" in text and "--gpu-memory-utilization 0.9 " not in text


def test_a_flag_the_estimate_does_not_use_is_named_not_dropped() -> None:
    r = parse("qwen 7b на 4090 --swap-space 16 --enforce-eager")
    assert r.unsupported == ["--swap-space"] and r.enforce_eager is True
    assert "--swap-space" in ask_text("qwen 7b на 4090 --swap-space 16").split("Команда запуска")[0]


def test_a_trainer_s_keys_are_not_taken_for_engine_flags() -> None:
    r = parse("lora 8b max_seq_length=2048 per_device_train_batch_size=4 --num-train-epochs 3")
    assert r.engine_options is None and not r.unsupported
    assert r.seq_len == 2048 and r.batch_size == 4


def test_an_engine_flag_alone_asks_the_engine_and_keeps_the_question_s_context() -> None:
    # no engine named: the flag is vLLM's, so vLLM answers; a few flags are not a whole launch line, so max_model_len
    # stays the question's context (4k default), not the model's own 131k limit that a bare `vllm serve` would take
    from engine.answer import answer

    a = answer(parse("qwen 7b на 4090 --gpu-memory-utilization 0.85"))
    assert a.kind == "serving" and a.serving.fits
    s = a.serving.settings
    assert s is not None and s.max_model_len == 4096 and s.gpu_memory_utilization == 0.85
    # SGLang's own flag with no engine named: SGLang's engine
    assert parse("llama 8b on a100 --mem-fraction-static 0.8").serving_engine == "sglang"
    assert parse("llama 8b on a100 vllm --mem-fraction-static 0.8").serving_engine == "vllm"
    # the user's own max_model_len is kept as said
    r = parse("qwen 7b на 4090 --max-model-len 16k --gpu-memory-utilization 0.85")
    assert r.engine_options is not None and r.engine_options.max_model_len == 16384
