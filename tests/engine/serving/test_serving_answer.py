"""Serving answers: engine.answer's serving path (ServingResult + verdict), the reply in both languages, the keyboard
and its state, and bad input."""

from __future__ import annotations

import re

import pytest

from bot.pipeline import AnswerOptions, apply_serving_state, render_request
from bot.views.keyboards import ServingCb, format_code, pack_serving, serving_keyboard
from bot.views.render import plain
from engine.answer import answer, serving_breakdown
from engine.contract import estimate_request
from engine.schema import GpuRef, ModelRef, Request, ServingAnswer

PRE = re.compile(r"<pre>(.*?)</pre>", re.S)


def serving(name: str = "Llama 3.1 70B", users: int | None = 32, ctx: int | None = 8192, gpu: str | None = None,
            count: int = 1, **kw: object) -> Request:
    data: dict[str, object] = {"model": ModelRef(name=name), "method": "inference", "serving_engine": "vllm",
                               "concurrency": users, "seq_len": ctx}
    if gpu:
        data["gpus"] = [GpuRef(name=gpu, count=count)]
    data.update(kw)
    return Request.model_validate(data)


def html(request: Request, lang: str = "en") -> str:
    return render_request(request, AnswerOptions(lang=lang)).html


def table(text: str) -> list[str]:
    found = PRE.search(text)
    assert found, text
    return [line for line in found.group(1).split("\n") if line]


# ---- engine.answer ---------------------------------------------------------------------------------------------


def test_a_serving_request_gets_the_serving_answer_not_the_training_planner() -> None:
    a = answer(serving(gpu="H100 SXM", count=4))
    assert isinstance(a, ServingAnswer)
    assert a.serving.settings is not None and a.serving.settings.tensor_parallel == 4
    assert a.serving.memory is not None and a.serving.memory.activation_peak_gib < 5  # not HF generate's 58 GB
    assert a.verdict == "fits" and a.serving_users >= 32


def test_the_verdict_is_the_fit_rule_on_the_gpus_asked() -> None:
    assert answer(serving(gpu="H100 SXM", count=1)).verdict == "no_fit"  # 70B bf16 does not load on one H100
    assert answer(serving(gpu="H100 SXM", count=4)).verdict == "fits"
    assert answer(serving()).verdict is None  # no GPU named: the engine picks the arrangement
    # a change on the same GPUs makes 32 users fit: FP8 KV doubles the KV pool's tokens
    a = answer(serving(users=64, gpu="H100 SXM", count=4))
    assert isinstance(a, ServingAnswer) and not a.serving.fits
    assert a.verdict == "fits_with_changes"
    b = serving_breakdown(a.serving)
    assert b is not None and b.kv_cache <= a.serving.memory.kv_pool_gib  # type: ignore[union-attr]


def test_estimate_request_gives_the_serving_block_and_verdict() -> None:
    out = estimate_request(serving(gpu="H100 SXM", count=4).model_dump())
    assert out["verdict"] == "fits" and out["serving"]["tensor_parallel"] == 4
    out = estimate_request(serving(gpu="H100 SXM", count=1).model_dump())
    assert out["verdict"] == "no_fit"


# ---- the reply ---------------------------------------------------------------------------------------------------


def test_english_reply_has_headline_table_speed_price_changes_and_command() -> None:
    text = html(serving(gpu="H100 SXM", count=4))
    room = answer(serving(gpu="H100 SXM", count=4)).serving_users
    assert text.startswith(f"✅ <b>32 users at 8k on 4×H100 SXM (TP\u00a04): room for {room} such requests</b>")
    rows = table(text)
    assert rows[1].startswith("weights") and rows[2].startswith("activation peak")
    assert rows[3].startswith("non-torch + CUDA graphs") and rows[4].startswith("KV pool")
    assert rows[0] == "per GPU, GB" and rows[-1].startswith("total, GB (of 79.2)")
    assert all(len(r) <= 34 for r in rows)
    assert "tokens/s per user" in text and "first token in" in text
    assert re.search(r"\$\d+\.\d\d/h for 4×H100 SXM · \$\d+\.\d\d per 1M output tokens · \$[\d,]+ a month", text)
    assert "FP8 weights" in text and "FP8 KV cache" in text
    assert ('<pre><code class="language-bash">vllm serve meta-llama/Llama-3.1-70B-Instruct '
            '--tensor-parallel-size 4') in text
    assert "--max-num-seqs 32" in text
    assert "gpu_memory_utilization 0.9" in text and "max_num_seqs" in text
    assert len(text) < 4096


def test_russian_reply_reads_native() -> None:
    text = html(serving(gpu="H100 SXM", count=4), "ru")
    assert re.match(r"✅ <b>32 пользователя с контекстом 8k на 4×H100 SXM \(TP\u00a04\): хватает на \d+ таких "
                    r"запрос(а|ов)</b>",
                    text)
    rows = table(text)
    assert rows[0] == "на одну GPU, ГБ" and rows[1].startswith("веса") and rows[4].startswith("пул KV-кэша")
    assert "токена/с на пользователя" in text or "токенов/с на пользователя" in text
    assert "первый токен через" in text and "\u00a0с на промпт из 7\u00a0680\u00a0токенов" in text
    assert "$/ч за 4×H100 SXM" in text and "за 1\u00a0млн выходных токенов" in text and "в месяц" in text
    assert "веса в FP8 (" in text and "\u00a0ГБ на GPU)" in text and "KV-кэш в FP8" in text
    assert "Команда запуска" in text and "Допущения:" in text
    assert "users" not in text and "room for" not in text


@pytest.mark.parametrize(("users", "form"), [(1, "1 пользователь с контекстом"),
                                             (2, "2 пользователя с контекстом"),
                                             (5, "5 пользователей с контекстом"),
                                             (21, "21 пользователь с контекстом")])
def test_russian_users_take_their_plural(users: int, form: str) -> None:
    assert form in html(serving("Llama 3.1 8B", users=users, ctx=4096, gpu="H100 SXM"), "ru")


def test_qwen_coder_32b_on_one_h100_says_how_many_fit_and_not_eight_h100() -> None:
    r = serving("qwen2.5-coder-32b", users=16, ctx=32768, gpu="H100 SXM", model=ModelRef(name="qwen2.5-coder-32b",
                                                                                          params_b=32))
    text = plain(html(r))
    assert text.startswith("❌ 16 users at 32k do not fit on 1×H100 SXM (TP\u00a01): room for")
    assert "8×H100" not in text and "$26" not in text
    assert "at most 1 user at once instead of 16" in text or "at most" in text
    assert re.search(r"\d×H100 SXM \(.*TP\u00a0\d\): room for \d+ such requests, \$[\d.]+/h · "
                     r"\$[\d.]+ per 1M output tokens ✓", text)


def test_no_gpu_named_gives_the_cheapest_arrangement() -> None:
    a = answer(serving())
    text = plain(html(serving()))
    assert isinstance(a, ServingAnswer) and a.serving.gpu is not None
    assert text.startswith(f"✅ 32 users at 8k on {a.serving.gpu.count}×{a.serving.gpu.name}")
    assert "the cheapest that serves it" in text


def test_llama_cpp_reply_has_host_ram_and_llama_server_command() -> None:
    r = serving("Llama 3.1 70B", users=1, ctx=4096, gpu="RTX 4090", serving_engine="llama.cpp")
    text = html(r)
    assert "host RAM (layers on CPU)" in text and "llama-server -hf" in text and "-ngl" in text
    assert "(TP" not in text.split("\n")[0]


def test_the_command_is_html_escaped() -> None:
    text = html(serving("x" * 8 + "<b>/y", users=2, model=ModelRef(name="org/<b>x", params_b=8), gpu="H100 SXM"))
    assert "<b>x" not in text.split("<code", 1)[1] and "&lt;b&gt;x" in text


# ---- bad input -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("request_", "en", "ru"), [
    (serving(users=10**6), "1,000,000 users at once is more than 1,024\u00a0GPUs serve at a context of 8k: at most "
     "about",
     "1\u00a0000\u00a0000 пользователей одновременно — больше, чем обслужат"),
    (serving("Llama 3.1 8B", ctx=1_000_000), "A context of 1M is beyond what Llama-3.1-8B takes "
     "(max_position_embeddings = 131,072)", "Контекст 1M длиннее, чем допускает Llama-3.1-8B"),
    (serving(users=8, ctx=None, tensor_parallel=3), "TP 3 does not divide the attention heads (64, KV heads 8): "
     "valid degrees are 1, 2, 4, 8",
     "число голов внимания не делится на TP 3 (голов 64, KV-голов 8): подходят TP 1, 2, 4, 8"),
    (serving("Llama 3.1 8B", users=None, ctx=None, serving_engine="llama.cpp", quantization="awq"),
     "llama.cpp cannot load AWQ weights; engines that can: vLLM, SGLang, TGI", "llama.cpp не загружает веса AWQ"),
])
def test_bad_input_gets_a_clear_answer_in_both_languages(request_: Request, en: str, ru: str) -> None:
    for lang, words in (("en", en), ("ru", ru)):
        rendered = render_request(request_, AnswerOptions(lang=lang))
        assert rendered.understood
        assert rendered.html.startswith("❌ <b>") and words in rendered.html, rendered.html
        assert "<code" not in rendered.html and len(rendered.html) < 4096


def test_every_reply_stays_under_telegram_limit_and_the_table_within_34() -> None:
    for r in (serving(gpu="H100 SXM", count=4), serving("Llama 3.1 8B", users=128, ctx=32768, gpu="RTX 4090"),
              serving("Llama 3.1 405B", users=128, ctx=32768), serving("Llama 3.1 70B", users=1, gpu="A100 80GB SXM",
                                                                        count=8, pipeline_parallel=2)):
        for lang in ("en", "ru"):
            text = html(r, lang)
            assert len(text) < 4096
            if "<pre>" in text:
                assert all(len(row) <= 34 for row in table(text))


# ---- keyboard ------------------------------------------------------------------------------------------------------


def labels(markup: object) -> list[str]:
    return [b.text for row in markup.inline_keyboard for b in row]  # type: ignore[attr-defined]


def test_serving_keyboard_marks_the_state_and_packs_small_data() -> None:
    kb = serving_keyboard("0123456789ab", "b", 32, 8192, "en")
    assert labels(kb) == ["✓ BF16", "FP8", "AWQ", "👥 8", "✓ 👥 32", "👥 128", "4k", "✓ 8k", "32k", "RU", "✓ EN",
                          "📊 Chart", "⚙️ Config"]
    data = [b.callback_data for row in kb.inline_keyboard for b in row]
    assert all(len(d.encode()) <= 64 for d in data)
    assert data[1] == ServingCb(q="0123456789ab", f="8", u=32, c=8192, lg="en").pack()
    assert pack_serving("0123456789ab", "a", 128, 32768, "ru") == ServingCb(
        q="0123456789ab", f="a", u=128, c=32768, lg="ru").pack()
    assert pack_serving("0123456789ab", "a", 128, 32768, "ru", "p") == ServingCb(
        q="0123456789ab", f="a", u=128, c=32768, lg="ru", x="p").pack()
    local = serving_keyboard("0123456789ab", format_code("gguf:q4_k_m", "llama.cpp"), 1, 4096, "ru", "llama.cpp")
    assert labels(local)[:3] == ["F16", "Q8_0", "✓ Q4_K_M"]


def test_serving_state_changes_format_users_and_context() -> None:
    stored = serving(gpu="H100 SXM", count=4, prompt_len=1000, output_len=200)
    r = apply_serving_state(stored, "8", 128, 32768)
    assert r.quantization == "fp8" and r.concurrency == 128 and r.seq_len == 32768 and r.prompt_len is None
    a = answer(r)
    assert isinstance(a, ServingAnswer) and a.serving.settings is not None
    assert a.serving.settings.weight_format == "fp8" and a.serving.users == 128 and a.serving.context == 32768
    assert apply_serving_state(stored, "-", 8, 4096).quantization is None
    local = apply_serving_state(serving("Llama 3.1 8B", serving_engine="llama.cpp"), "a", 1, 4096)
    assert local.quantization == "gguf:q4_k_m"
    assert apply_serving_state(stored, "-", 0, 4096).concurrency is None  # 0: a room answer, no users asked
    for bad in (("x", 8, 4096), ("b", -1, 4096), ("b", 8, 10**12)):
        with pytest.raises(ValueError):
            apply_serving_state(stored, *bad)


def test_serving_price_follows_the_chats_currency_and_own_price() -> None:
    r = serving(gpu="H100 SXM", count=4)
    options = AnswerOptions(lang="ru", currency="RUB", prices={"H100 SXM": 200.0})
    text = render_request(r, options).html
    assert "800\u00a0₽/ч за 4×H100 SXM" in text and "584\u00a0000\u00a0₽ в месяц" in text
    usd = answer(r).serving
    assert usd is not None and usd.cost is not None and usd.cost.currency == "USD" and usd.cost.per_hour > 0


def test_a_200_character_model_id_still_fits_one_message() -> None:
    name = "org/" + "x" * 192 + "-70B"
    r = serving(name, users=128, ctx=32768, gpu="L4", count=8, model=ModelRef(name=name, params_b=70))
    for lang in ("en", "ru"):
        text = html(r, lang)
        assert len(text) < 4096 and text.count("<pre>") == text.count("</pre>")


def test_users_that_fill_the_pool_are_tight() -> None:
    room = answer(serving(gpu="H100 SXM", count=4)).serving_users
    a = answer(serving(users=room, gpu="H100 SXM", count=4))
    assert a.verdict == "tight"
    text = html(serving(users=room, gpu="H100 SXM", count=4))
    assert text.startswith("⚠️ <b>") and "Little memory to spare" in text


def test_every_key_the_serving_engine_emits_is_worded() -> None:
    """Every `serving.*` key in engine/serving's code has words in both languages (no key leaks into a reply)."""
    from pathlib import Path

    from bot.views.serving_words import change_line as change_words
    from bot.views.serving_words import error_line
    from engine.schema import Change

    code = "\n".join(p.read_text() for p in (Path(__file__).parents[3] / "engine" / "serving").glob("*.py"))
    keys = set(re.findall(r'"(serving\.(?:error|warning|change)\.[a-z0-9_]+)"', code))
    assert len(keys) >= 13
    for key in keys:
        for lang in ("en", "ru"):
            text = (change_words(lang, Change(key=key, params={"from": 2, "to": 1}), 4) if ".change." in key
                    else error_line(lang, key, {"context": 8192, "limit": 4096}))
            assert "serving." not in text and text.strip(), (key, lang)


def test_sglang_assumptions_use_its_own_setting_names() -> None:
    text = html(serving(gpu="H100 SXM", count=4, serving_engine="sglang"))
    assumptions = text.split("<blockquote expandable>")[1]
    assert "mem_fraction_static 0.8" in assumptions and "gpu_memory_utilization" not in assumptions
    assert "--mem-fraction-static" in text
