"""Conversation: follow-ups that change one thing of the previous question, small talk, the question's own
currency, budget and deadline, and what cannot be modelled named in the reply (fed updates, fake Bot API)."""

from __future__ import annotations

from pathlib import Path

from bot_harness import Harness
from fake_botapi import BOT_USERNAME, FakeBotAPI, buttons, last_message, message, texts
from redis_server import RedisServer

from bot.conversation import follow_up, last_key, message_key
from bot.pipeline import AnswerOptions, render_text
from bot.scaleout import FallbackStorage
from bot.storage import MemoryStorage, RedisStorage, SQLiteStorage
from engine.answer import answer
from engine.parse import parse, read_follow_up
from engine.plan.budget import within_limits
from engine.schema import PriceOptions

GROUP = -100555


def plain(text: str) -> str:
    return text.replace("\u00a0", " ").replace("\u202f", " ")


async def test_a_reply_in_a_group_changes_the_previous_question(h: Harness, api: FakeBotAPI) -> None:
    await h.feed(message(f"@{BOT_USERNAME} LoRA Llama 3.1 8B on H100", chat_id=GROUP, kind="supergroup",
                         user_id=3001))
    first = last_message(api, GROUP)
    assert "1×H100 SXM" in first["text"] and "context 2k" in first["text"]
    await h.feed(message("and on two of them?", chat_id=GROUP, kind="supergroup", user_id=3002, reply_to=first))
    second = texts(api, GROUP)[-1]
    assert second.startswith("↪️ <i>Changed: 2×H100 SXM instead of 1×H100 SXM</i>")
    assert "Llama-3.1-8B" in second and "LoRA r16" in second  # the rest of the question stays
    # a reply to the second answer changes the second question
    await h.feed(message("а если 8k контекст?", chat_id=GROUP, kind="supergroup", user_id=3001,
                         reply_to=last_message(api, GROUP)))
    third = texts(api, GROUP)[-1]
    assert third.startswith("↪️ <i>Изменено: контекст 8k вместо 2k</i>")
    assert "2×H100 SXM" in third and "контекст 8k" in third


async def test_in_a_group_a_follow_up_without_a_reply_is_not_for_the_bot(h: Harness, api: FakeBotAPI) -> None:
    await h.feed(message(f"@{BOT_USERNAME} 70B QLoRA on H100?", chat_id=GROUP, kind="supergroup", user_id=3003))
    answered = len(texts(api, GROUP))
    await h.feed(message("а если 8k контекст?", chat_id=GROUP, kind="supergroup", user_id=3003))
    assert len(texts(api, GROUP)) == answered
    # mentioned but not replying: a question of its own, not a change of the last answer
    await h.feed(message(f"@{BOT_USERNAME} а если 8k контекст?", chat_id=GROUP, kind="supergroup", user_id=3003))
    assert "Changed" not in texts(api, GROUP)[-1] and "Изменено" not in texts(api, GROUP)[-1]


async def test_in_a_private_chat_the_message_after_an_answer_follows_it_up(h: Harness, api: FakeBotAPI) -> None:
    await h.feed(message("LoRA Llama 3.1 8B on a 4090", user_id=3010))
    await h.feed(message("а с QLoRA?", user_id=3010))
    said = texts(api, 3010)[-1]
    assert said.startswith("↪️ <i>Изменено: QLoRA 4\u00a0бита r16 вместо LoRA r16</i>")
    assert "RTX 4090" in said
    await h.feed(message("а на H200?", user_id=3010))
    said = texts(api, 3010)[-1]
    assert "1×H200 SXM вместо 1×RTX 4090" in said and "QLoRA" in said
    await h.feed(message("в рублях", user_id=3010))
    said = texts(api, 3010)[-1]
    assert "цены в рублях" in said and "₽" in said
    assert (await h.store.get_settings(3010)).currency == "USD"  # the chat's setting stays
    # a new question is a new question, not a change
    await h.feed(message("70B QLoRA on H100?", user_id=3010))
    assert not texts(api, 3010)[-1].startswith("↪️")


async def test_a_follow_up_with_nothing_before_it_asks_for_the_question(h: Harness, api: FakeBotAPI) -> None:
    await h.feed(message("а если 8k контекст?", user_id=3020, language_code="ru"))
    said = texts(api, 3020)[-1]
    assert said.startswith("Какой вопрос поменять? Ответьте (reply) на одно из моих сообщений с ответом")
    assert any(v.startswith("e:") for v in buttons(last_message(api, 3020)["reply_markup"]).values())


async def test_a_reply_after_a_button_changes_the_question_as_shown(h: Harness, api: FakeBotAPI) -> None:
    from fake_botapi import button, callback

    await h.feed(message("LoRA Llama 3.1 8B on a 4090", user_id=3030))
    shown = last_message(api, 3030)
    await h.feed(callback(button(shown, "QLoRA"), message_obj=shown, user_id=3030))
    await h.feed(message("and with 8k context?", user_id=3030, reply_to=api.messages[(3030, shown["message_id"])]))
    said = texts(api, 3030)[-1]
    assert said.startswith("↪️ <i>Changed: context 8k instead of 2k</i>") and "QLoRA" in said


async def test_links_are_shared_through_the_storage() -> None:
    store = MemoryStorage()
    qid = await store.put_request(parse("70B QLoRA on H100?"))
    await store.set_link(message_key(5, 7), qid)
    assert await store.get_link(message_key(5, 7)) == qid
    assert await store.get_link(message_key(5, 8)) is None


# ---- small talk ---------------------------------------------------------------------------------------------


async def test_greetings_thanks_and_capabilities_get_short_answers(h: Harness, api: FakeBotAPI) -> None:
    for i, (text, expected) in enumerate([("привет", "Привет! Я считаю"), ("спасибо!", "Пожалуйста!"),
                           ("что ты умеешь?", "Я умею:"), ("hi", "Hi! I count"), ("thanks!", "You are welcome!"),
                           ("what can you do?", "I can:")]):
        await h.feed(message(text, user_id=3040 + i, language_code="en"))  # one user each: no throttle
        msg = last_message(api, 3040 + i)
        assert msg["text"].startswith(expected), (text, msg["text"])
        assert "model size" not in msg["text"] and "размера модели" not in msg["text"]
        assert any(v.startswith("e:") for v in buttons(msg["reply_markup"]).values())  # an example to press


# ---- currency, budget, deadline, what is not modelled ---------------------------------------------------------


async def test_a_question_in_roubles_is_priced_in_roubles_once(h: Harness, api: FakeBotAPI) -> None:
    await h.feed(message("LoRA 8B on H100 on 100M tokens, in rubles", user_id=3050))
    assert "₽" in texts(api, 3050)[-1] and "$" not in texts(api, 3050)[-1].split("<blockquote")[0]
    assert (await h.store.get_settings(3050)).currency == "USD"
    await h.feed(message("LoRA 8B on H100 on 100M tokens", user_id=3050))
    assert "$" in texts(api, 3050)[-1] and "₽" not in texts(api, 3050)[-1]


async def test_a_budget_that_plans_meet_lists_them(h: Harness, api: FakeBotAPI) -> None:
    await h.feed(message("бюджет 50 тыс рублей, лора 8б на 100M токенов", user_id=3060))
    said = plain(texts(api, 3060)[-1])
    assert "🎯 Все эти варианты укладываются в бюджет 50 000 ₽." in said
    assert "₽" in said


async def test_a_budget_no_plan_meets_says_so_and_what_the_cheapest_gives(h: Harness, api: FakeBotAPI) -> None:
    await h.feed(message("бюджет 500 рублей, фулл 70б на 1B токенов", user_id=3061))
    said = plain(texts(api, 3061)[-1])
    assert "❌ Ни один вариант не укладывается в бюджет 500 ₽." in said
    assert "Самый дешёвый: 8×" in said


def test_the_engine_marks_the_plans_within_budget_and_deadline() -> None:
    request = parse("успеть за сутки: фулл 8б на 8 а100, 1B токенов")
    a = answer(request, PriceOptions())
    assert a.limits is not None and a.limits.deadline_hours == 24
    assert a.limits.meeting and all(p.hours is not None and p.hours <= 24 for p in a.limits.meeting)
    slow = [p for p in a.plans if p not in a.limits.meeting]
    assert slow and all(p.hours is not None and p.hours > 24 for p in slow)
    rich = parse("budget $1000000, lora 8b on 100M tokens")
    assert within_limits(rich, answer(rich).plans, PriceOptions()).meeting == answer(rich).plans  # type: ignore[union-attr]
    poor = parse("budget $1, full 70b on 1B tokens")
    limits = answer(poor).limits
    assert limits is not None and not limits.meeting and limits.cheapest is not None
    assert limits.cheapest.cost is not None and limits.cheapest.cost["typical"] > 1


def test_a_budget_without_the_amount_of_data_says_what_it_needs() -> None:
    text = render_text("70b lora budget $100", AnswerOptions()).html
    assert "To check a budget of $100 I need the amount of data" in text
    assert answer(parse("70b lora")).limits is None


def test_a_euro_budget_is_said_to_be_unchecked() -> None:
    request = parse("budget 100 EUR, lora 8b on 100M tokens")
    if request.budget is None or request.budget.currency != "EUR":
        raise AssertionError(f"the parser did not read a euro budget: {request.budget}")
    assert "A budget in euros cannot be checked" in render_text("budget 100 EUR, lora 8b on 100M tokens").html


async def test_what_cannot_be_modelled_is_named(h: Harness, api: FakeBotAPI) -> None:
    await h.feed(message("TPU v5e лора 8б", user_id=3070))
    assert "TPU пока не считаю — ответ для GPU" in texts(api, 3070)[-1]
    await h.feed(message("ллама 70б qlora h100", user_id=3070))
    assert "считаю для Llama-3.3-70B" in texts(api, 3070)[-1]
    await h.feed(message("в колабе лора 7б", user_id=3070))
    assert "считаю на T4" in texts(api, 3070)[-1]


async def test_replicas_share_the_links_through_redis(redis_server: RedisServer) -> None:
    one, two = FallbackStorage(RedisStorage(redis_server.url)), FallbackStorage(RedisStorage(redis_server.url))
    await one.open()
    await two.open()
    try:
        qid = await one.put_request(parse("70B QLoRA on H100?"))
        await one.set_link(last_key(42), qid)
        assert await two.get_link(last_key(42)) == qid
        followed = await follow_up("and on two of them?", read_follow_up("and on two of them?"), two, [last_key(42)])
        assert followed is not None and followed.request.gpus[0].count == 2
    finally:
        await one.close()
        await two.close()


def test_a_currency_without_prices_is_said() -> None:
    text = render_text("лора 8б на h100 в евро", AnswerOptions(currency="RUB")).html
    assert "цен в EUR у меня нет — ответ в RUB" in text


def test_a_post_training_answer_names_the_assumed_model_and_checks_the_budget() -> None:
    text = render_text("DPO ллама 70б на 8 h100, бюджет 1000 долларов, 100M токенов", AnswerOptions()).html
    assert "считаю для Llama-3.3-70B" in text and "бюджет 1\u00a0000\u00a0$" in text


async def test_a_reply_to_an_answer_without_a_link_uses_its_keyboard(h: Harness, api: FakeBotAPI) -> None:
    await h.feed(message(f"@{BOT_USERNAME} LoRA Llama 3.1 8B on H100", chat_id=GROUP, kind="supergroup",
                         user_id=3080))
    older = {**last_message(api, GROUP), "message_id": 999_999}  # an answer sent before links were kept
    await h.feed(message("а с QLoRA?", chat_id=GROUP, kind="supergroup", user_id=3080, reply_to=older))
    assert texts(api, GROUP)[-1].startswith("↪️ <i>Изменено: QLoRA 4\u00a0бита r16 вместо LoRA r16</i>")


async def test_sqlite_keeps_the_links_across_a_restart(tmp_path: Path) -> None:
    store = SQLiteStorage(tmp_path / "links.db")
    await store.open()
    qid = await store.put_request(parse("70B QLoRA on H100?"))
    await store.set_link(last_key(9), qid)
    await store.close()
    again = SQLiteStorage(tmp_path / "links.db")
    await again.open()
    try:
        assert await again.get_link(last_key(9)) == qid
        assert await again.get_request(qid) is not None
    finally:
        await again.close()


def test_a_serving_answer_names_what_is_not_modelled() -> None:
    text = render_text("vllm ллама 70б на 2 h100 для 50 пользователей, с картинками", AnswerOptions()).html
    assert "картинки на входе пока не учитываю — оценка только для текста" in text
    assert "считаю для Llama-3.3-70B" in text
