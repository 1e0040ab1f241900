"""The answer keyboard built without pydantic validation is exactly what aiogram would build and parse."""

from __future__ import annotations

from aiogram.types import InlineKeyboardButton, InlineKeyboardMarkup

from bot.views.keyboards import MAX_CALLBACK_BYTES, AnswerCb, answer_keyboard, pack_answer


def test_fast_packing_is_aiogram_packing_and_unpacks() -> None:
    for args in (("0123456789ab", "q", 2048, 1, "ru", "r"), ("ffffffffffff", "f", 32768, 8, "en", "p")):
        q, m, c, n, lg, x = args
        packed = pack_answer(q, m, c, n, lg, x)
        assert packed == AnswerCb(q=q, m=m, c=c, n=n, lg=lg, x=x).pack()
        assert AnswerCb.unpack(packed) == AnswerCb(q=q, m=m, c=c, n=n, lg=lg, x=x)
        assert len(packed.encode()) <= MAX_CALLBACK_BYTES


def test_the_keyboard_serialises_like_a_validated_one() -> None:
    fast = answer_keyboard("0123456789ab", "qlora", 8192, 2, "ru")
    validated = InlineKeyboardMarkup(inline_keyboard=[
        [InlineKeyboardButton(text=b.text, callback_data=b.callback_data) for b in row] for row in fast.inline_keyboard
    ])
    assert fast.model_dump(exclude_none=True) == validated.model_dump(exclude_none=True)
    labels = [b.text for row in fast.inline_keyboard for b in row]
    assert "✓ QLoRA" in labels and "✓ 8k" in labels and "✓ 2×" in labels and "✓ RU" in labels
    assert "Инференс" in labels  # an inference answer can be reached and left from the keyboard
