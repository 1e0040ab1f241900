"""Bad input through the real dispatcher and the command line: empty, 4096 characters of noise, emoji only,
Chinese and Arabic, absurd numbers, HTML that a reply echoes, hostile config.json (prototype keys, huge strings,
deep nesting, huge integers). Each gets one clear, friendly answer: no traceback, no apology, no hang, and every
reply is HTML that Telegram accepts (the fake refuses what Telegram would)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from bot_harness import Harness, harness
from fake_botapi import FakeBotAPI, html_error, inline_query, message, texts

from bot.middlewares import TokenBucket

random.seed(4096)
NOISE = "".join(random.choice("abcXYZ0123456789 <>&\"'/\\{}[]:;,.!?-_=+*#@$%^~`|\n\tйцукенгшщз😀") for _ in range(4096))
LLAMA = '"num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32, "vocab_size": 32000'
NOT_A_SIZE = "I could not read a model size in that."
TOO_DEEP = "That config is nested too deeply to be a real one: I do not read it."
TOO_BIG = "That config holds a number far too big to be a setting: I do not read it."
APOLOGY = ("Sorry, something went wrong", "Извините, у меня что-то сломалось")

# text → what the reply starts with (None: any answer, as long as it is one friendly reply)
TEXTS: dict[str, str | None] = {
    "   ": NOT_A_SIZE,
    NOISE: None,
    "🚀🔥💯🤖" * 20: NOT_A_SIZE,
    "我想在H100上微调一个模型，需要多少显存？": NOT_A_SIZE,
    "كم أحتاج من الذاكرة لتدريب نموذج على H100؟": NOT_A_SIZE,
    "10^100B qlora h100": NOT_A_SIZE,
    "-5 GPU 70B qlora": "🧮",
    "<b><i>70B qlora H100</i></b>": "✅",
    "</code> 70B </pre> qlora on </code>": "🧮",
    "70B qlora on a <b>GPU</b></code>": None,
    "[" * 2000 + "]" * 2000: TOO_DEEP,  # pasted deep nesting, as long as a message may be
    '{"a":' * 700 + "1" + "}" * 700: TOO_DEEP,
    "{" + LLAMA + ', "intermediate_size": ' + "9" * 3900 + "}": TOO_BIG,
    '{"__proto__": {"hidden_size": 1}, "constructor": {"prototype": {"x": 1}}, "x": "' + "a" * 3000 + '"}': None,
    '{"__proto__": {"admin": true}, ' + LLAMA + ', "name": "' + "<b>" * 500 + '"}': "🧮",
}

# a file's content → what the reply starts with
FILES: dict[bytes, str] = {
    b"[" * 100_000 + b"]" * 100_000: TOO_DEEP,  # 100,000 nested lists (200 KB: under the size limit)
    ('{"a": ' * 20_000 + "1" + "}" * 20_000).encode(): TOO_DEEP,
    ("{" + LLAMA + ', "intermediate_size": ' + "9" * 4300 + "}").encode(): TOO_BIG,
    ("{" + LLAMA + ', "intermediate_size": ' + "9" * 100 + "}").encode(): TOO_BIG,
    ('{"__proto__": {"hidden_size": 1}, ' + LLAMA + ', "pad": "' + "x" * 200_000 + '"}').encode(): "✅",  # answered
    b"\xff\xfe\x00garbage\x00" * 100: "That is a binary file",
}


def one_friendly_reply(api: FakeBotAPI, user: int) -> str:
    replies = texts(api, user)
    assert len(replies) == 1, replies
    assert replies[0].strip() and not replies[0].startswith(APOLOGY)
    assert html_error(replies[0]) is None
    return replies[0]


async def test_bad_text_gets_one_friendly_answer(tmp_path: Path, api: FakeBotAPI) -> None:
    async with harness(tmp_path, api, bucket=TokenBucket(rate=1000.0, burst=1000)) as h:
        for n, text in enumerate(TEXTS):
            await h.feed(message(text, user_id=7700 + n))
        await h.feed(message("", user_id=7699))  # no text at all
        for n, (text, start) in enumerate(TEXTS.items()):
            reply = one_friendly_reply(api, 7700 + n)
            assert start is None or start in reply, (text[:40], reply[:120])
        assert one_friendly_reply(api, 7699).startswith("I read text questions")
        assert "<b><i>" not in "".join(texts(api, 7700 + list(TEXTS).index("<b><i>70B qlora H100</i></b>")))
        assert not [c for c in api.calls if c.status == 400]  # every reply was HTML that Telegram accepts
        assert h.metrics.errors == 0


async def test_hostile_config_files_get_a_clear_answer(tmp_path: Path, api: FakeBotAPI) -> None:
    async with harness(tmp_path, api, bucket=TokenBucket(rate=1000.0, burst=1000)) as h:
        for n, content in enumerate(FILES):
            api.add_file(f"bad{n}", content, path=f"documents/bad{n}.json")
            doc = {"file_id": f"bad{n}", "file_unique_id": f"u{n}", "file_name": "config.json"}
            await h.feed(message(None, user_id=7800 + n, document=doc, caption="<b>QLoRA</b> on H100 </code>"))
        for n, (content, start) in enumerate(FILES.items()):
            reply = one_friendly_reply(api, 7800 + n)
            assert reply.startswith(start), (content[:30], reply[:120])
        assert not [c for c in api.calls if c.status == 400]
        assert h.metrics.errors == 0


@pytest.mark.parametrize("query", [NOISE[:256], "🚀🔥💯", "我想微调", "10^100B", "-5 GPU", "</code><b>70B", ""])
async def test_bad_inline_queries_get_valid_results(h: Harness, api: FakeBotAPI, query: str) -> None:
    await h.feed(inline_query(query, user_id=7901))
    [answered] = api.of("answerInlineQuery")
    for result in answered.params["results"]:
        assert html_error(result["input_message_content"]["message_text"]) is None
    assert h.metrics.errors == 0


def test_bad_lines_on_the_command_line_get_one_answer_each() -> None:
    lines = [t for t in TEXTS if "\n" not in t] + [""]
    stdin = ("\n".join(lines) + "\n").encode()
    for command in (["ask"], ["parse"], ["plan"], ["estimate"], ["config"]):
        run = subprocess.run([sys.executable, "-m", "bot", *command], input=stdin, capture_output=True, timeout=300)
        assert run.returncode == 0 and b"Traceback" not in run.stderr, (command, run.stderr[-500:])
        out = [json.loads(line) for line in run.stdout.decode().splitlines()]
        assert len(out) == len(lines), command
        if command == ["ask"]:
            assert not [o for o in out if o["answer"].startswith(APOLOGY) or not o["answer"].strip()]


HOSTILE = b'{"__proto__": {"x": 1}, "constructor": "' + b"a" * 200_000 + b'"}'


@pytest.mark.parametrize("content", [*list(FILES)[:4], HOSTILE])
def test_hostile_configs_on_the_command_line_are_an_error_line(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(content)
    run = subprocess.run([sys.executable, "-m", "bot", "check", "--json", str(path)], capture_output=True, timeout=120)
    assert run.returncode == 0 and b"Traceback" not in run.stderr
    out = json.loads(run.stdout)
    assert out["error"] in ("too_deep", "huge_number", "unknown_format", "no model size: say e.g. '7B' or a model name",
                            "no model size in the question")
