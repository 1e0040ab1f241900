"""What a keyboard button does to the stored question."""

from __future__ import annotations

from bot.answers import apply_state
from engine.parse import parse


def test_a_count_button_sets_every_compared_gpu_and_settles_the_count_note() -> None:
    pressed = apply_state(parse("70B qlora H100 vs A100 on 0 GPUs"), "q", 2048, 2)
    assert [(g.name, g.count) for g in pressed.gpus] == [("H100 SXM", 2), ("A100 80GB SXM", 2)]
    settled = apply_state(parse("70B qlora on 0 H100"), "q", 2048, 4)
    assert settled.error is None and settled.gpus[0].count == 4


def test_a_context_button_settles_an_impossible_context_but_keeps_other_notes() -> None:
    asked = parse("70B qlora, context 99999999999, 10^30 epochs")
    assert asked.error and "context length out of range" in asked.error
    pressed = apply_state(asked, "q", 8192, 1)
    assert pressed.seq_len == 8192 and "context length out of range" not in (pressed.error or "")
    assert pressed.error == "epochs out of range"
