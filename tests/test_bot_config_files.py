"""config.json files: one size limit for pasted and uploaded ones, a document without `file_size` streamed with
a cap (never read whole), a file server that fails is "could not download", not an apology."""

from __future__ import annotations

import json
from pathlib import Path

from bot_harness import harness
from fake_botapi import FakeBotAPI, message

from bot.handlers.media import MAX_CONFIG_BYTES
from bot.hub.ids import MAX_PASTE

LLAMA = {"hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32,
         "num_key_value_heads": 8, "vocab_size": 128256, "model_type": "llama"}


def texts(api: FakeBotAPI, chat_id: int) -> list[str]:
    return [c.params["text"] for c in api.of("sendMessage") if int(c.params["chat_id"]) == chat_id]


def document(file_id: str, size: int | None) -> dict[str, object]:
    doc: dict[str, object] = {"file_id": file_id, "file_unique_id": "u" + file_id, "file_name": "config.json"}
    if size is not None:
        doc["file_size"] = size
    return doc


async def test_one_size_limit_and_a_capped_stream(tmp_path: Path, api: FakeBotAPI) -> None:
    assert MAX_CONFIG_BYTES == MAX_PASTE
    padded = json.dumps({**LLAMA, "pad": "x" * 270_000}).encode()  # just over the limit (256 KB)
    api.add_file("padded", padded, path="documents/padded.json")
    huge = json.dumps(LLAMA).encode() + b" " * (8 << 20)  # 8 MB, and the message does not say so
    api.add_file("huge", huge, path="documents/huge.json")
    api.add_file("ok", json.dumps(LLAMA).encode(), path="documents/ok.json")
    async with harness(tmp_path, api) as h:
        for user, (file_id, size) in enumerate([("padded", len(padded)), ("padded", None), ("huge", None),
                                                ("ok", None)], start=9301):
            await h.feed(message(None, user_id=user, document=document(file_id, size), caption="QLoRA on H100"))
    too_big = "That file is over 256 KB"
    assert texts(api, 9301)[0].startswith(too_big)
    assert texts(api, 9302)[0].startswith(too_big)  # no file_size: found out while streaming
    assert texts(api, 9303)[0].startswith(too_big)
    assert texts(api, 9304)[0].startswith("✅") and "config.json" in texts(api, 9304)[0]
    assert h.metrics.errors == 0


async def test_a_file_server_error_is_could_not_download(tmp_path: Path, api: FakeBotAPI) -> None:
    async with harness(tmp_path, api) as h:
        api.files["x"] = ("documents/x.json", b"{}")
        doc = document("x", None)
        original = api.api_getFile

        async def get_file(params: dict[str, object], files: dict[str, bytes]) -> object:
            result = await original(params, files)
            return {**result, "file_path": "documents/not-there.json"} if isinstance(result, dict) else result

        api.api_getFile = get_file  # type: ignore[method-assign]
        await h.feed(message(None, user_id=9401, document=doc))
    assert texts(api, 9401) == ["I could not download that file: please send it again."]
    assert h.metrics.errors == 0


async def test_an_absurd_config_gets_the_absurd_size_answer_from_any_source(tmp_path: Path, api: FakeBotAPI) -> None:
    absurd = {"hidden_size": 1_000_000, "num_hidden_layers": 10_000, "num_attention_heads": 100_000,
              "vocab_size": 100_000_000, "intermediate_size": 10_000_000}
    api.add_file("absurd", json.dumps(absurd).encode(), path="documents/absurd.json")
    async with harness(tmp_path, api) as h:
        await h.feed(message("1000000B qlora h100", user_id=9501))  # the size in words
        await h.feed(message(json.dumps(absurd), user_id=9502))  # pasted
        await h.feed(message(None, user_id=9503, document=document("absurd", None), caption="QLoRA on H100"))
        await h.feed(message(json.dumps(LLAMA), user_id=9504))  # a real one still answers
    words = texts(api, 9501)[0].split("\n")[0]
    assert "GB" not in words
    assert texts(api, 9502)[0].split("\n")[0] == words and texts(api, 9503)[0].split("\n")[0] == words
    assert "GB" in texts(api, 9504)[0].split("\n")[0]
