"""Serving-load questions heard in full (CONTRACT v2.1): prompt and output lengths, request rate, concurrency and the
TTFT / TPOT promise, in Russian and English, without stealing a model size or a context said next to them."""

from __future__ import annotations

from typing import Any

import pytest

from engine.parse import _parse as parse_strict

LOAD = ("prompt_len", "output_len", "request_rate", "concurrency", "ttft_p95_ms", "tpot_ms")


def heard(q: str) -> dict[str, Any]:
    r = parse_strict(q)
    assert r.error is None, (q, r.error)
    return {k: getattr(r, k) for k in LOAD if getattr(r, k) is not None}


@pytest.mark.parametrize(("q", "want"), [
    # output length
    ("vllm 70b ответы по 300 токенов", {"output_len": 300}),
    ("vllm 70b ответ ~300 токенов", {"output_len": 300}),
    ("vllm 70b 300-token answers", {"output_len": 300}),
    ("vllm 70b 300-token responses", {"output_len": 300}),
    ("vllm 70b 300-token outputs", {"output_len": 300}),
    ("vllm 70b 300 token completions", {"output_len": 300}),
    ("vllm 70b answers of 300 tokens", {"output_len": 300}),
    ("vllm 70b 300 tokens per answer", {"output_len": 300}),
    ("vllm 70b по 300 токенов на ответ", {"output_len": 300}),
    ("llama 8b на 4090 с ответами в 200 токенов", {"output_len": 200}),
    ("vllm 70b выходы по 300 токенов", {"output_len": 300}),
    ("vllm 70b output 300", {"output_len": 300}),
    ("vllm 70b generate 256 tokens", {"output_len": 256}),
    ("vllm 70b generating 512 tokens per request", {"output_len": 512}),
    ("vllm 70b сгенерировать 256 токенов", {"output_len": 256}),
    ("vllm 8b генерация 1к токенов", {"output_len": 1024}),
    # prompt length
    ("vllm 8b промпт 2к", {"prompt_len": 2048}),
    # both, each number before its noun: the one between is the next noun's
    ("vllm 70b 2k prompt 300 output", {"prompt_len": 2048, "output_len": 300}),
    ("vllm 70b 2k prompts 300 output tokens", {"prompt_len": 2048, "output_len": 300}),
    ("vllm 70b 4к промпт 256 ответ", {"prompt_len": 4096, "output_len": 256}),
    ("vllm 70b 512 output 4k input", {"prompt_len": 4096, "output_len": 512}),
    ("vllm 70b prompt 2k output 300", {"prompt_len": 2048, "output_len": 300}),
    ("vllm 8b входы по 4k токенов", {"prompt_len": 4096}),
    ("vllm 8b 2k-token prompts", {"prompt_len": 2048}),
    ("vllm 8b 4k-token inputs", {"prompt_len": 4096}),
    ("vllm 8b input 1024", {"prompt_len": 1024}),
    ("vllm 70b промпты по 2к токенов, ответы по 300", {"prompt_len": 2048, "output_len": 300}),
    # request rate, per second
    ("vllm 70b 20 запросов в секунду", {"request_rate": 20.0}),
    ("vllm 70b 20 rps", {"request_rate": 20.0}),
    ("vllm 70b 20 req/s", {"request_rate": 20.0}),
    ("vllm 70b 1200 запросов в минуту", {"request_rate": 20.0}),
    ("vllm 70b 1.2k requests per minute", {"request_rate": 20.0}),
    ("vllm 70b 1,2 тыс. запросов в минуту", {"request_rate": 20.0}),
    ("vllm 70b 72,000 requests per hour", {"request_rate": 20.0}),
    ("vllm 70b 3600 запросов в час", {"request_rate": 1.0}),
    # concurrency
    ("vllm 70b 200 одновременных пользователей", {"concurrency": 200}),
    ("vllm 70b 200 concurrent users", {"concurrency": 200}),
    # the promise
    ("vllm 70b TTFT p95 до 500 мс", {"ttft_p95_ms": 500.0}),
    ("vllm 70b p95 TTFT under 0.5 s", {"ttft_p95_ms": 500.0}),
    ("vllm 70b TTFT p95 ≤ 0,5 с", {"ttft_p95_ms": 500.0}),
    ("vllm 70b first token within 300 ms", {"ttft_p95_ms": 300.0}),
    ("vllm 70b TPOT не больше 50 мс", {"tpot_ms": 50.0}),
    ("vllm 70b ITL ≤ 40ms", {"tpot_ms": 40.0}),
    ("vllm 70b 50 ms per token", {"tpot_ms": 50.0}),
    ("vllm 70b 50 мс на токен", {"tpot_ms": 50.0}),
])
def test_each_load_field_is_heard(q: str, want: dict[str, Any]) -> None:
    assert heard(q) == want, q


def test_the_reviewers_question_is_heard_in_full() -> None:
    q = "what's our cost per 1M tokens at 200 concurrent users with 2k prompts and 300-token answers?"
    r = parse_strict(q)
    assert heard(q) == {"prompt_len": 2048, "output_len": 300, "concurrency": 200}
    assert r.seq_len is None and r.method == "inference"


@pytest.mark.parametrize(("q", "params_b", "seq_len", "want"), [
    ("70B, контекст 8k, промпт 2к, ответ 300", 70, 8192, {"prompt_len": 2048, "output_len": 300}),
    ("vllm 70b, context 8k, 2k prompts, 300-token answers, 20 rps", 70, 8192,
     {"prompt_len": 2048, "output_len": 300, "request_rate": 20.0}),
    ("qwen 32b 128k context, 4k-token prompts, 1k-token outputs, 50 rps, TTFT p95 under 1 s", 32.8, 131072,
     {"prompt_len": 4096, "output_len": 1024, "request_rate": 50.0, "ttft_p95_ms": 1000.0}),
    ("qwen 32b контекст 32к, вход 4к, выход 512, 10 запросов в секунду, TPOT до 40 мс", 32.8, 32768,
     {"prompt_len": 4096, "output_len": 512, "request_rate": 10.0, "tpot_ms": 40.0}),
    ("llama 70b контекст 16к, 2к запросов в минуту, ответы по 300 токенов", 70.6, 16384,
     {"request_rate": pytest.approx(2000 / 60), "output_len": 300}),
    ("Llama 3.1 70B на 4×H100, 2к промпт, 300 токенов ответа, 32 одновременных пользователя", 70.6, None,
     {"prompt_len": 2048, "output_len": 300, "concurrency": 32}),
])
def test_a_model_size_or_context_nearby_is_not_stolen(q: str, params_b: float, seq_len: int | None,
                                                      want: dict[str, Any]) -> None:
    r = parse_strict(q)
    assert r.model is not None and r.model.params_b == pytest.approx(params_b, rel=0.05), q
    assert r.seq_len == seq_len, q
    assert heard(q) == want, q


@pytest.mark.parametrize(("q", "field", "value"), [
    ("vllm 70b генерация по 8 ответов на промпт", "num_generations", 8),  # counts answers, not tokens
    ("grpo 7b 1000 prompts, 8 answers each", "output_len", None),
    ("generate 1M tokens of synthetic data with llama 8b", "output_len", None),  # a data amount, no length
    ("can a 4090 answer 100 users at once with llama 8b?", "concurrency", 100),  # "answer" the verb, no length
    ("can a 4090 answer 100 users at once with llama 8b?", "output_len", None),
    ("vllm 70b 20 rps", "concurrency", None),  # a rate is not users at once
    ("vllm 70b 1.2k requests per minute", "concurrency", None),
    ("vllm 70b 2к запросов в минуту", "seq_len", None),  # «2к» counts requests here, no context
])
def test_a_count_is_not_read_as_a_length_or_a_rate_as_users(q: str, field: str, value: Any) -> None:
    assert getattr(parse_strict(q), field) == value, q


@pytest.mark.parametrize(("q", "count", "gpus"), [
    ("mi300x llama 3.1 405b fp8 vllm 8 карт сколько пользователей", None, 8),
    ("sglang qwen3 30b-a3b на 4090 сколько влезет пользователей", None, 1),
    ("сколько потянет юзеров 4090 на qwen 7b", None, 1),
    ("32 одновременных пользователя llama 8b vllm h100", 32, 1),
])
def test_a_number_with_its_own_noun_or_before_how_many_is_no_user_count(q: str, count: int | None, gpus: int) -> None:
    r = parse_strict(q)
    assert r.concurrency == count and r.gpus and r.gpus[0].count == gpus, (q, r.concurrency, r.gpus)
    if count is None:
        assert "users" in r.asks


@pytest.mark.parametrize("q", ["какая задержка первого токена у qwen2.5 72b awq на 2 4090",
                               "eagle для llama 3.1 8b на h100, 1 юзер",
                               "how many LoRA adapters can one H100 serve for llama 3.1 8b?"])
def test_latency_speculation_and_adapters_are_serving_questions(q: str) -> None:
    from engine.serving import is_serving_request

    assert is_serving_request(parse_strict(q)), q


@pytest.mark.parametrize("q", ["disaggregated prefill для deepseek v3 на 16 h200",
                               "deepseek v3 on 16 h200 with pd disaggregation",
                               "дезагрегированный сервинг llama 70b на 8 h100 через dynamo"])
def test_disaggregated_serving_is_a_request_field_now(q: str) -> None:
    """Once named as not modelled; now CONTRACT v2.1 `disaggregated`, answered with prefill and decode pools."""
    r = parse_strict(q)
    assert r.disaggregated is True and "disaggregated" not in r.unsupported, (q, r.unsupported)
    from bot.pipeline import AnswerOptions, render_request
    from bot.views.render import plain

    text = plain(render_request(r, AnswerOptions(lang="en")).html)
    assert "is not modelled yet" not in text
    assert "prefill and decode on separate instances" in text


@pytest.mark.parametrize(("q", "asked"), [
    ("сколько токенов даст llama 8b на 4090", True),
    ("сколько токенов выдаст 70б на h100 awq", True),
    ("сколько токенов нужно для обучения 8b", False),
])
def test_how_many_tokens_it_gives_asks_for_its_speed(q: str, asked: bool) -> None:
    assert ("throughput" in parse_strict(q).asks) is asked, q


def test_speed_as_the_last_word_asks_for_the_speed() -> None:
    for text in ("deepseek v3 на 8xh200 скорость", "llama 70b on 2 h100 speed", "квен 32б на 4090, скорость?"):
        assert "throughput" in parse_strict(text).asks, text
    # a speed word inside a training question is not a serving ask
    assert "throughput" not in parse_strict("лора 8б на 4090 скорость обучения").asks


@pytest.mark.parametrize(("q", "ms", "pct"), [
    ("llama 3.1 70b vllm на 2xh100 латенси до 500мс", 500.0, None),
    ("Llama 3.1 8B on vLLM, 50 users, p99 under 2s on an L40S?", 2000.0, 99),
    ("8b vllm l40s 50 юзеров, задержка p95 до 1 с", 1000.0, None),
    ("qwen 7b serving, p95 latency < 300ms", 300.0, None),
    ("70b на h100, задержка не больше 2 секунд", 2000.0, None),
    ("mistral 7b на a10g, латентность p99 до 800 мс", 800.0, 99),
    ("gemma 2 9b l4 median latency 400 ms", 400.0, 50),
])
def test_a_latency_promise_naming_no_phase_is_read_as_ttft_and_marked_as_read(q: str, ms: float,
                                                                              pct: int | None) -> None:
    r = parse_strict(q)
    assert (r.ttft_p95_ms, r.ttft_percentile, r.method) == (ms, pct, "inference"), q
    assert "ttft_p95_ms" in r.assumed  # the answer says it read the latency as the first token's
    assert r.seq_len is None and r.concurrency in (None, 50)  # the number is no context


def test_a_latency_per_token_or_a_named_ttft_is_not_a_reading() -> None:
    per_token = parse_strict("llama 8b vllm latency 50 ms per token")
    assert per_token.tpot_ms == 50.0 and per_token.ttft_p95_ms is None
    named = parse_strict("llama 8b vllm TTFT p95 800 ms, latency matters")
    assert named.ttft_p95_ms == 800.0 and "ttft_p95_ms" not in named.assumed
    assert parse_strict("лора 8б на 4090 с задержкой").ttft_p95_ms is None  # no number: no promise
    for training in ("fine-tune llama 8b, latency 200 ms", "обучение 7b на h100 за 5 часов, задержка 1 с",
                     "qlora 8b latency 300ms"):  # a training question stays one
        r = parse_strict(training)
        assert r.ttft_p95_ms is None and r.method != "inference", training
