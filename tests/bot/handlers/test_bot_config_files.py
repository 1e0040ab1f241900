"""config.json files: one size limit for pasted and uploaded ones, a document without `file_size` streamed with
a cap (never read whole), a file server that fails is "could not download", not an apology."""

from __future__ import annotations

import json
from pathlib import Path

from bot_harness import harness
from fake_botapi import FakeBotAPI, document, message
from fake_hub import configs_hub

from bot.handlers.configs import MAX_CONFIG_BYTES
from bot.hub.ids import MAX_PASTE

LLAMA = {"hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32,
         "num_key_value_heads": 8, "vocab_size": 128256, "model_type": "llama"}


def texts(api: FakeBotAPI, chat_id: int) -> list[str]:
    return [c.params["text"] for c in api.of("sendMessage") if int(c.params["chat_id"]) == chat_id]



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
            await h.feed(message(None, user_id=user, document=document(file_id, size=size), caption="QLoRA on H100"))
    too_big = "That file is over 256 KB"
    assert texts(api, 9301)[0].startswith(too_big)
    assert texts(api, 9302)[0].startswith(too_big)  # no file_size: found out while streaming
    assert texts(api, 9303)[0].startswith(too_big)
    assert texts(api, 9304)[0].startswith("✅") and "config.json" in texts(api, 9304)[0]
    assert h.metrics.errors == 0


async def test_a_file_server_error_is_could_not_download(tmp_path: Path, api: FakeBotAPI) -> None:
    async with harness(tmp_path, api) as h:
        api.files["x"] = ("documents/x.json", b"{}")
        doc = document("x")
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
    async with (configs_hub({"acme/absurd-model": absurd, "acme/custom-llama": LLAMA}) as endpoint,
                harness(tmp_path, api, hf_endpoint=endpoint) as h):
        await h.feed(message("1000000B qlora h100", user_id=9501))  # the size in words
        await h.feed(message(json.dumps(absurd), user_id=9502))  # pasted
        await h.feed(message(None, user_id=9503, document=document("absurd"), caption="QLoRA on H100"))
        await h.feed(message("acme/absurd-model qlora h100", user_id=9505))  # fetched from the Hub
        await h.feed(message(json.dumps(LLAMA), user_id=9504))  # a real one still answers
        await h.feed(message("acme/custom-llama qlora h100", user_id=9506))  # from the Hub too
        await h.feed(message("8B lora on a 4090", user_id=9507))
        await h.feed(message("acme/custom-llama qlora h100", user_id=9507))  # a new question, not a follow-up
    words = texts(api, 9501)[0].split("\n")[0]
    assert "GB" not in words
    for user in (9502, 9503, 9505):
        assert texts(api, user)[0].split("\n")[0] == words, user
    assert "GB" in texts(api, 9504)[0].split("\n")[0]
    assert "GB" in texts(api, 9506)[0].split("\n")[0] and "acme/custom-llama" in texts(api, 9506)[0]
    assert "acme/custom-llama" in texts(api, 9507)[1] and "↪️" not in texts(api, 9507)[1]
    assert h.metrics.errors == 0
