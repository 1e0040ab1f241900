"""Disaggregated prefill/decode and data-parallel attention (CONTRACT v2.1 `disaggregated`, `prefill_instances`,
`dp_attention`): heard in questions, modelled by the load model (separate pools, the KV sent between them, the KV
pool of DP attention), in the launch command, in what to change and in the reply."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bot.pipeline import AnswerOptions, ask_text
from engine.answer import answer
from engine.parse import parse
from engine.schema import Request
from engine.schema.serving import ServingResult
from engine.serving import serve
from engine.serving.disagg import Split, best_split, pd_point, transfer_s
from engine.serving.load import Features, Machine, Workload, point, prefill_time, token_step
from engine.serving.loadplan import load_block


def serving(q: str) -> ServingResult:
    r = answer(parse(q)).serving
    assert r is not None and r.load is not None, q
    return r


def req(**kw: object) -> Request:
    q: dict[str, object] = {"model": {"name": "Llama-3.1-8B"}, "method": "inference", "serving_engine": "vllm",
                            "gpus": [{"name": "H100 SXM", "count": 2}], "tensor_parallel": 1,
                            "prompt_len": 4000, "output_len": 300}
    q.update(kw)
    return Request.model_validate(q)


def machine(r: Request) -> Machine:  # the load model's instance as the answer built it
    from engine.catalog import find_gpu
    from engine.serving.asked import read_asked
    from engine.serving.core import gpu_choice, profile, settings_for
    from engine.serving.loadplan import machine_for

    asked = read_asked(r, [])
    assert not isinstance(asked, ServingResult)
    choice, cat = gpu_choice(r.gpus[0])
    cat = cat or find_gpu(choice.name)
    assert cat is not None
    s = settings_for(r, asked.engine, asked.fmt, asked.kv_dtype, choice, r.tensor_parallel or 1, 1,
                     asked.max_model_len, [])
    p = profile(r, asked.arch, s, choice, asked.context, asked.users or 1)
    return machine_for(r, asked.arch, s, cat, choice, p.memory, p.kv)


# ---- heard in questions --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("q", "prefill"), [
    ("llama 3.1 8b on 4 h100 vllm, disaggregated prefill/decode, 10 rps", None),
    ("qwen2.5 32b sglang 2P2D на 8 h100, промпты 6k, ответы 200 токенов", 2),
    ("сколько держит 8xH100 для llama 70b с раздельным префиллом", None),
    ("llama 70b на 8 h100, префилл и декод на разных нодах, 30 запросов в секунду", None),
    ("mistral 7b on 2 l40s with P/D split, 3 prefill instances", 3),
    ("дезагрегированный сервинг llama 70b на 8 h100 через dynamo", None),
])
def test_disaggregation_is_heard(q: str, prefill: int | None) -> None:
    r = parse(q)
    assert r.disaggregated is True, q
    assert r.prefill_instances == prefill, q
    assert r.method == "inference"
    assert "disaggregated" not in r.unsupported


@pytest.mark.parametrize("q", ["deepseek v3 на 8 h200 sglang с dp attention, 200 пользователей",
                               "DeepSeek-R1 on 8 H200 with --enable-dp-attention",
                               "qwen3 235b moe vllm, data parallel attention, 8 h100"])
def test_dp_attention_is_heard(q: str) -> None:
    assert parse(q).dp_attention is True, q


@pytest.mark.parametrize("q", ["llama 8b on 2 h100, 4 users", "deepseek v3 on 8 h200, dp 8 replicas? no, tp 8"])
def test_plain_questions_ask_for_neither(q: str) -> None:
    r = parse(q)
    assert not r.disaggregated and not r.dp_attention


# ---- the load model ------------------------------------------------------------------------------------------------
def test_decode_pool_runs_decode_steps_only() -> None:
    """TPOT is the decode instance's step at its batch: no prefill stretches it, unlike colocated chunked prefill."""
    m = machine(req(concurrency=16))
    f, w = Features(), Workload(prompt=4000, output=300, concurrency=16)
    p = pd_point(m, f, w, Split(1, 1, "nvlink"))
    assert p.stable
    assert p.tpot_ms["p50"] == p.step_ms
    assert p.tpot_ms["p50"] == pytest.approx(token_step(m, f, p.running or 1, 4150) * 1e3, abs=0.01)
    colocated = point(m, f, replace(w, concurrency=8))  # one of two colocated replicas
    assert colocated.tpot_ms["p50"] > colocated.step_ms  # prefills share its GPU


def test_ttft_carries_the_transfer_over_the_link() -> None:
    m = machine(req(request_rate=1.0))
    w = Workload(prompt=4000, output=300, request_rate=1.0)
    near = pd_point(m, Features(), w, Split(1, 1, "nvlink"))
    far = pd_point(m, Features(), w, Split(1, 1, "infiniband"))
    gap = (transfer_s(m, w, "infiniband") - transfer_s(m, w, "nvlink")) * 1e3
    assert gap > 0.5  # 4000 tokens of Llama 8B's 128 KiB/token over one 400 Gb NIC: milliseconds
    assert far.ttft_ms["p50"] - near.ttft_ms["p50"] == pytest.approx(gap, abs=0.05)
    assert far.tpot_ms == near.tpot_ms


def test_capacity_is_the_narrower_pool() -> None:
    """Long prompts on one prefill instance: the rate it prefills is the arrangement's capacity; past it, the queue
    grows without bound."""
    m = machine(req(request_rate=1.0, prompt_len=30000, output_len=50))
    w = Workload(prompt=30000, output=50, request_rate=1.0)
    p = pd_point(m, Features(), w, Split(1, 1, "nvlink"))
    assert p.capacity_rps == pytest.approx(1.0 / prefill_time(m, Features(), w), rel=1e-3)
    over = pd_point(m, Features(), replace(w, request_rate=p.capacity_rps * 1.2), Split(1, 1, "nvlink"))
    assert not over.stable and over.binding_limit == "overloaded"


def test_the_split_follows_the_workload() -> None:
    """Prefill-heavy traffic gets more prefill instances than decode-heavy traffic on the same eight instances."""
    m = machine(req(concurrency=64, gpus=[{"name": "H100 SXM", "count": 8}]))
    heavy_prompts = best_split(m, Features(), Workload(prompt=16000, output=64, concurrency=64), 8, None)
    heavy_answers = best_split(m, Features(), Workload(prompt=256, output=2000, concurrency=64), 8, None)
    assert heavy_prompts is not None and heavy_answers is not None
    assert heavy_prompts.prefill > heavy_answers.prefill
    assert best_split(m, Features(), Workload(prompt=256, output=2000), 1, None) is None


# ---- the answer ------------------------------------------------------------------------------------------------------
def test_the_answer_reports_the_pools_and_commands_them_vllm() -> None:
    r = serve(req(disaggregated=True, concurrency=32))
    block = load_block(r.load)
    assert block is not None and block["disaggregation"] is not None
    d = block["disaggregation"]
    assert (d["prefill_instances"], d["decode_instances"]) == (1, 1)
    assert d["link"] == "nvlink" and d["transfer_ms"] > 0
    i = r.command.index("--kv-transfer-config")
    assert "NixlConnector" in r.command[i + 1]
    assert any(a.key == "disaggregated" for a in r.load.assumptions)


def test_sglang_prefill_command_and_the_split_asked() -> None:
    r = serve(req(serving_engine="sglang", disaggregated=True, prefill_instances=3, concurrency=32,
                  gpus=[{"name": "H100 SXM", "count": 4}]))
    assert r.load is not None and r.load.disaggregation is not None
    assert (r.load.disaggregation.prefill_instances, r.load.disaggregation.decode_instances) == (3, 1)
    i = r.command.index("--disaggregation-mode")
    assert r.command[i + 1] == "prefill"


@pytest.mark.parametrize("engine", ["llama.cpp", "tgi"])
def test_engines_without_it_stay_colocated_and_say_so(engine: str) -> None:
    r = serve(req(serving_engine=engine, disaggregated=True, concurrency=4))
    assert r.load is not None and r.load.disaggregation is None
    said = [a for a in r.load.assumptions if a.key == "disaggregated"]
    assert said and "colocated" in str(said[0].value)
    assert "--disaggregation-mode" not in r.command


def test_two_named_gpus_without_tp_become_one_prefill_and_one_decode_instance() -> None:
    r = serving("Llama 3.1 8B on 2 H100 vllm P/D, 32 users, prompt 4000 tokens, output 500 tokens")
    assert r.settings is not None and r.settings.tensor_parallel == 1 and r.replicas == 2
    assert r.load is not None and r.load.disaggregation is not None


def test_what_to_change_offers_it_when_prefills_slow_the_decodes() -> None:
    """Long prompts at a steady rate on eight colocated instances: the decodes share their GPU with the prefills;
    split into pools the decode instances keep their own step time."""
    q = "llama 3.1 8b vllm on 8 h100 tp 1, 10 requests per second, prompt 8000 tokens, output 300 tokens"
    r = serving(q)
    found = [c for c in r.changes if c.key == "serving.change.disaggregated"]
    assert len(found) == 1, [c.key for c in r.changes]
    e, split = found[0].effect, found[0].params
    assert e["tpot_ms"] < e["tpot_ms_before"]
    asked = serving(f"{q}, {split['prefill']}P{split['decode']}D")
    assert asked.load is not None and asked.load.disaggregation is not None
    assert asked.load.point.tpot_ms["p50"] == pytest.approx(e["tpot_ms"])  # the change's figures are the answer's
    assert asked.load.point.ttft_ms["p95"] == pytest.approx(e["ttft_p95_ms"])


def test_no_change_offered_when_it_is_asked_or_cannot_run() -> None:
    q = "llama 3.1 8b {engine} on 8 h100 tp 1, 10 requests per second, prompt 8000 tokens, output 300 tokens"
    for text in (q.format(engine="vllm") + ", disaggregated", q.format(engine="tgi")):
        assert not [c for c in serving(text).changes if c.key == "serving.change.disaggregated"], text


@pytest.mark.parametrize(("lang", "words"), [("en", "prefill and decode on separate instances"),
                                             ("ru", "префилл и декод на раздельных инстансах")])
def test_the_reply_says_it(lang: str, words: str) -> None:
    q = "llama 3.1 8b sglang on 4 h100 tp 1, disaggregated, 4 rps, prompt 6000 tokens, output 200 tokens"
    text = ask_text(q, AnswerOptions(lang=lang))
    assert words in text
    assert "--disaggregation-mode decode" in text  # what the decode instances run


# ---- data-parallel attention -------------------------------------------------------------------------------------
def test_dp_attention_unreplicates_the_mla_cache() -> None:
    """DeepSeek V3's MLA latent sits on all 8 TP ranks under plain TP; with DP attention each rank holds its own
    requests', so the instance holds several times the tokens (less the attention weights now whole on every rank)."""
    base = req(model={"name": "DeepSeek-V3"}, serving_engine="sglang", gpus=[{"name": "H200 SXM", "count": 8}],
               tensor_parallel=8, prompt_len=1000, output_len=1000, concurrency=64)
    plain, wide = machine(base), machine(base.model_copy(update={"dp_attention": True}))
    assert wide.attention_dp == 8 and plain.attention_dp == 1
    assert 5 * plain.kv_tokens < wide.kv_tokens < 8 * plain.kv_tokens
    assert wide.weight_bytes > plain.weight_bytes
    r = serve(base.model_copy(update={"dp_attention": True}))
    assert r.load is not None and r.load.attention_dp == 8
    i = r.command.index("--dp")
    assert r.command[i + 1] == "8" and "--enable-dp-attention" in r.command


def test_vllm_dp_attention_runs_data_parallel_ranks_over_tp_one() -> None:
    r = serve(req(model={"name": "DeepSeek-V3"}, gpus=[{"name": "H200 SXM", "count": 8}], tensor_parallel=8,
                  prompt_len=1000, output_len=1000, concurrency=64, dp_attention=True))
    argv = r.command
    assert argv[argv.index("--tensor-parallel-size") + 1] == "1"
    assert argv[argv.index("--data-parallel-size") + 1] == "8"
    assert "--enable-expert-parallel" in argv
    assert argv[argv.index("--max-num-seqs") + 1] == "8"  # 64 users over 8 engine cores


def test_dp_attention_on_a_dense_model_is_plain_tp_said() -> None:
    r = serve(req(model={"name": "Llama-3.1-70B"}, gpus=[{"name": "H100 SXM", "count": 4}], tensor_parallel=4,
                  concurrency=8, dp_attention=True))
    assert r.load is not None and r.load.attention_dp == 1
    assert any(a.key == "dp_attention" and "plain TP" in str(a.value) for a in r.load.assumptions)
    assert "--enable-dp-attention" not in r.command and "--data-parallel-size" not in r.command


def test_what_to_change_offers_dp_attention_for_mla() -> None:
    r = serving("deepseek v3 on 8 h200 sglang tp 8, 100 users, prompt 1000 tokens, output 1000 tokens")
    found = [c for c in r.changes if c.key == "serving.change.dp_attention"]
    assert len(found) == 1, [c.key for c in r.changes]
    assert found[0].effect["max_concurrency"] > found[0].effect["max_concurrency_before"]
