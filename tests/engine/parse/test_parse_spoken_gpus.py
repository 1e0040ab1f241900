"""GPUs and lengths as Russian chat writes them: «х100» for the H100 (the H as it sounds), «тыщ» for thousands, and a
card's memory said after «по» («8 а100 по 40»), without turning counts and hours into memory."""

from __future__ import annotations

import pytest

from engine.parse import _parse as parse_strict


@pytest.mark.parametrize(("q", "name", "count"), [
    ("фулл 7б на 8 х100", "H100", 8),
    ("лора 8б на х100", "H100", 1),
    ("хочу фулл файнтюн мистраль 7б, 8к токенов контекст, на 8 х100 — влезет?", "H100", 8),
    ("инфер 70б на х200", "H200", 1),
    ("лора 8б на 2х4090", "4090", 2),  # «х» between digits stays the times sign
])
def test_kha_before_100_or_200_is_the_h_series(q: str, name: str, count: int) -> None:
    r = parse_strict(q)
    assert r.gpus and name in (r.gpus[0].name or ""), (q, r.gpus)
    assert r.gpus[0].count == count, q


@pytest.mark.parametrize(("q", "seq_len"), [
    ("qwen2.5 32b qlora на 1 h100 с контекстом в 16 тыщ", 16_384),
    ("лора 8б контекст в 8 тыщ на 4090", 8192),
])
def test_tyshch_is_thousands(q: str, seq_len: int) -> None:
    assert parse_strict(q).seq_len == seq_len


@pytest.mark.parametrize(("q", "memory"), [
    ("лора 70б на 8 а100 по 40", 40.0),
    ("лора 70б на 8 а100 по 40?", 40.0),
    ("лора 70б на 8 а100 по 40 гб", 40.0),
    ("лора 70б на 8 а100 по 40 часов", 80.0),  # hours, not the card: the default A100 stays
])
def test_a_memory_variant_after_po_is_the_card(q: str, memory: float) -> None:
    r = parse_strict(q)
    assert r.gpus[0].memory_gb == memory and r.gpus[0].count == 8, (q, r.gpus)


@pytest.mark.parametrize(("q", "memory", "count"), [
    ("лора 70б на 4 картах по 80", 80.0, 4),
    ("qlora 70b on 2 cards of 48", 48.0, 2),
    ("лора 70б на 4 картах по 80 гб", 80.0, 4),
    ("лора 70б на 4 картах по 8 часов", None, 4),  # hours, not memory
])
def test_cards_with_a_size_after_po_are_cards_of_that_memory(q: str, memory: float | None, count: int) -> None:
    r = parse_strict(q)
    assert len(r.gpus) == 1 and r.gpus[0].memory_gb == memory and r.gpus[0].count == count, (q, r.gpus)
