"""A parallel degree next to a user count: "TP 2 64 users" is TP 2 and 64 users, "EP, 64 пользователя" is expert
parallelism on (no degree) and 64 users; neither number is taken for the other, nor for epochs."""

from __future__ import annotations

import pytest

from engine.parse import parse


@pytest.mark.parametrize(("text", "tp", "users"), [
    ("serve llama 3.1 8b on 8xh100 tp 2 64 users", 2, 64),
    ("qwen 72b TP 4 16 одновременных пользователей на 4 a100", 4, 16),
    ("llama 70b на 8 h100 tp8 200 юзеров", 8, 200),
])
def test_a_tp_degree_before_a_user_count_keeps_both(text: str, tp: int, users: int) -> None:
    r = parse(text)
    assert r.tensor_parallel == tp and r.concurrency == users and r.epochs is None, r
    assert r.gpus and r.gpus[0].count >= tp


@pytest.mark.parametrize(("text", "ep", "users"), [
    ("deepseek v3 на 8 h200, EP, 64 пользователя", 1, 64),
    ("deepseek v3 на 8xh200 EP 64 concurrent users", 1, 64),
    ("deepseek v3 ep 8 на 8 h200 32 юзера", 8, 32),
])
def test_expert_parallelism_before_a_user_count_keeps_the_users(text: str, ep: int, users: int) -> None:
    r = parse(text)
    assert r.expert_parallel == ep and r.concurrency == users and r.epochs is None, r
