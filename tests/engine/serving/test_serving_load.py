"""The load model of continuous batching, sizing for a promise, the v2.1 fields heard in questions, and the first
line of a reply under load."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bot.pipeline import AnswerOptions, render_request
from bot.views.render import plain
from engine.catalog import find_gpu
from engine.contract import estimate_request
from engine.parse import parse
from engine.schema import GpuRef, ModelRef, Request
from engine.serving import serve
from engine.serving.load import Features, Machine, Workload, point, token_step
from engine.serving.sizing import size


def result(**extra: object) -> object:
    q: dict[str, object] = {"model": ModelRef(name="Llama-3.1-70B"), "method": "inference", "serving_engine": "vllm",
                            "gpus": [GpuRef(name="H100 SXM", count=2)], "tensor_parallel": 2, "quantization": "fp8",
                            "prompt_len": 2048, "output_len": 300}
    q.update(extra)
    return serve(Request(**q))  # type: ignore[arg-type]


def machine(link: str = "nvlink") -> Machine:
    r = serve(Request(model=ModelRef(name="Llama-3.1-70B"), method="inference", serving_engine="vllm",
                      gpus=[GpuRef(name="H100 SXM", count=4)], tensor_parallel=4, prompt_len=2048, output_len=300))
    assert r.load is not None
    from engine.catalog import architecture
    from engine.serving.loadplan import machine_for
    gpu = find_gpu("H100 SXM")
    assert gpu is not None and r.settings and r.gpu and r.memory and r.kv
    m = machine_for(Request(model=ModelRef(name="Llama-3.1-70B")), architecture(ModelRef(name="Llama-3.1-70B")),
                    r.settings, gpu, r.gpu, r.memory, r.kv)
    return replace(m, link=link)  # type: ignore[arg-type]


W = Workload(prompt=2048, output=300, concurrency=1)


def test_throughput_and_latency_rise_with_load_until_the_pool_binds() -> None:
    m, f = machine(), Features()
    points = [point(m, f, replace(W, concurrency=c)) for c in (1, 4, 16, 64)]
    out = [p.output_tokens_s or 0 for p in points]
    tpot = [p.tpot_ms["p50"] for p in points]
    assert out == sorted(out) and out[-1] > 4 * out[0]
    assert tpot == sorted(tpot)


def test_past_the_kv_pool_requests_queue_and_throughput_stays_flat() -> None:
    m, f = machine(), Features()
    cap = point(m, f, W).max_concurrency
    at, past = point(m, f, replace(W, concurrency=cap)), point(m, f, replace(W, concurrency=cap * 3))
    assert past.binding_limit in ("kv_cache", "max_num_seqs")
    assert past.output_tokens_s == pytest.approx(at.output_tokens_s, rel=0.01)
    assert past.ttft_ms["p50"] > 5 * at.ttft_ms["p50"]


def test_a_rate_above_capacity_is_unstable_and_waits_grow_near_it() -> None:
    m, f = machine(), Features()
    cap = point(m, f, W).capacity_rps
    over = point(m, f, Workload(prompt=2048, output=300, request_rate=cap * 1.2))
    assert not over.stable and over.binding_limit == "overloaded"
    half = point(m, f, Workload(prompt=2048, output=300, request_rate=cap * 0.3))
    near = point(m, f, Workload(prompt=2048, output=300, request_rate=cap * 0.97))
    assert near.stable and near.ttft_ms["p95"] > 3 * half.ttft_ms["p95"]


def test_tensor_parallel_over_pcie_is_slower_than_nvlink() -> None:
    f = Features()
    w = replace(W, concurrency=32)
    assert point(machine("pcie"), f, w).tpot_ms["p50"] > point(machine("nvlink"), f, w).tpot_ms["p50"]
    assert point(machine("infiniband"), f, w).tpot_ms["p50"] > point(machine("nvlink"), f, w).tpot_ms["p50"]


def test_speculative_decoding_pays_at_low_load_and_not_at_high() -> None:
    m = machine()
    plain_f, spec = Features(), Features(speculative="eagle")
    low = token_step(m, plain_f, 1, 2200) / token_step(m, spec, 1, 2200)
    high = token_step(m, plain_f, 512, 600) / token_step(m, spec, 512, 600)  # compute-bound verify
    assert low > 1.5
    assert high < 1.0


def test_sizing_picks_the_cheapest_arrangement_that_keeps_the_promise() -> None:
    q = Request(model=ModelRef(name="Llama-3.1-8B"), method="inference", serving_engine="vllm", request_rate=8.0,
                ttft_p95_ms=800, prompt_len=2048, output_len=300, gpus=[GpuRef(name="H100 SXM")])
    r = serve(q)
    assert r.load is not None and r.load.meets is True
    assert r.gpu is not None
    if r.gpu.count > 1:  # one GPU fewer of the same kind and format does not keep it
        fewer = serve(q.model_copy(update={"gpus": [GpuRef(name="H100 SXM", count=r.gpu.count - 1)],
                                           "quantization": r.settings.weight_format if r.settings else None}))
        assert fewer.load is None or fewer.load.meets is not True or fewer.gpu.count >= r.gpu.count  # type: ignore
    from engine.catalog import architecture
    arch = architecture(ModelRef(name="Llama-3.1-8B"))
    h100, a100 = find_gpu("H100 SXM"), find_gpu("A100 80GB SXM")
    assert h100 is not None and a100 is not None
    both = size(q, arch, "vllm", "bf16", "auto", [h100, a100], 2048, 300, 2348, 2348)
    one = size(q, arch, "vllm", "bf16", "auto", [h100], 2048, 300, 2348, 2348)
    other = size(q, arch, "vllm", "bf16", "auto", [a100], 2048, 300, 2348, 2348)
    assert both is not None and one is not None and other is not None
    assert both.per_hour == min(one.per_hour or 1e9, other.per_hour or 1e9)


def test_sizing_over_the_catalog_puts_a_cuda_card_before_a_cheaper_rocm_one() -> None:
    from engine.catalog import architecture
    q = Request(model=ModelRef(name="Llama-3.1-70B"), method="inference", serving_engine="vllm", request_rate=20.0,
                ttft_p95_ms=500, prompt_len=300, output_len=512)
    arch = architecture(ModelRef(name="Llama-3.1-70B"))
    mi300x, h100 = find_gpu("MI300X"), find_gpu("H100 SXM")
    assert mi300x is not None and h100 is not None and mi300x.rocm_arch is not None
    amd = size(q, arch, "vllm", "bf16", "auto", [mi300x], 300, 512, 812, 812)
    nvidia = size(q, arch, "vllm", "bf16", "auto", [h100], 300, 512, 812, 812)
    both = size(q, arch, "vllm", "bf16", "auto", [mi300x, h100], 300, 512, 812, 812)
    assert amd is not None and nvidia is not None and both is not None
    assert (amd.per_hour or 0) < (nvidia.per_hour or 0)  # the ROCm card is the cheaper here...
    assert both == nvidia  # ...and still comes after the CUDA one; named alone, it is sized as asked (amd)


def test_a_named_setup_past_capacity_says_the_queue_grows() -> None:
    r = result(request_rate=500.0)
    assert r.load is not None and not r.load.point.stable
    assert r.load.point.binding_limit == "overloaded"


def test_estimate_json_carries_serving_load() -> None:
    out = estimate_request({"model": {"name": "Llama-3.1-70B"}, "method": "inference", "serving_engine": "vllm",
                            "gpus": [{"name": "H100 SXM", "count": 2}], "quantization": "fp8", "concurrency": 16,
                            "prompt_len": 2048, "output_len": 300})
    load = out["serving"]["load"]
    assert set(load["ttft_ms"]) >= {"p50", "p95"} and set(load["tpot_ms"]) >= {"p50", "p95"}
    assert load["throughput"]["total_tokens_s"] > load["throughput"]["output_tokens_s"] > 0
    assert load["binding_limit"]


@pytest.mark.parametrize(("text", "field", "value"), [
    ("сколько H100 нужно, чтобы держать 20 запросов в секунду на Llama 3.1 70B?", "request_rate", 20.0),
    ("llama 8b on h100, 20 rps", "request_rate", 20.0),
    ("qwen 7b 120 requests per minute on a100", "request_rate", 2.0),
    ("TTFT p95 под 500 мс, llama 70b на h100", "ttft_p95_ms", 500.0),
    ("llama 70b, time to first token under 1.5 s, vllm", "ttft_p95_ms", 1500.0),
    ("llama 70b vllm TPOT 40 ms", "tpot_ms", 40.0),
    ("vllm llama 8b с префикс-кэшем 50 %", "prefix_cache_hit_rate", 0.5),
    ("vllm llama 8b prefix caching hit rate 70%", "prefix_cache_hit_rate", 0.7),
    ("стоит ли включать спекулятивное декодирование для llama 70b на vllm", "speculative", "draft"),
    ("llama 70b vllm with EAGLE speculative decoding", "speculative", "eagle"),
    ("сколько 100 LoRA-адаптеров выдержит одна H100 на llama 8b vllm", "max_loras", 100),
    ("deepseek v3 vllm expert parallel on 8xh100", "expert_parallel", True),
    ("vllm llama 8b --enforce-eager on a10", "enforce_eager", True),
    ("llama 70b vllm on 4x l40s over pcie", "interconnect", "pcie"),
    ("llama 405b vllm on two nodes of 8xh100", "interconnect", "infiniband"),
])
def test_load_fields_are_heard(text: str, field: str, value: object) -> None:
    assert getattr(parse(text), field) == value


def test_prompt_and_output_lengths_with_a_rate() -> None:
    r = parse("2k промпт, 300 токенов ответа, 20 rps, llama 8b vllm на h100")
    assert (r.prompt_len, r.output_len, r.request_rate) == (2048, 300, 20.0)


def test_how_many_users_is_a_serving_question_with_vllm_assumed() -> None:
    out = estimate_request(parse("How many concurrent users can 2xH100 serve for Llama 3.1 70B at 8k context?")
                           .model_dump(exclude_none=True))
    assert "serving" in out and "serving_engine=vllm" in out["serving"]["assumptions"]
    assert out["serving"]["load"]["users_within_promise"] >= 1


@pytest.mark.parametrize(("lang", "text", "words"), [
    ("ru", "Llama 3.1 8B на 1 H100 vllm, 5 запросов в секунду, 2k промпт, 300 токенов ответа, TTFT p95 под 2 с",
     ("держ", "запрос", "TTFT p95", "ток/с на пользователя")),
    ("en", "Llama 3.1 8B on 1 H100 vllm, 5 rps, 2k prompt, 300 output tokens, TTFT p95 under 2 s",
     ("hold", "requests/s", "TTFT p95", "tokens/s per user")),
])
def test_first_line_answers_the_promise(lang: str, text: str, words: tuple[str, ...]) -> None:
    first = plain(render_request(parse(text), AnswerOptions(lang=lang)).html).strip().splitlines()[0]
    assert first.startswith("✅")
    for w in words:
        assert w in first


def test_first_line_says_a_rate_past_capacity_queues_without_bound() -> None:
    first = plain(render_request(parse("Llama 3.1 70B fp8 on 2 H100 vllm, 300 rps, 2k prompt, 300 output tokens"),
                                 AnswerOptions(lang="en")).html).strip().splitlines()[0]
    assert first.startswith("❌") and "without bound" in first


def test_tokens_per_second_of_a_70b_on_one_h100_is_answered_in_4_bit() -> None:
    r = serve(parse("сколько токенов в секунду даст 70б на h100"))
    assert r.speed is not None and r.speed.per_user_tokens_s > 0
    assert r.settings is not None and r.settings.weight_format == "awq"
    assert any(str(a) == "weight_format_instead=awq" for a in r.assumptions)


@pytest.mark.parametrize(("lang", "text", "named", "sized_word"), [
    ("ru", "mixtral 8x7b на 2 h100 vllm 10 rps ttft 300ms", "2×H100 SXM (TP\u00a02) не держат 10\u00a0запросов/с",
     "справятся: TTFT p95"),
    ("en", "Llama 3.1 70B on 4 H100 with vLLM, 20 requests per second, TTFT p95 under 500 ms",
     "4×H100 SXM (TP\u00a04) do not", "hold it: TTFT p95"),
])
def test_named_gpus_that_miss_the_load_are_answered_first_then_what_holds_it(lang: str, text: str, named: str,
                                                                             sized_word: str) -> None:
    request = parse(text)
    first = plain(render_request(request, AnswerOptions(lang=lang)).html).strip().splitlines()[0]
    assert first.startswith("❌ " + named), first
    assert sized_word in first and first.index(sized_word) > first.index(named)
    out = estimate_request(request.model_dump(exclude_none=True))
    asked = request.gpus[0].count
    assert out["verdict"] == "no_fit" and out["request"]["gpu_count"] == asked
    assert out["fits"][0]["count"] == asked and out["fits"][0]["fits"] is False
    assert out["fits"][1]["count"] > asked and out["fits"][1]["fits"] is True
    assert out["serving"]["load"]["promise"]["meets"] is True  # the load block is the sized arrangement's


def test_named_gpus_that_keep_the_promise_are_answered_as_they_are() -> None:
    request = parse("Llama 3.1 8B on 1 H100 vllm, 2 requests per second, TTFT p95 under 500 ms")
    r = serve(request)
    assert r.instead_of is None and r.gpu is not None and r.gpu.count == 1
    assert estimate_request(request.model_dump(exclude_none=True))["verdict"] in ("fits", "tight")


@pytest.mark.parametrize(("lang", "text", "words"), [
    ("ru", "стоит ли спекулятивный декодинг для qwen2.5 32b на h100 при 4 пользователях",
     ("Спекулятивный декодинг (draft-модель) при 4 пользователях", "ток/с на пользователя (×")),
    ("en", "is eagle worth it for llama 3.1 8b on h100 at 64 users",
     ("Speculative decoding (EAGLE) at 64 users", "tokens/s per user (×")),
    ("ru", "eagle для llama 3.1 8b на h100, 1 юзер", ("при 1 пользователе", "стоит включать")),
])
def test_is_speculative_decoding_worth_it_is_answered_first(lang: str, text: str, words: tuple[str, ...]) -> None:
    request = parse(text)
    assert "money" not in request.asks  # «стоит ли» asks whether it pays, not a price
    first = plain(render_request(request, AnswerOptions(lang=lang)).html).strip().splitlines()[0]
    for w in words:
        assert w in first, first
    r = serve(request)
    assert r.load is not None and r.load.speculative_speedup is not None and r.load.speculative_speedup > 1.0


@pytest.mark.parametrize(("lang", "text", "lead", "users"), [
    ("en", "what's our cost per 1M tokens at 200 concurrent users with 2k prompts and 300-token answers on "
           "llama 3.1 8b?", "per 1M tokens (", "at 200 users at once"),
    ("ru", "сколько будет стоить 1 млн токенов на llama 3.1 70b fp8 на 2 h100 при 32 пользователях",
     "за 1 млн токенов (", "при 32 одновременных пользователях"),
])
def test_a_price_question_under_load_leads_with_the_price(lang: str, text: str, lead: str, users: str) -> None:
    first = plain(render_request(parse(text), AnswerOptions(lang=lang)).html).strip().splitlines()[0]
    assert lead in first.split(":")[0] and users in first, first


@pytest.mark.parametrize(("lang", "text", "words"), [
    ("ru", "сколько пользователей выдержат 2 h100 на llama 3.1 70b fp8 с TTFT до 1 с",
     ("2×H100 SXM (TP\u00a02): до ", "одновременных пользователей в пределах TTFT p95 1\u00a0с")),
    ("en", "how many users can 2 H100 hold for llama 3.1 70b fp8 with TTFT p95 under 1 s",
     ("2×H100 SXM (TP\u00a02): up to ", "users at once within TTFT p95 1 s")),
])
def test_how_many_users_within_a_promise_is_answered_with_that_count(lang: str, text: str,
                                                                      words: tuple[str, ...]) -> None:
    request = parse(text)
    r = serve(request)
    assert r.load is not None and r.load.users_within_promise is not None and r.load.users_within_promise > 8
    first = plain(render_request(request, AnswerOptions(lang=lang)).html).strip().splitlines()[0]
    assert first.startswith("✅ ") and all(w in first for w in words), first
    assert f" {r.load.users_within_promise} " in first


@pytest.mark.parametrize(("lang", "text", "words"), [
    ("ru", "сколько нужно h100 на 1000 одновременных пользователей llama 3.1 8b",
     ("🔢 Понадобится ", "×H100 SXM", "хватает на 1\u00a0044 таких запроса")),
    ("en", "how many H100 do I need for 1000 concurrent users of llama 3.1 8b", ("🔢 It takes ", "×H100 SXM")),
])
def test_how_many_gpus_for_n_users_leads_with_the_count(lang: str, text: str, words: tuple[str, ...]) -> None:
    first = plain(render_request(parse(text), AnswerOptions(lang=lang)).html).strip().splitlines()[0]
    assert all(w in first for w in words) and not first.rstrip().endswith("✓"), first


@pytest.mark.parametrize(("text", "pct"), [
    ("llama 3.1 8b on h100 vllm, 5 rps, ttft p99 under 1 s", 99),
    ("p99 ttft under 1s for llama 3.1 8b on h100 at 5 rps", 99),
    ("медианный TTFT до 1 с, llama 3.1 8b на h100 vllm, 5 запросов в секунду", 50),
])
def test_a_ttft_promise_at_another_percentile_is_judged_at_it(text: str, pct: int) -> None:
    request = parse(text)
    assert request.ttft_percentile == pct and request.ttft_p95_ms == 1000
    r = serve(request)
    assert r.load is not None and r.load.ttft_percentile == pct
    got = r.load.point.ttft_ms[f"p{pct}"]
    assert r.load.meets is (got <= 1000)
    first = plain(render_request(request, AnswerOptions(lang="en")).html).strip().splitlines()[0]
    assert f"TTFT p{pct} ≈" in first and "TTFT p95" not in first, first
    out = estimate_request(request.model_dump(exclude_none=True))
    assert out["serving"]["load"]["promise"]["ttft_percentile"] == pct


@pytest.mark.parametrize(("lang", "text", "words"), [
    ("ru", "сколько rps выдержит h100 на llama 3.1 8b", ("держит до ", "запр./с при промпте из")),
    ("en", "how many requests per second can an h100 serve for llama 3.1 8b", ("holds up to ", "requests/s with")),
    ("ru", "сколько запросов в секунду потянет 4090 на qwen 7b", ("держит до ", "запр./с")),
])
def test_how_many_requests_per_second_leads_with_the_rate_it_holds(lang: str, text: str,
                                                                    words: tuple[str, ...]) -> None:
    request = parse(text)
    assert request.asks[0] == "rate" and "users" not in request.asks
    r = serve(request)
    assert r.load is not None and r.load.capacity_rps > 0
    first = plain(render_request(request, AnswerOptions(lang=lang)).html).strip().splitlines()[0]
    assert all(w in first for w in words), first
