"""/price: the market range and its date, the chat's own price in either currency, and clear answers to
bad arguments (fed updates against the fake Bot API)."""

from __future__ import annotations

from bot_harness import Harness
from fake_botapi import FakeBotAPI, message, texts

from bot.views.formats import date_text, money_range
from engine.pricing import market_range


def plain(text: str) -> str:
    return text.replace("\u00a0", " ").replace("\u202f", " ")


async def test_price_of_a_gpu_shows_the_market_range_and_its_date(h: Harness, api: FakeBotAPI) -> None:
    await h.feed(message("/price H100", user_id=4001))
    said = plain(texts(api, 4001)[-1])
    r = market_range("H100 SXM")
    assert said.startswith("<b>H100 SXM</b>: typically $") and "on the market)" in said
    assert plain(money_range("en", r.min, r.max, "USD")) in said and r.min < r.max
    assert f"Prices as of {plain(date_text('en', r.date))}, {len(r.providers)} providers" in said
    assert not (await h.store.get_settings(4001)).prices  # looking changes nothing


async def test_price_in_russian_is_in_roubles_with_the_right_plural(h: Harness, api: FakeBotAPI) -> None:
    await h.feed(message("/settings", user_id=4002, language_code="ru"))
    settings = await h.store.get_settings(4002)
    settings.currency = "RUB"
    await h.store.set_settings(4002, settings)
    await h.feed(message("/price A100", user_id=4002, language_code="ru"))
    said = plain(texts(api, 4002)[-1])
    assert "за GPU-час (" in said and "на рынке)" in said and "₽" in said
    assert "провайдер" in said and "Цены на" in said


async def test_price_with_a_number_and_roubles_sets_the_chats_own_price(h: Harness, api: FakeBotAPI) -> None:
    await h.feed(message("/price H100 200 руб", user_id=4003))
    said = plain(texts(api, 4003)[-1])
    assert said.startswith("Saved: H100 SXM at 200 ₽/h")
    own = (await h.store.get_settings(4003)).prices["H100 SXM"]
    assert own.value == 200 and own.currency == "RUB"
    assert (await h.store.get_settings(4003)).currency == "USD"  # the chat's currency stays
    await h.feed(message("/price H100", user_id=4003))
    assert "This chat's own price: 200 ₽/h." in plain(texts(api, 4003)[-1])
    await h.feed(message("/price H100 2.5", user_id=4003))  # no currency: the chat's (USD)
    own = (await h.store.get_settings(4003)).prices["H100 SXM"]
    assert own.value == 2.5 and own.currency == "USD"
    await h.feed(message("/price H100 off", user_id=4003))
    assert "removed" in texts(api, 4003)[-1] and not (await h.store.get_settings(4003)).prices


async def test_bad_price_arguments_get_clear_answers(h: Harness, api: FakeBotAPI) -> None:
    cases = [
        ("/price Foo 9000 2", "I do not know the GPU “Foo 9000”"),
        ("/price H100 A100 2", "One GPU at a time"),
        ("/price H100 -2", "a price cannot be negative"),
        ("/price H100 99999999", "That is not a price I can use"),
        ("/price", "Market price of a GPU: <code>/price H100</code>"),
    ]
    for i, (command, expected) in enumerate(cases):
        await h.feed(message(command, user_id=4010 + i))
        assert expected in texts(api, 4010 + i)[-1], (command, texts(api, 4010 + i)[-1])
        assert not (await h.store.get_settings(4010 + i)).prices


def test_the_number_of_providers_takes_the_russian_plural() -> None:
    from bot.views.talk import market_price_text

    base = market_range("H100 SXM")
    said = {n: market_price_text("ru", {**base.model_dump(), "providers": ["p"] * n}, None) for n in (1, 3, 5, 21)}
    assert "1 провайдер\n" in said[1] and "3 провайдера\n" in said[3]
    assert "5 провайдеров\n" in said[5] and "21 провайдер\n" in said[21]


async def test_how_much_a_gpu_costs_is_its_market_price(h: Harness, api: FakeBotAPI) -> None:
    await h.feed(message("сколько стоит H100", user_id=4020, language_code="ru"))
    said = plain(texts(api, 4020)[-1])
    assert said.startswith("<b>H100 SXM</b>: обычно ") and "на рынке)" in said and "Цены на" in said
    # right after an answer it changes that answer's GPU instead (a follow-up)
    await h.feed(message("LoRA Llama 3.1 8B on a 4090", user_id=4021))
    await h.feed(message("how much on an H100?", user_id=4021))
    assert "H100 SXM instead of 1×RTX 4090" in texts(api, 4021)[-1]
