"""Inline mode fed real inline_query updates: the verdict and the GPU asked as each result's title, the one-line
answer as its description, answers cached, and a query still being typed answered, not left silent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bot_harness import Harness
from fake_botapi import FakeBotAPI, inline_query, message, texts

from bot.handlers.inline import complete


async def results(h: Harness, api: FakeBotAPI, query: str, user_id: int, lang: str = "en") -> list[dict[str, Any]]:
    await h.feed(inline_query(query, user_id=user_id, language_code=lang))
    answered = api.of("answerInlineQuery")[-1]
    return list(answered.params["results"])


def flat(text: str) -> str:
    return text.replace("\u00a0", " ")


async def test_title_is_the_verdict_on_the_gpu_asked_and_description_the_answer(h: Harness, api: FakeBotAPI) -> None:
    first, *others = await results(h, api, "70B QLoRA on H100", 3001)
    assert flat(first["title"]).startswith("Fits on 1×H100 SXM: ") and " of 80 GB available" in flat(first["title"])
    assert flat(first["description"]).startswith("1×H100 SXM: ") and "100M tokens" in flat(first["description"])
    assert others and all(o["title"].startswith(("LoRA — ", "Full fine-tuning — ")) for o in others)
    assert first["input_message_content"]["message_text"].startswith("✅ <b>Fits on 1×H100 SXM")


async def test_a_question_about_money_is_answered_in_the_description(h: Harness, api: FakeBotAPI) -> None:
    [first, *_rest] = await results(h, api, "сколько стоит дообучить Llama 3.1 8B LoRA на 100 млн токенов", 3002, "ru")
    description = flat(first["description"])
    assert description.startswith("💰 ≈") and "у разных провайдеров) за ваши 100 млн токенов на 1×" in description
    # no GPU named: the whole job's memory, never labelled "per GPU"
    assert flat(first["title"]).startswith("Всего нужно ") and first["title"].endswith("ГБ видеопамяти")


@pytest.mark.parametrize(("typed", "title"), [("70B ql", "Needs "), ("llama 8b lo", "Needs "),
                                              ("70B qlora h1", "Fits on 1×H100 SXM")])
async def test_a_query_still_being_typed_gets_results(h: Harness, api: FakeBotAPI, typed: str, title: str) -> None:
    found = await results(h, api, typed, 3003)
    assert found and found[0]["title"].startswith(title)
    assert "<b>" in found[0]["input_message_content"]["message_text"]


async def test_partial_words_complete_to_the_method_asked(h: Harness, api: FakeBotAPI) -> None:
    typed = await results(h, api, "70B ql", 3004)
    whole = await results(h, api, "70B qlora", 3004)
    assert typed[0]["input_message_content"] == whole[0]["input_message_content"]
    assert "QLoRA" in typed[0]["input_message_content"]["message_text"]


async def test_answers_are_cached_per_query_and_language(h: Harness, api: FakeBotAPI) -> None:
    cache = h.dp["answer_cache"]
    await results(h, api, "llama 8b lora", 3005)
    await results(h, api, "Llama  8B LoRA ", 3005)
    assert cache.hits == 1 and cache.misses == 1
    first, second = api.of("answerInlineQuery")[-2:]
    assert first.params["results"] == second.params["results"]


def test_completion_by_prefix() -> None:
    assert complete("70b ql") == "70b qlora" and complete("llama 8b lo") == "llama 8b lora"
    assert complete("70b fu") == "70b full" and complete("70b инф") == "70b инференс"
    assert complete("8b lora a1") == "8b lora a100"
    # a GPU's own name («l4», «a10», «h20») or a number is whole as typed
    for typed in ("лора 8б на l4", "лора 8б на 2 a10", "fp8 инфер 8b на h20",
                  "инфер llama 3.1 8b на h100 юзеров 50", "qlora 8b на 4090 эпох 30"):
        assert complete(typed) == typed
    assert complete("70b h") == "70b h" and complete("70b h100") == "70b h100"  # too short / already whole
    assert complete("70b lora h") == "70b lora h"  # h100 or h200: left as it is
    assert complete("70b") == "70b" and complete("") == ""


async def test_inline_results_open_the_mini_app_on_their_question(tmp_path: Path, api: FakeBotAPI) -> None:
    from bot_harness import harness
    from fake_botapi import BOT_USERNAME

    async with harness(tmp_path, api, webapp_url="https://bot.example/app/") as h:
        found = await results(h, api, "70B QLoRA on H100", 3091)
        assert found
        for result in found:
            last = result["reply_markup"]["inline_keyboard"][-1][0]
            assert last["text"] == "📱 Calculator"
            assert last["url"].startswith(f"https://t.me/{BOT_USERNAME}?startapp=")
    async with harness(tmp_path / "plain", api) as h:  # no Mini App set up: no such row
        plain = await results(h, api, "70B LoRA on H100", 3092)
        assert all("startapp" not in str(r.get("reply_markup")) for r in plain)


@pytest.mark.parametrize("command", ["vllm serve Qwen/Qwen2.5-72B-Instruct-AWQ -tp 2 --max-model-len 32768",
                                     "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --tp 8"])
async def test_a_launch_command_typed_inline_is_read_as_the_bot_reads_it(h: Harness, api: FakeBotAPI,
                                                                          command: str) -> None:
    # the same command pasted to the bot: its flags and its checkpoint's format, never a question's reading of it
    await h.feed(message(command, user_id=3092))
    pasted = texts(api, 3092)[-1]
    [first] = await results(h, api, command, 3092)
    inline = first["input_message_content"]["message_text"]
    assert inline.split("\n")[0] in pasted  # the same verdict line as the bot's message under its header
    assert ("TP 2" in flat(inline) and "AWQ" in inline) if "AWQ" in command else "TP 8" in flat(inline)


async def test_which_model_fits_is_one_result(h: Harness, api: FakeBotAPI) -> None:
    [only] = await results(h, api, "какую модель можно запустить на 4090", 3099, "ru")
    assert only["title"] == "🧩 Самые большие модели, которые помещаются на 1×RTX 4090:"
    assert flat(only["description"]).startswith("• bf16: до ")
    assert "4 бита: до" in only["input_message_content"]["message_text"]


async def test_which_model_fits_in_a_message_is_the_same_answer(h: Harness, api: FakeBotAPI) -> None:
    await h.feed(message("какую модель можно запустить на 4090", user_id=3098))
    [reply] = texts(api, 3098)
    assert reply.startswith("🧩 Самые большие модели, которые помещаются на 1×RTX 4090:")
    [inline] = await results(h, api, "какую модель можно запустить на 4090", 3098, "ru")
    assert inline["input_message_content"]["message_text"] == reply
