"""A serving answer under load in Telegram: its keyboard changes the load (half / twice the request rate or the
users) and the promise (a tighter / looser TTFT p95, TPOT), each press edits the answer in place from the stored
question; 📈 sends the latency/throughput chart; forged and stale load buttons get a toast."""

from __future__ import annotations

import json
from typing import Any

from bot_harness import Harness
from fake_botapi import FakeBotAPI, button, callback, labels, last_message, message

from bot.handlers.callbacks import valid_load
from bot.views.keyboards import MAX_CALLBACK_BYTES, LoadCb, load_keyboard, pack_load

RATE_Q = "Llama 3.1 8B on vLLM on 1 H100, 2 requests per second, TTFT p95 under 500 ms, 2k prompt"



def headline(msg: dict[str, Any]) -> str:
    return str(msg["text"].split("\n")[0])


def test_fast_packing_is_aiogram_packing_and_stays_short() -> None:
    for args in (("0123456789ab", "b", 20.0, 0, 500, 0, "ru", "r"), ("ffffffffffff", "-", 0.0, 1_000_000, 10**7,
                                                                       10**6, "en", "l"),
                 ("00000000000a", "a", 0.1 * 3, 0, 0, 40, "en", "p")):
        q, f, r, u, t, o, lg, x = args
        packed = pack_load(q, f, r, u, t, o, lg, x)
        assert LoadCb.unpack(packed) == LoadCb(q=q, f=f, r=float(f"{r:.4g}"), u=u, t=t, o=o, lg=lg, x=x)
        assert len(packed.encode()) <= MAX_CALLBACK_BYTES


async def test_the_load_keyboard_halves_and_doubles_the_rate_and_moves_the_promise(h: Harness, api: FakeBotAPI
                                                                                  ) -> None:
    await h.feed(message(RATE_Q, user_id=4001))
    answer = last_message(api, 4001)
    assert "2 requests/s" in headline(answer)
    assert labels(answer)[3:] == ["÷2: 1 req/s", "×2: 4 req/s", "TTFT ≤ 250\u00a0ms", "TTFT ≤ 1\u00a0s", "RU", "✓ EN",
                                  "📊 Chart", "📈 Load"]
    assert all(len(b["callback_data"].encode()) <= 64 for row in answer["reply_markup"]["inline_keyboard"]
               for b in row)
    await h.feed(callback(button(answer, "×2: 4 req/s"), message_obj=answer, user_id=4001))
    edited = last_message(api, 4001)
    assert edited["message_id"] == answer["message_id"] and "4 requests/s" in headline(edited)
    assert "÷2: 2 req/s" in labels(edited) and "×2: 8 req/s" in labels(edited)
    # a looser promise on the edited answer keeps its rate (every button carries the whole state)
    await h.feed(callback(button(edited, "TTFT ≤ 1\u00a0s"), message_obj=edited, user_id=4001))
    edited = last_message(api, 4001)
    assert "4 requests/s" in headline(edited)
    assert "TTFT ≤ 500\u00a0ms" in labels(edited) and "TTFT ≤ 2\u00a0s" in labels(edited)
    state = LoadCb.unpack(button(edited, "RU"))
    assert (state.r, state.t, state.o) == (4.0, 1000, 0)
    await h.feed(callback(button(edited, "RU"), message_obj=edited, user_id=4001))
    ru = last_message(api, 4001)
    assert "4\u00a0запроса/с" in headline(ru) and "÷2: 2\u00a0запр./с" in labels(ru) and "📈 Нагрузка" in labels(ru)
    assert len(api.of("editMessageText")) == 3
    assert len([c for c in api.of("sendMessage") if int(c.params["chat_id"]) == 4001]) == 1


async def test_users_and_tpot_promise_buttons_in_russian(h: Harness, api: FakeBotAPI) -> None:
    await h.feed(message("Qwen2.5 7B на 1 L40S, 16 пользователей одновременно, TPOT 30 мс, TTFT p95 под 1 с",
                         user_id=4002))
    answer = last_message(api, 4002)
    got = labels(answer)
    assert {"÷2: 8\u00a0польз.", "×2: 32\u00a0польз.", "TTFT ≤ 500\u00a0мс", "TTFT ≤ 2\u00a0с", "TPOT ≤ 15\u00a0мс",
            "TPOT ≤ 60\u00a0мс"} <= set(got), got
    await h.feed(callback(button(answer, "×2: 32\u00a0польз."), message_obj=answer, user_id=4002))
    edited = last_message(api, 4002)
    assert "32" in headline(edited) and "×2: 64\u00a0польз." in labels(edited)
    state = LoadCb.unpack(button(edited, "RU"))
    assert (state.r, state.u, state.t, state.o) == (0.0, 32, 1000, 30)


async def test_the_load_chart_button_sends_the_latency_chart(h: Harness, api: FakeBotAPI) -> None:
    await h.feed(message(RATE_Q, user_id=4003))
    answer = last_message(api, 4003)
    await h.feed(callback(button(answer, "📈 Load"), message_obj=answer, user_id=4003))
    [photo] = api.of("sendPhoto")
    assert photo.files["photo"].startswith(b"\x89PNG") and int(photo.params["chat_id"]) == 4003
    title = headline(answer).split("<b>")[1].split("</b>")[0]
    assert photo.params["caption"] == title.replace("&#39;", "'")
    assert not api.of("editMessageText")
    await h.feed(callback(button(answer, "📊 Chart"), message_obj=answer, user_id=4003))
    assert len(api.of("sendPhoto")) == 2  # the memory chart is still there


async def test_forged_and_stale_load_buttons_get_a_toast(h: Harness, api: FakeBotAPI) -> None:
    await h.feed(message(RATE_Q, user_id=4004))
    answer = last_message(api, 4004)
    good = LoadCb.unpack(button(answer, "×2: 4 req/s"))
    q = good.q
    forged = [
        good.model_copy(update={"f": "z"}).pack(),
        good.model_copy(update={"r": -1.0}).pack(),
        good.model_copy(update={"r": 0.0, "u": 0}).pack(),  # no load at all
        good.model_copy(update={"r": 1e9}).pack(),
        good.model_copy(update={"t": -5}).pack(),
        good.model_copy(update={"o": 10**9}).pack(),
        good.model_copy(update={"lg": "de"}).pack(),
        good.model_copy(update={"x": "z"}).pack(),
        f"w:{q}:b:nan:0:500:0:en:r",
        f"w:{q}:b:inf:0:500:0:en:r",
        f"w:{q}:b:4.0:0:500:0:en",  # one field less
        f"w:{q}:b:many:0:500:0:en:r",
        "w:0123456789ab:b:4.0:0:500:0:en:r",  # well formed, never stored
        f"w:{q[:-1]}g:b:4.0:0:500:0:en:r",
    ]
    for data in forged:
        await h.feed(callback(data, message_obj=answer, user_id=4004))
    toasts = {c.params.get("text") for c in api.of("answerCallbackQuery")}
    assert toasts == {"This button no longer works.",
                      "This answer is too old to change: ask the question again, please."}
    assert not api.of("editMessageText") and not api.of("sendPhoto")
    assert json.dumps(last_message(api, 4004)["reply_markup"]) == json.dumps(answer["reply_markup"])


def test_the_keyboard_offers_no_button_past_the_requests_bounds() -> None:
    def texts(state: tuple[float, int, int, int]) -> list[str]:
        kb = load_keyboard("0123456789ab", "b", state, "en")
        return [b.text for row in kb.inline_keyboard for b in row]

    assert not any(x.startswith("÷2") for x in texts((0.001, 0, 500, 0)))
    assert not any(x.startswith("×2") for x in texts((1e6, 0, 500, 0)))
    assert not any(x.startswith("÷2") for x in texts((0.0, 1, 500, 0))) and "×2: 2 users" in texts((0.0, 1, 500, 0))
    assert "TTFT ≤ 500\u00a0ms" in texts((2.0, 0, 0, 40))  # a promise to make when none was
    for state in ((0.001, 0, 1, 1), (1e6, 1_000_000, 10**7, 10**6), (0.3, 7, 333, 17)):
        kb = load_keyboard("0123456789ab", "b", state, "ru")
        for b in (b for row in kb.inline_keyboard for b in row):
            assert valid_load(LoadCb.unpack(str(b.callback_data))), b


async def test_a_promise_without_a_load_gets_working_buttons(h: Harness, api: FakeBotAPI) -> None:
    await h.feed(message("Llama 3.1 8B on 1 H100 with vLLM, TTFT p95 under 300 ms", user_id=4005))
    answer = last_message(api, 4005)
    assert "×2: 2 users" in labels(answer) and "TTFT ≤ 150\u00a0ms" in labels(answer)
    await h.feed(callback(button(answer, "TTFT ≤ 600\u00a0ms"), message_obj=answer, user_id=4005))
    edited = last_message(api, 4005)
    assert edited["message_id"] == answer["message_id"] and "TTFT ≤ 1.2\u00a0s" in labels(edited)
    assert not [c for c in api.of("answerCallbackQuery") if c.params.get("text")]
