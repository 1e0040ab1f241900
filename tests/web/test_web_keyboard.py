"""The «📱 Калькулятор» row under answers: a web_app button in private chats, a t.me startapp link in groups,
nothing when the Mini App is not set up."""

from __future__ import annotations

from bot.views.keyboards import answer_keyboard, with_calculator

URL = "https://bot.example/app/"


def last_row(markup):
    return markup.inline_keyboard[-1]


def test_private_chat_gets_a_web_app_button_on_the_same_question():
    base = answer_keyboard("abc123def456", "lora", 8192, 1, "ru")
    markup = with_calculator(base, "abc123def456", "ru", URL, private=True)
    button = last_row(markup)[0]
    assert button.text == "📱 Калькулятор" and button.web_app.url == URL + "?q=abc123def456"
    assert markup.inline_keyboard[:-1] == base.inline_keyboard


def test_group_gets_a_startapp_link_and_english_text():
    base = answer_keyboard("abc123def456", "lora", 8192, 1, "en")
    button = last_row(with_calculator(base, "abc123def456", "en", URL, private=False, bot_username="gpu_bot"))[0]
    assert button.text == "📱 Calculator" and button.url == "https://t.me/gpu_bot?startapp=abc123def456"
    assert button.web_app is None


def test_no_button_without_the_setting_or_a_question():
    base = answer_keyboard("abc123def456", "lora", 8192, 1, "en")
    assert with_calculator(base, "abc123def456", "en", None, private=True) is base
    assert with_calculator(base, None, "en", URL, private=True) is base
    assert with_calculator(base, "abc123def456", "en", URL, private=False, bot_username=None) is base
