"""Issue 21 classes checked below the first line: EXL2 weights at the bits said, Mistral Large's shape, node counts
and deadlines in days as worded, a period priced for a model question."""

from __future__ import annotations

import pytest

from bot.pipeline import ask_text
from bot.views.formats import about_days, days_text, nodes_text
from engine.answer import answer
from engine.catalog import find_model
from engine.configs import config_for
from engine.memory.state import frozen_base_bytes
from engine.parse import parse
from engine.scenario import build_scenario


def _scenario(text: str):
    return build_scenario(parse(text))


def test_exl2_weights_are_the_bits_per_weight_said_with_a_6_bit_head_and_the_embeddings_off_the_gpu() -> None:
    six = _scenario("exl2 6bpw mistral 7b на 3060")
    assert six.weight_bpw == 6.0
    arch = six.arch
    want = arch.linear_params * 6 / 8 + arch.vocab * arch.hidden * 6 / 8
    assert frozen_base_bytes(six) == pytest.approx(want)
    four = _scenario("exl2 4.0bpw mistral 7b на 3060")
    five = _scenario("exl2 5bpw mistral 7b на 3060")
    eight = _scenario("mistral 7b int8 на 3060")
    assert frozen_base_bytes(four) < frozen_base_bytes(five) < frozen_base_bytes(six) < frozen_base_bytes(eight)
    assert _scenario("mistral 7b на 3060").weight_bpw is None
    text = ask_text("exl2 6bpw mistral 7b на 3060")
    assert "EXL2 6\u00a0bpw" in text and "ExLlamaV2 (TabbyAPI) как движок не моделирую" in text
    assert "⚡" not in text  # no speed is made up for an engine that is not modelled


def test_mistral_large_is_the_123b_dense_model_of_its_config() -> None:
    m = find_model("mistral large")
    assert m is not None and m.name == "Mistral-Large-123B"
    c = m.config
    layer = (2 * c.hidden_size * c.num_attention_heads * c.head_dim
             + 2 * c.hidden_size * c.num_key_value_heads * c.head_dim
             + 3 * c.hidden_size * c.intermediate_size + 2 * c.hidden_size)
    total = c.num_hidden_layers * layer + 2 * c.vocab_size * c.hidden_size + c.hidden_size
    assert m.params_b == pytest.approx(total / 1e9, abs=1e-4)
    for said in ("mistral-large-instruct-2407", "Mistral-Large-Instruct-2411", "мистраль лардж", "mistral 123b"):
        r = parse(f"инфер {said} на 4 h100")
        assert r.model is not None and r.model.params_b == pytest.approx(122.6, rel=0.01), said


def _plain(text: str) -> str:
    return text.replace("\u00a0", " ")


def test_node_counts_and_deadlines_are_worded_in_nodes_and_days() -> None:
    assert _plain(nodes_text("ru", 128, 16)) == "16 узлов по 8 GPU"
    assert _plain(nodes_text("ru", 16, 1)) == "2 узла по 8 GPU"  # a count over one node's GPUs
    assert _plain(nodes_text("en", 4, 1)) == "1 node (4 of its 8 GPUs)"
    assert _plain(days_text("ru", 336)) == "14 дней (336 ч)" and _plain(days_text("ru", 24)) == "24 ч"
    assert _plain(days_text("en", 72)) == "3 days (72 h)" and _plain(days_text("en", 36)) == "36 h"
    assert _plain(about_days("ru", 249)) == "249 ч (≈10 дней)" and _plain(about_days("ru", 5.2)) == "5,2 ч"


def test_a_model_question_that_prices_a_period_gets_that_period_for_the_gpus_asked() -> None:
    a = answer(parse("сколько стоит инфер 70б на 2 h100 в месяц"))
    assert a.rental is not None and a.rental.count == 2 and a.rental.hours == 730
    assert answer(parse("лора 8б на 2 h100 на 1B токенов сколько стоит")).rental is None  # a run is priced instead
    served = ask_text("сколько стоит инфер мистраль лардж на 8 h100 в месяц vllm").split("\n")
    assert served[0].startswith("💰 8×H100 SXM на 730") and served[2].startswith("✅")


def test_a_latency_promise_is_judged_as_ttft_and_says_so() -> None:
    text = ask_text("llama 3.1 70b vllm на 2xh100 латенси до 500мс")
    assert "задержка понята как время до первого токена: TTFT p95 ≤ 0,5 с" in text
    en = ask_text("Llama 3.1 8B on vLLM, 50 users, p99 under 2s on an L40S?")
    assert en.splitlines()[0].find("TTFT p99") > 0  # the first line judges the promise at the percentile said
    assert "latency read as the time to first token: TTFT p99 ≤ 2 s" in en


@pytest.mark.parametrize(("q", "repo"), [
    ("llama 3.1 70b vllm на 2xh100", "meta-llama/Llama-3.1-70B-Instruct"),
    ("qwen2.5 7b на 4090 sglang", "Qwen/Qwen2.5-7B-Instruct"),
    ("gemma 2 9b на l4 vllm", "google/gemma-2-9b-it"),
    ("mistral 7b v0.3 vllm a10g", "mistralai/Mistral-7B-Instruct-v0.3"),
])
def test_a_serving_command_loads_the_chat_model_and_training_the_catalog_checkpoint(q: str, repo: str) -> None:
    text = ask_text(q)
    assert f" {repo} " in text, q
    m = find_model(repo)  # the chat id resolves to the same catalog shape
    assert m is not None and m.served_id == repo and m.hf_id != repo
    trained = config_for(parse(f"lora {m.name} on one h100"))  # a fine-tune starts from the catalog checkpoint
    assert m.hf_id in trained.files[0].text and repo not in trained.files[0].text


def test_the_change_that_fits_the_card_asked_is_timed_in_the_first_line() -> None:
    """«лора 8b на 4080»: the hours of 2×4080 lead, and the one card asked gets the hours of its fix (QLoRA)."""
    a = answer(parse("лора 8b на 4080 сколько по времени на 100М токенов"))
    assert a.verdict == "fits_with_changes" and a.fix is not None and a.fix.update["method"] == "qlora"
    assert a.fix_plan is not None and (a.fix_plan.gpu, a.fix_plan.count) == ("RTX 4080", 1)
    two = next(p for p in a.plans if p.count == 2)
    assert a.fix_plan.hours is not None and two.hours is not None
    assert a.fix_plan.hours > two.hours  # one card, and QLoRA dequantizes: slower than two cards of LoRA
    first = ask_text("лора 8b на 4080 сколько по времени на 100М токенов").splitlines()[0]
    assert "на 1×RTX 4080 после изменения ниже:" in first and "не считаю" not in first
    money = ask_text("lora 70b on one a100, how much for 100M tokens").splitlines()[0]
    assert money.startswith("💰") and "on 1×A100 80GB SXM after the change below:" in money
    # a change that is no change of method (gradient checkpointing) keeps the plans' own hours only
    assert answer(parse("full 8b на h100 сколько стоит 100М токенов")).fix_plan is None


def test_full_training_on_one_small_card_gets_the_offload_its_plans_run_and_the_lighter_one_where_it_is_enough(
) -> None:
    """«фулл 8b на 4090»: the plans offer 1×4090 with ZeRO-3 + CPU offload (parameters too), so the verdict's fix is
    that offload, not "does not fit"; where the optimizer's offload alone fits (7B on an A100 40GB) it stays the fix."""
    a = answer(parse("фулл 8b на 4090 сколько по времени"))
    assert a.verdict == "fits_with_changes" and a.fix is not None
    assert a.fix.key == "cpu_offload" and a.fix.params.get("params") is True
    assert any(p.gpu == "RTX 4090" and p.count == 1 and "cpu_offload" in p.techniques for p in a.plans)
    first = ask_text("фулл 8b на 4090 сколько по времени").splitlines()
    assert "1×RTX 4090" in first[0] and first[1].startswith("🔧")
    b = answer(parse("full fine-tune 7b on one a100 40gb how long"))
    assert b.fix is not None and b.fix.key == "cpu_offload" and not b.fix.params.get("params")


@pytest.mark.parametrize(("q", "repo"), [
    ("meta-llama/Llama-3.1-70B vllm на 4xh100", "meta-llama/Llama-3.1-70B"),
    ("serve Qwen/Qwen2.5-7B with vllm on an L4", "Qwen/Qwen2.5-7B"),
    ("meta-llama/Llama-3.1-8B-Instruct sglang on one h100", "meta-llama/Llama-3.1-8B-Instruct"),
])
def test_a_hub_id_typed_is_the_checkpoint_the_command_loads(q: str, repo: str) -> None:
    """The base typed is served as the base (the chat model only when the family is named without an id), and a
    training config loads the id typed too; the id still resolves to the catalog's shape."""
    r = parse(q)
    assert r.model is not None and r.model.name == repo and r.model.params_b
    assert f" {repo} " in ask_text(q)
    trained = config_for(parse(f"lora {repo} on one h100"))
    assert f"'{repo}'" in trained.files[0].text


def test_a_parameter_offload_the_plans_rank_out_is_not_the_fix() -> None:
    """70B fully fine-tuned on one H100 fits only with its weights streamed from CPU RAM; the plans rank that out for
    two nodes, so the answer leads with the count, as its fit list does."""
    a = answer(parse("full fine-tune 70B on H100"))
    assert a.verdict == "no_fit" and a.fix is None
    assert not any(p.count == 1 for p in a.plans)
    assert ask_text("full fine-tune 70B on H100").startswith("🔢")


@pytest.mark.parametrize(("q", "asked", "hours"), [
    ("успею за ночь (8ч) дообучить llama 8b лорой на 100м токенов на 4090?", "1×RTX 4090", 8.0),
    ("фулл файнтюн 70б на 1B токенов за 3 дня успею на 8xh100?", "8×H100", 72.0),
    ("lora 70b on 300M tokens on 2xh100 within 2 days?", "2×H100", 48.0),
])
def test_a_deadline_the_gpus_named_miss_is_a_no_for_them_before_what_meets_it(q: str, asked: str, hours: float) -> None:
    request = parse(q)
    assert request.deadline_hours == hours  # «за ночь (8ч)»: the hours in brackets win over the named span
    first = ask_text(q).split("\n")[0]
    assert first.startswith("❌") and asked in first, first
    assert first.index(asked) < first.index(";"), first  # the arrangement asked is judged first, then the one that does


def test_a_deadline_the_gpus_named_meet_leads_with_them() -> None:
    first = ask_text("лора 8b на 100м токенов на h100 за сутки успею?").split("\n")[0]
    assert first.startswith("✅") and "1×H100" in first


def test_days_beside_a_deadline_in_days_are_not_rounded_to_it() -> None:
    assert _plain(about_days("ru", 59)) == "59 ч (≈2,5 дня)" and _plain(about_days("en", 31)) == "31 h (≈1.5 days)"
    assert _plain(about_days("ru", 154)) == "154 ч (≈6,5 дня)" and _plain(about_days("ru", 249)) == "249 ч (≈10 дней)"


def test_chinchilla_optimal_pretraining_takes_20_tokens_a_parameter_said_as_assumed() -> None:
    request = parse("pretraining 70b chinchilla optimal cost")
    assert request.stage == "pretrain" and request.tokens == 20 * 70e9 and "chinchilla" in request.assumed
    assert "chinchilla_tokens=1400000000000.0" in [str(x) for x in answer(request).assumptions]
    assert parse("pretraining 70b on 2T tokens chinchilla style").tokens == 2e12  # a count said wins


def test_the_lead_says_chinchilla_tokens_are_not_the_users_own() -> None:
    first = ask_text("претрейн 1b с нуля по шиншилле на 8 h100, сколько времени").split("\n")[0]
    assert "оптимум по Chinchilla" in first and "ваших" not in first, first
    first = ask_text("how much does pretraining 1b chinchilla optimal cost on 8xh100").split("\n")[0]
    assert "(Chinchilla-optimal)" in first and "your" not in first, first
    assert "ваших 20" in ask_text("претрейн 1b на 20B токенов на 8 h100, сколько времени").split("\n")[0]


def test_a_long_cluster_run_is_said_in_days_and_gpu_hours_and_h100_hours_is_the_time() -> None:
    first = ask_text("с нуля 13б на 300B токенов на 64 h100 сколько дней").split("\n")[0]
    assert first.startswith("⏱") and "дней" in first and "GPU-час" in first, first
    request = parse("pretrain a 7B from scratch on 1T tokens, how many H100 hours")
    assert "count" not in request.asks and "time" in request.asks
    assert "GPU-hours" in ask_text("pretrain a 7B from scratch on 1T tokens, how many H100 hours").split("\n")[0]
    assert "count" in parse("how many H100s for full 70b").asks


def test_inference_priced_for_a_month_leads_with_the_months_money() -> None:
    first = ask_text("во сколько обойдется инфер 70б на месяц").split("\n")[0]
    assert first.startswith("💰 ") and "месяц (730" in first and "$" in first, first
    a = answer(parse("во сколько обойдется инфер 70б на месяц"))
    p = next(x for x in a.plans if x.per_hour is not None)  # type: ignore[union-attr]
    assert f"{p.count}×" in first and str(round(p.per_hour * 730))[:2] in first.replace("\u00a0", "").replace(" ", "")


def test_an_inference_comparison_is_judged_on_decode_speed_and_a_near_tie_on_price() -> None:
    first = ask_text("что лучше L40S или A6000 для инфера qwen 14b").split("\n")[0]
    assert "токенов/с против" in first and "нет данных" not in first, first
    tie = ask_text("3090 vs 4090 для инференса 8б").split("\n")[0]
    assert "берите 1×RTX 3090: дешевле" in tie, tie  # about as fast: the cheaper card


def test_trl_settings_under_another_stack_named_say_whose_names_they_are() -> None:
    text = ask_text("dpo лора llama 3.1 8b в llama-factory на 2 4090, контекст 4к")
    assert "Это имена TRL" in text and "LLaMA-Factory" in text
    assert "Это имена TRL" not in ask_text("dpo лора llama 3.1 8b в trl на 2 4090, контекст 4к")


@pytest.mark.parametrize("text", ["какой максимальный контекст влезет для лоры 8b на 4090",
                                  "what's the longest context for qlora 70b on an h100?",
                                  "сколько контекста потянет фулл 1b на 3090", "max context lora 8b on a 4090"])
def test_the_longest_context_is_heard_as_the_question(text: str) -> None:
    r = parse(text)
    assert "context" in r.asks and r.seq_len is None


@pytest.mark.parametrize("text", ["лора 8b контекст 8к на 4090", "max seq len 4096 lora 8b on 4090"])
def test_a_context_said_with_its_length_is_no_such_question(text: str) -> None:
    assert "context" not in parse(text).asks


def test_the_longest_context_is_the_edge_of_the_fit_and_leads_the_answer() -> None:
    from engine.fit import NO_HEADROOM, fits
    from engine.memory import breakdown

    a = answer(parse("какой максимальный контекст влезет для лоры 8b на 4090"))
    fit = a.context_fit
    assert fit is not None and fit.tokens >= 1024 and fit.fused_tokens and fit.fused_tokens > fit.tokens
    room = a.capacity_gib
    assert fits(breakdown(a.scenario.model_copy(update={"seq_len": fit.tokens})), room, NO_HEADROOM)
    assert not fits(breakdown(a.scenario.model_copy(update={"seq_len": fit.tokens + 256})), room, NO_HEADROOM)
    first = ask_text("какой максимальный контекст влезет для лоры 8b на 4090").split("\n")[0]
    assert first.startswith("📏 Самый длинный контекст, который помещается на 1×RTX 4090: около ")
    assert "с fused cross-entropy" in first


def test_a_named_stack_gets_no_fused_variant_and_a_model_limit_is_said() -> None:
    assert answer(parse("max context lora 8b on a 4090 with unsloth")).context_fit.fused_tokens is None
    first = ask_text("лора qwen2.5 0.5b на h200 какой максимальный контекст").split("\n")[0]
    assert first == "📏 Самый длинный контекст, который помещается на 1×H200 SXM: 32k — это предел самой модели"


def test_two_serving_engines_named_are_compared_on_the_gpus_asked() -> None:
    r = parse("vllm или sglang для llama 70b на 2 h100")
    assert r.serving_engines_compared == ["vllm", "sglang"] and parse("llama 8b на vllm").serving_engines_compared == []
    a = answer(r)
    assert a.verdict == "compare"
    sides = {x.engine: x for x in a.serving.compared}
    assert set(sides) == {"vllm", "sglang"} and sides["vllm"].winner
    # SGLang's default static share (0.833 at TP 2 on an H100) leaves no room for the bf16 weights: said, not swapped
    assert not sides["sglang"].holds_as_named and sides["sglang"].users is None
    first = ask_text("vllm или sglang для llama 70b на 2 h100").split("\n")[0]
    assert first.startswith("⚖️ vLLM: 2×H100 SXM держат ")
    assert first.endswith("SGLang (2×H100 SXM) как задано не помещается")


def test_engines_that_both_hold_it_are_ranked_by_the_requests_they_hold() -> None:
    a = answer(parse("sglang vs vllm for llama 8b on an h100"))
    win, other = a.serving.compared
    assert win.winner and (win.users or 0) >= (other.users or 0) and {win.engine, other.engine} == {"vllm", "sglang"}
    assert a.serving.settings is not None and a.serving.settings.engine == win.engine  # the body is the winner's


def test_two_tp_degrees_named_are_compared_per_gpu_and_the_faster_one_is_said() -> None:
    r = parse("tp2 или tp4 для llama 70b на h100")
    assert r.tensor_parallel_compared == [2, 4] and parse("llama 70b на 4 h100 tp4").tensor_parallel_compared == []
    a = answer(r)
    sides = {x.tensor_parallel: x for x in a.serving.compared}
    assert set(sides) == {2, 4} and sides[4].winner and (sides[2].count, sides[4].count) == (2, 4)
    # TP 2 barely holds the bf16 weights: the 4 GPUs of TP 4 hold far more requests per GPU
    assert (sides[4].users or 0) / 4 > (sides[2].users or 0) / 2
    assert a.serving.settings is not None and a.serving.settings.tensor_parallel == 4  # the body is the winner's
    first = ask_text("tp2 или tp4 для llama 70b на h100").split("\n")[0]
    assert first.startswith("⚖️ TP 4: 4×H100 SXM держат ") and "TP 2 (2×H100 SXM): 2 пользователя" in first


def test_a_near_tie_per_gpu_goes_to_the_cheaper_degree_with_the_faster_one_said() -> None:
    first = ask_text("tp1 или tp2 для llama 8b на h100").split("\n")[0]
    assert first.startswith("⚖️ TP 1: 1×H100 SXM держит ") and "TP 2 (2×H100 SXM) быстрее на пользователя" in first
