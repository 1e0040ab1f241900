"""bot/hub.py against a fake Hugging Face Hub on loopback: no real network anywhere."""

from __future__ import annotations

import asyncio
import json
import socket
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web
from fake_hub import hub_server

from bot import hub
from bot.hub import (
    MemoryConfigCache,
    config_from_json,
    fetch_config,
    find_hub_id,
    parse_pasted_config,
)
from bot.hub import fetch as hub_fetch
from bot.hub.configs import MAX_KEPT_BYTES
from bot.hub.ids import MAX_PASTE
from engine.contract import estimate_json as estimate
from engine.schema import ModelRef, Request

# Qwen/Qwen2.5-Coder-32B-Instruct config.json (the public file's fields)
QWEN_CODER_32B: dict[str, Any] = {
    "architectures": ["Qwen2ForCausalLM"],
    "attention_dropout": 0.0,
    "bos_token_id": 151643,
    "eos_token_id": 151645,
    "hidden_act": "silu",
    "hidden_size": 5120,
    "initializer_range": 0.02,
    "intermediate_size": 27648,
    "max_position_embeddings": 32768,
    "max_window_layers": 70,
    "model_type": "qwen2",
    "num_attention_heads": 40,
    "num_hidden_layers": 64,
    "num_key_value_heads": 8,
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0,
    "sliding_window": 131072,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.43.1",
    "use_cache": True,
    "use_sliding_window": False,
    "vocab_size": 152064,
}
QWEN_ID = "Qwen/Qwen2.5-Coder-32B-Instruct"
TOKEN = "hf_test_token"
LIMIT = 5.0  # seconds any one test step may take: nothing can hang


@dataclass
class FakeHub:
    endpoint: str
    hits: Counter[str] = field(default_factory=Counter)
    auth: dict[str, str | None] = field(default_factory=dict)


def _config_response(data: dict[str, Any]) -> web.Response:
    return web.Response(text=json.dumps(data), content_type="application/json")


@pytest.fixture
async def fake_hub() -> AsyncIterator[FakeHub]:
    state: dict[str, FakeHub] = {}

    async def handle(request: web.Request) -> web.StreamResponse:
        repo = f"{request.match_info['owner']}/{request.match_info['name']}"
        fake = state["hub"]
        fake.hits[repo] += 1
        fake.auth[repo] = request.headers.get("Authorization")
        if repo == QWEN_ID:
            return _config_response(QWEN_CODER_32B)
        if repo == "Qwen/Slow-Shared-1B":  # slow enough that concurrent callers overlap
            await asyncio.sleep(0.2)
            return _config_response(QWEN_CODER_32B)
        if repo == "meta-llama/Gated-Model-8B":
            if request.headers.get("Authorization") == f"Bearer {TOKEN}":
                return _config_response(QWEN_CODER_32B)
            return web.Response(status=401, headers={"X-Error-Code": "GatedRepo"}, text="gated")
        if repo == "someone/forbidden-1":
            return web.Response(status=403, text="forbidden")
        if repo == "someone/private-or-missing-1":  # the Hub hides private repos behind a 401
            return web.Response(status=401, headers={"X-Error-Code": "RepoNotFound"}, text="not found")
        if repo == "someone/slow-1":
            await asyncio.sleep(3)
            return _config_response(QWEN_CODER_32B)
        if repo == "someone/broken-1":
            return web.Response(text='{"num_hidden_layers": 64, "hidden_size": ', content_type="application/json")
        if repo == "someone/not-a-model-1":
            return _config_response({"_name_or_path": "tokenizer only", "foo": [1, 2, 3]})
        if repo == "someone/bloated-32B":  # a real architecture under 900 KB of label maps and blobs
            return _config_response({**QWEN_CODER_32B, "id2label": {str(i): f"LABEL_{i}" for i in range(20_000)},
                                     "auto_map": {"AutoModel": "x" * 50_000}, "layer_types": ["full"] * 64})
        if repo == "someone/huge-1":
            return web.Response(body=b"{" + b" " * 2_000_000 + b"}", content_type="application/json")
        if repo == "someone/down-1":
            return web.Response(status=503, text="maintenance")
        return web.Response(status=404, headers={"X-Error-Code": "RepoNotFound"}, text="Repository not found")

    hub.forget_failures()
    async with hub_server(handle) as endpoint:
        state["hub"] = FakeHub(endpoint=endpoint)
        try:
            yield state["hub"]
        finally:
            hub.forget_failures()


async def fetch(model_id: str, fake: FakeHub, **kwargs: Any) -> hub.HubResult:
    async with asyncio.timeout(LIMIT):
        return await fetch_config(model_id, endpoint=fake.endpoint, **kwargs)


# --- fetching ---------------------------------------------------------------------------------

async def test_fetches_and_maps_a_real_config(fake_hub: FakeHub) -> None:
    result = await fetch(QWEN_ID, fake_hub)
    assert result.reason == "ok" and result.model_id == QWEN_ID
    cfg = result.config
    assert cfg is not None
    assert (cfg.num_hidden_layers, cfg.hidden_size, cfg.intermediate_size) == (64, 5120, 27648)
    assert (cfg.num_attention_heads, cfg.num_key_value_heads, cfg.vocab_size) == (40, 8, 152064)
    assert cfg.tie_word_embeddings is False and cfg.num_local_experts is None
    assert result.params_b is None  # gated MLP: the engine counts it from the config
    assert fake_hub.auth[QWEN_ID] is None  # no token, no Authorization header


async def test_fetched_config_gives_a_sensible_estimate(fake_hub: FakeHub) -> None:
    result = await fetch(QWEN_ID, fake_hub)
    # a name the catalog does not know: the numbers come from the fetched config alone
    request = Request(model=ModelRef(name="someone/Custom-Coder-32B", config=result.config), method="lora")
    answer = estimate(request)
    assert answer["request"]["model"]["known"] is True
    assert 32.5 < answer["request"]["model"]["params_b"] < 33.0  # Qwen2.5-32B: 32.76B
    assert 59 < answer["per_gpu"]["weights"] < 63  # 32.76e9 × 2 bytes = 61 GiB
    assert answer["per_gpu"]["total"] > answer["per_gpu"]["weights"]
    qlora = estimate(Request(model=ModelRef(name="someone/Custom-Coder-32B", config=result.config),
                             method="qlora"))
    assert 14 < qlora["per_gpu"]["weights"] < 22  # NF4 linear layers + 16-bit embeddings


async def test_token_is_sent_and_opens_a_gated_repo(fake_hub: FakeHub) -> None:
    closed = await fetch("meta-llama/Gated-Model-8B", fake_hub)
    assert closed.reason == "gated" and closed.config is None
    opened = await fetch("meta-llama/Gated-Model-8B", fake_hub, token=TOKEN)
    assert opened.reason == "ok" and opened.config is not None
    assert fake_hub.auth["meta-llama/Gated-Model-8B"] == f"Bearer {TOKEN}"


@pytest.mark.parametrize(("model_id", "reason"), [
    ("someone/forbidden-1", "gated"),
    ("someone/missing-1", "not_found"),
    ("someone/private-or-missing-1", "not_found"),
    ("someone/broken-1", "invalid"),
    ("someone/not-a-model-1", "invalid"),
    ("someone/huge-1", "invalid"),
    ("someone/down-1", "offline"),
])
async def test_failure_reasons(fake_hub: FakeHub, model_id: str, reason: str) -> None:
    result = await fetch(model_id, fake_hub)
    assert result.reason == reason and result.config is None
    assert fake_hub.hits[model_id] == 1


async def test_slow_hub_times_out_without_blocking_others(fake_hub: FakeHub) -> None:
    loop = asyncio.get_running_loop()
    start = loop.time()
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while loop.time() - start < 0.25:
            ticks += 1
            await asyncio.sleep(0.01)

    slow, _ = await asyncio.gather(fetch("someone/slow-1", fake_hub, timeout=0.3), ticker())
    assert slow.reason == "timeout"
    assert ticks >= 10  # the event loop kept running while the fetch waited


async def test_unreachable_hub_is_offline() -> None:
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    hub.forget_failures()
    async with asyncio.timeout(LIMIT):
        result = await fetch_config(QWEN_ID, endpoint=f"http://127.0.0.1:{port}", timeout=2.0)
    assert result.reason == "offline"
    hub.forget_failures()


async def test_malformed_id_is_not_requested(fake_hub: FakeHub) -> None:
    for bad in ("no-slash", "a/b/c", "owner/..", "owner/name--x", "../etc/passwd", "x/" + "a" * 97):
        assert (await fetch(bad, fake_hub)).reason == "not_found"
    assert sum(fake_hub.hits.values()) == 0


async def test_cache_hit_means_no_second_request(fake_hub: FakeHub) -> None:
    cache = MemoryConfigCache()
    first = await fetch(QWEN_ID, fake_hub, cache=cache)
    second = await fetch(QWEN_ID, fake_hub, cache=cache)
    assert first.reason == second.reason == "ok" and first.config == second.config
    assert fake_hub.hits[QWEN_ID] == 1
    assert await cache.get(QWEN_ID) == QWEN_CODER_32B
    assert await cache.get("someone/else") is None


async def test_a_cached_config_keeps_the_small_fields_not_the_file(fake_hub: FakeHub) -> None:
    cache = MemoryConfigCache()
    first = await fetch("someone/bloated-32B", fake_hub, cache=cache)
    kept = await cache.get("someone/bloated-32B")
    assert kept is not None and len(json.dumps(kept)) <= MAX_KEPT_BYTES
    assert "id2label" not in kept and kept["layer_types"] == ["full"] * 64  # short per-layer lists stay
    assert all(kept[k] == v for k, v in QWEN_CODER_32B.items() if not isinstance(v, dict | list))
    second = await fetch("someone/bloated-32B", fake_hub, cache=cache)
    assert first.config == second.config and first.config is not None and fake_hub.hits["someone/bloated-32B"] == 1


async def test_memory_cache_expires_and_is_bounded() -> None:
    cache = MemoryConfigCache(ttl=0.05, max_items=2)
    await cache.set("a/one-1", {"x": 1})
    assert await cache.get("a/one-1") == {"x": 1}
    await asyncio.sleep(0.08)
    assert await cache.get("a/one-1") is None
    for i in range(3):
        await cache.set(f"a/m-{i}", {"i": i})
    assert await cache.get("a/m-0") is None and await cache.get("a/m-2") == {"i": 2}


async def test_failures_are_remembered_briefly(fake_hub: FakeHub) -> None:
    for _ in range(5):
        assert (await fetch("someone/missing-1", fake_hub)).reason == "not_found"
    assert fake_hub.hits["someone/missing-1"] == 1
    hub.forget_failures()
    assert (await fetch("someone/missing-1", fake_hub)).reason == "not_found"
    assert fake_hub.hits["someone/missing-1"] == 2


async def test_concurrent_fetches_of_one_id_share_one_request(fake_hub: FakeHub) -> None:
    results = await asyncio.gather(*(fetch("Qwen/Slow-Shared-1B", fake_hub) for _ in range(20)))
    assert all(r.reason == "ok" for r in results)
    assert fake_hub.hits["Qwen/Slow-Shared-1B"] == 1
    assert not hub_fetch._inflight  # nothing left behind


async def test_a_cancelled_caller_does_not_cancel_the_shared_request(fake_hub: FakeHub) -> None:
    first = asyncio.create_task(fetch("Qwen/Slow-Shared-1B", fake_hub))
    second = asyncio.create_task(fetch("Qwen/Slow-Shared-1B", fake_hub))
    await asyncio.sleep(0.05)
    first.cancel()
    result = await second
    assert result.reason == "ok" and first.cancelled()
    assert fake_hub.hits["Qwen/Slow-Shared-1B"] == 1


async def test_reuses_a_given_session(fake_hub: FakeHub) -> None:
    import aiohttp

    async with aiohttp.ClientSession() as session:
        result = await fetch(QWEN_ID, fake_hub, session=session)
        assert result.reason == "ok"
        assert not session.closed  # the caller's session is the caller's to close


async def test_an_endpoint_with_a_trailing_slash_and_a_token_reach_a_gated_model(fake_hub: FakeHub) -> None:
    async with asyncio.timeout(LIMIT):
        result = await fetch_config("meta-llama/Gated-Model-8B", endpoint=fake_hub.endpoint + "/", token=TOKEN)
    assert result.reason == "ok"


# --- Hub ids in text -------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("Qwen/Qwen2.5-Coder-32B-Instruct lora на h100", "Qwen/Qwen2.5-Coder-32B-Instruct"),
    ("https://huggingface.co/mistralai/Mistral-Nemo-Base-2407", "mistralai/Mistral-Nemo-Base-2407"),
    ("посмотри huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json.", "meta-llama/Llama-3.1-8B"),
    ("hf.co/google/gemma-2-9b-it qlora?", "google/gemma-2-9b-it"),
    ("can I serve deepseek-ai/DeepSeek-V3.", "deepseek-ai/DeepSeek-V3"),
    ("QLoRA для 01-ai/Yi-34B, 4k контекст, A100/H100?", "01-ai/Yi-34B"),
    ("bigscience/bloom full ft on 8/16 gpus", "bigscience/bloom"),
    ("(THUDM/chatglm3-6b)", "THUDM/chatglm3-6b"),
    ("mistral-community/Mixtral-8x22B-v0.1 inference", "mistral-community/Mixtral-8x22B-v0.1"),
])
def test_find_hub_id(text: str, expected: str) -> None:
    assert find_hub_id(text) == expected


@pytest.mark.parametrize("text", [
    "70B QLoRA на H100?", "context 8k/16k", "A100/H100 80gb", "ответ ru/en", "12/05/2024", "1/2 of a node",
    "LoRA/QLoRA", "fp16/bf16", "Llama-3-8B/Mistral-7B", "2000 tokens/s", "70B/405B", "H100/H200/B200",
    "r16/r32", "Qwen2.5/Qwen3", "https://huggingface.co/datasets/foo/bar-1", "github.com/openai/gpt-2",
    "и/или", "gpt2", "", "/", "a/", "x" * 300 + "/" + "y1" * 100,
])
def test_find_hub_id_ignores_other_slashes(text: str) -> None:
    assert find_hub_id(text) is None


# --- pasted configs --------------------------------------------------------------------------

GPT2 = {"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
        "n_ctx": 1024, "n_embd": 768, "n_head": 12, "n_inner": None, "n_layer": 12, "n_positions": 1024,
        "vocab_size": 50257}


def test_gpt2_style_config() -> None:
    cfg = parse_pasted_config(json.dumps(GPT2))
    assert cfg is not None
    assert (cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads, cfg.vocab_size) == (12, 768, 12, 50257)
    assert cfg.intermediate_size is None and cfg.num_key_value_heads is None
    assert cfg.tie_word_embeddings is True  # GPT-2 ties its embeddings and says nothing
    params = hub.params_from_json(GPT2)
    assert params is not None and 0.120 < params < 0.128  # GPT-2 small: 124M


def test_fenced_config_with_words_around() -> None:
    text = "вот мой конфиг:\n```json\n" + json.dumps(QWEN_CODER_32B, indent=2) + "\n```\nвлезет в 2×4090?"
    cfg = parse_pasted_config(text)
    assert cfg is not None and cfg.num_hidden_layers == 64 and cfg.num_key_value_heads == 8


def test_nested_text_config() -> None:
    llava = {"model_type": "llava", "vision_config": {"hidden_size": 1024, "num_hidden_layers": 24},
             "text_config": {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008,
                             "num_hidden_layers": 32, "num_attention_heads": 32, "vocab_size": 32064},
             "image_token_index": 32000}
    cfg = config_from_json(llava)
    assert cfg is not None
    assert (cfg.num_hidden_layers, cfg.hidden_size, cfg.intermediate_size, cfg.vocab_size) == (32, 4096, 11008, 32064)
    assert cfg.tie_word_embeddings is False  # llama's default


def test_alternate_field_names() -> None:
    chatglm = {"model_type": "chatglm", "num_layers": 28, "hidden_size": 4096, "ffn_hidden_size": 13696,
               "num_attention_heads": 32, "multi_query_attention": True, "multi_query_group_num": 2,
               "kv_channels": 128, "padded_vocab_size": 65024}
    cfg = config_from_json(chatglm)
    assert cfg is not None
    assert (cfg.num_hidden_layers, cfg.intermediate_size, cfg.num_key_value_heads, cfg.head_dim) == (28, 13696, 2, 128)
    assert cfg.vocab_size == 65024
    bloom = {"model_type": "bloom", "n_layer": 70, "hidden_size": 14336, "n_head": 112, "vocab_size": 250880}
    cfg = config_from_json(bloom)
    assert cfg is not None and (cfg.num_hidden_layers, cfg.num_attention_heads) == (70, 112)
    falcon = {"model_type": "falcon", "hidden_size": 4544, "n_head": 71, "n_layer": 32, "multi_query": True,
              "vocab_size": 65024}
    cfg = config_from_json(falcon)
    assert cfg is not None and cfg.num_key_value_heads == 1


def test_moe_fields() -> None:
    mixtral = {"model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
               "num_attention_heads": 32, "num_key_value_heads": 8, "num_local_experts": 8,
               "num_experts_per_tok": 2, "vocab_size": 32000}
    cfg = config_from_json(mixtral)
    assert cfg is not None and (cfg.num_local_experts, cfg.num_experts_per_tok) == (8, 2)
    deepseek = {"model_type": "deepseek_v3", "hidden_size": 7168, "intermediate_size": 18432,
                "moe_intermediate_size": 2048, "num_hidden_layers": 61, "num_attention_heads": 128,
                "num_key_value_heads": 128, "n_routed_experts": 256, "n_shared_experts": 1,
                "num_experts_per_tok": 8, "vocab_size": 129280}
    cfg = config_from_json(deepseek)
    assert cfg is not None
    assert (cfg.num_local_experts, cfg.moe_intermediate_size, cfg.n_shared_experts) == (256, 2048, 1)
    qwen_moe = {"model_type": "qwen2_moe", "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 24,
                "num_attention_heads": 16, "num_key_value_heads": 16, "num_experts": 60, "num_experts_per_tok": 4,
                "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632, "vocab_size": 151936}
    cfg = config_from_json(qwen_moe)
    assert cfg is not None and (cfg.num_local_experts, cfg.n_shared_experts) == (60, 4)
    dense_qwen3 = {**QWEN_CODER_32B, "num_experts": 0}
    cfg = config_from_json(dense_qwen3)
    assert cfg is not None and cfg.num_local_experts is None


@pytest.mark.parametrize("text", [
    "", "just a question about 70B on H100", "{}", "[1, 2, 3]", '{"hidden_size": 4096}', "{" * 100_000,
    '{"num_hidden_layers": -1, "hidden_size": 4096, "num_attention_heads": 32, "vocab_size": 32000}',
    '{"num_hidden_layers": true, "hidden_size": 4096, "num_attention_heads": 32, "vocab_size": 32000}',
    '{"num_hidden_layers": "32", "hidden_size": 4096, "num_attention_heads": 32, "vocab_size": 32000}',
    '{"num_hidden_layers": 1e400, "hidden_size": 4096, "num_attention_heads": 32, "vocab_size": 32000}',
    "```json\n{not json at all}\n```", "\x00\xff" * 1000, '{"text_config": {"text_config": null}}',
    json.dumps(QWEN_CODER_32B) + " " * (MAX_PASTE + 1),
])
def test_junk_is_not_a_config(text: str) -> None:
    assert parse_pasted_config(text) is None


def test_unknown_keys_are_ignored_and_non_dicts_refused() -> None:
    cfg = config_from_json({**QWEN_CODER_32B, "some_future_field": {"x": [1, 2]}, "rope_scaling": None})
    assert cfg is not None and cfg.hidden_size == 5120
    for junk in (None, 1, "x", [QWEN_CODER_32B]):
        assert config_from_json(junk) is None
