"""Configs in and out in Telegram, end to end against the fake Bot API: the Config button sends the
config as documents (parsed back, the request compared), another framework from the row, a config file or a pasted
command line is checked, and what cannot be read (too large, binary, a YAML bomb, secrets) gets a clear answer."""

from __future__ import annotations

import json
import logging

import pytest
from bot_harness import Harness
from fake_botapi import BOT_ID, FakeBotAPI, button, callback, document, documents, last_message, message, texts, toasts

from bot.views.keyboards import ConfigCb, ServingConfigCb, pack_config, pack_serving_config
from engine.configs import read_config
from engine.configs.bridge import best_job

TOKEN = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123"  # shaped like a real Hugging Face token
AXOLOTL = """base_model: meta-llama/Llama-3.1-8B
adapter: qlora
load_in_4bit: true
lora_r: 16
lora_target_linear: true
sequence_len: 4096
micro_batch_size: 2
my_custom_option: 3
wandb_project: test
"""
BOMB = (b"a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
        b"d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n")



async def ask(h: Harness, api: FakeBotAPI, text: str, user_id: int, lang: str = "en") -> dict[str, object]:
    await h.feed(message(text, user_id=user_id, language_code=lang))
    return last_message(api, user_id)


def test_config_callback_data_is_small_and_packs_like_aiogram() -> None:
    for args in (("0123456789ab", "q", 2048, 1, "ru", ""), ("ffffffffffff", "i", 131072, 8, "en", "lc")):
        packed = pack_config(*args)
        q, m, c, n, lg, f = args
        assert packed == ConfigCb(q=q, m=m, c=c, n=n, lg=lg, f=f).pack()
        assert ConfigCb.unpack(packed) == ConfigCb(q=q, m=m, c=c, n=n, lg=lg, f=f)
        assert len(packed.encode()) <= 64
    for q, f, u, c, lg, t in (("0123456789ab", "-", 8, 4096, "ru", ""),
                              ("ffffffffffff", "a", 4096, 131072, "en", "sg")):
        packed = pack_serving_config(q, f, u, c, lg, t)
        assert packed == ServingConfigCb(q=q, f=f, u=u, c=c, lg=lg, t=t).pack()
        assert len(packed.encode()) <= 64


async def test_config_button_sends_the_best_plans_config_and_another_framework(h: Harness, api: FakeBotAPI) -> None:
    question = "QLoRA Llama-3.1-8B with axolotl on an RTX 4090, context 4k"
    answer = await ask(h, api, question, 3001)
    await h.feed(callback(button(answer, "⚙️ Config"), message_obj=answer))
    (name, content, caption), = documents(api, 3001)  # the framework the question named is the default
    assert name == "axolotl.yaml"
    assert "Axolotl" in caption and "RTX 4090" in caption and "GiB per GPU" in caption
    assert " GB" not in caption and "GiB per GPU" in content.decode()  # one unit: the caption's is the file's
    read = read_config(content, name)
    from engine.parse import parse
    job, _ = best_job(parse(question), "axolotl")
    assert read.request == job.request("axolotl")  # the document reads back as the plan it was written for
    assert read.request.method == "qlora" and read.request.seq_len == 4096
    assert toasts(api)[-1] is None

    sent = [m for (c, _), m in api.messages.items() if c == 3001 and "document" in m][-1]
    labels = {b["text"] for row in sent["reply_markup"]["inline_keyboard"] for b in row}
    assert labels == {"✓ Axolotl", "LLaMA-Factory", "TRL", "Unsloth", "torchtune", "DeepSpeed", "accelerate"}
    await h.feed(callback(button(sent, "DeepSpeed"), message_obj=sent))
    names = [d[0] for d in documents(api, 3001)[1:]]
    assert names[0].startswith("ds_") and names[0].endswith(".json") and "train.py" in names
    ds = json.loads(documents(api, 3001)[1][1])
    assert ds["zero_optimization"]["stage"] == 0  # one RTX 4090: ZeRO has nothing to partition (no offload needed)
    await h.feed(callback(button(sent, "TRL"), message_obj=sent))
    assert documents(api, 3001)[-1][0] == "train.py"
    assert "SFTConfig" in documents(api, 3001)[-1][1].decode()


async def test_serving_answer_offers_serving_engines_in_russian(h: Harness, api: FakeBotAPI) -> None:
    answer = await ask(h, api, "инференс Qwen2.5-7B на L40S, 8 пользователей", 3002, lang="ru")
    await h.feed(callback(button(answer, "⚙️ Конфиг"), message_obj=answer, user_id=3002, language_code="ru"))
    (name, content, caption), = documents(api, 3002)
    assert name == "vllm_serve.sh" and "vllm serve" in content.decode()
    assert "ГиБ на GPU" in caption and "Запуск" in caption
    sent = [m for (c, _), m in api.messages.items() if c == 3002 and "document" in m][-1]
    labels = {b["text"] for row in sent["reply_markup"]["inline_keyboard"] for b in row}
    assert labels == {"✓ vLLM", "SGLang", "llama.cpp"}
    await h.feed(callback(button(sent, "llama.cpp"), message_obj=sent, user_id=3002, language_code="ru"))
    assert documents(api, 3002)[-1][0] == "llama_server.sh"
    assert read_config(documents(api, 3002)[-1][1], "llama_server.sh").request.serving_engine == "llama.cpp"
    # the config follows the serving keyboard's state: 32 users at once
    await h.feed(callback(button(answer, "👥 32"), message_obj=answer, user_id=3002, language_code="ru"))
    redrawn = api.messages[(3002, answer["message_id"])]
    await h.feed(callback(button(redrawn, "⚙️ Конфиг"), message_obj=redrawn, user_id=3002, language_code="ru"))
    name, content, _ = documents(api, 3002)[-1]
    assert name == "vllm_serve.sh" and "--max-num-seqs 32" in content.decode()


async def test_the_config_of_a_room_answer_keeps_the_engine_s_batch(h: Harness, api: FakeBotAPI) -> None:
    # no users asked: the answer is the room the GPUs have, and so is the config (vLLM's max_num_seqs, never 1);
    # a format button keeps the answer a room answer
    answer = await ask(h, api, "qwen 7b на 4090 vllm", 3012, lang="ru")
    command = next(ln for ln in answer["text"].splitlines() if "vllm serve" in ln)
    await h.feed(callback(button(answer, "⚙️ Конфиг"), message_obj=answer, user_id=3012, language_code="ru"))
    name, content, _ = documents(api, 3012)[-1]
    seqs = command.split("--max-num-seqs ")[1].split()[0]
    assert name == "vllm_serve.sh" and f"--max-num-seqs {seqs}" in content.decode() and seqs != "1"
    await h.feed(callback(button(answer, "FP8"), message_obj=answer, user_id=3012, language_code="ru"))
    redrawn = api.messages[(3012, answer["message_id"])]
    assert "пользовател" in redrawn["text"].splitlines()[0] and "1 пользователь" not in redrawn["text"].splitlines()[0]


async def test_forged_and_stale_config_buttons_get_a_toast(h: Harness, api: FakeBotAPI) -> None:
    answer = await ask(h, api, "LoRA Llama 3.1 8B on a 4090", 3003)
    data = button(answer, "⚙️ Config")
    qid = data.split(":")[1]
    await h.feed(callback(pack_config("0" * 12, "l", 2048, 1, "en"), message_obj=answer))
    await h.feed(callback(pack_config(qid, "l", 2048, 1, "en", "zz"), message_obj=answer))
    await h.feed(callback(pack_config(qid, "l", 2048, 1, "en", "vl"), message_obj=answer))  # serving for training
    said = toasts(api)
    assert said[0] and "too old" in said[0]
    assert said[1] and "no longer works" in said[1]
    assert said[2] and "does not fit this answer" in said[2]
    assert documents(api, 3003) == []


async def test_axolotl_yaml_document_is_checked_with_ignored_keys(h: Harness, api: FakeBotAPI) -> None:
    api.add_file("ax1", AXOLOTL.encode(), path="documents/axolotl.yaml")
    await h.feed(message(None, user_id=3004, document=document("ax1", "axolotl.yaml", len(AXOLOTL.encode()))))
    reply = texts(api, 3004)[-1]
    assert "Read as Axolotl YAML" in reply and "Framework: Axolotl" in reply
    assert "<code>my_custom_option</code>" in reply and "Not understood (1 key" in reply
    assert "Left out (1 key, no effect on memory): <code>wandb_project</code>" in reply  # named, not dropped
    assert "QLoRA" in reply and "context 4k" in reply  # the normal answer for the request it describes
    markup = last_message(api, 3004)["reply_markup"]
    assert any(b["text"] == "⚙️ Config" for row in markup["inline_keyboard"] for b in row)
    # a caption names the GPU the config does not: the check fits against it
    await h.feed(message(None, user_id=3004, document=document("ax1", "axolotl.yaml", len(AXOLOTL.encode())),
                         caption="on an RTX 4090"))
    assert "RTX 4090" in texts(api, 3004)[-1].split("\n\n", 1)[1].split("\n")[0]
    # the answer's Config button writes the same framework back
    answer = last_message(api, 3004)
    await h.feed(callback(button(answer, "⚙️ Config"), message_obj=answer, user_id=3004))
    assert documents(api, 3004)[-1][0] == "axolotl.yaml"


async def test_pasted_command_line_and_yaml_are_checked(h: Harness, api: FakeBotAPI) -> None:
    await h.feed(message("accelerate launch --num_processes 4 --use_fsdp --fsdp_offload_params true train.py "
                         "--model_name_or_path Qwen/Qwen2.5-7B --max_length 4096", user_id=3005))
    reply = texts(api, 3005)[-1]
    heard = any(f"· 4{space}GPUs" in reply for space in (" ", "\u00a0"))  # --num_processes 4
    assert "Read as command line" in reply and heard, reply
    await h.feed(message("vllm serve meta-llama/Llama-3.1-8B --max-model-len 8192", user_id=3005))
    reply = texts(api, 3005)[-1]
    assert "Framework: vLLM" in reply
    await h.feed(message(AXOLOTL, user_id=3005))
    assert "Read as Axolotl YAML" in texts(api, 3005)[-1]
    # pasted configs are throttled like questions (five at once): the rest from another user
    await h.feed(message(BOMB.decode(), user_id=3015))
    assert "anchors and aliases" in texts(api, 3015)[-1]  # a pasted bomb is refused as a file is
    await h.feed(message("70B QLoRA on H100?", user_id=3015))  # a question stays a question
    assert "Read as" not in texts(api, 3015)[-1]
    command = "vllm serve meta-llama/Llama-3.1-8B --max-model-len 8192"
    await h.feed(message(command, user_id=3005, chat_id=-100555, kind="supergroup"))  # not for the bot
    assert texts(api, -100555) == []
    bot_msg = {"message_id": 1, "date": 0, "chat": {"id": -100555, "type": "supergroup"},
               "from": {"id": BOT_ID, "is_bot": True, "first_name": "GPU Advisor"}, "text": "…"}
    await h.feed(message(command, user_id=3005, chat_id=-100555, kind="supergroup", reply_to=bot_msg))
    assert "Framework: vLLM" in texts(api, -100555)[-1]


async def test_model_config_json_stays_an_architecture_and_training_json_is_checked(h: Harness,
                                                                                    api: FakeBotAPI) -> None:
    args = json.dumps({"model_name_or_path": "Qwen/Qwen2.5-7B", "per_device_train_batch_size": 4,
                       "fsdp": "full_shard auto_wrap offload", "gradient_checkpointing": True}).encode()
    api.add_file("ta", args, path="documents/config.json")
    await h.feed(message(None, user_id=3006, document=document("ta", "config.json", len(args), "application/json")))
    assert "Read as TrainingArguments" in texts(api, 3006)[-1]
    junk = b'{"hello": "world"}'
    api.add_file("junk", junk, path="documents/other.json")
    await h.feed(message(None, user_id=3006, document=document("junk", "other.json", len(junk))))
    assert texts(api, 3006)[-1].startswith("I do not recognise that framework")


@pytest.mark.parametrize(("content", "name", "expected"), [
    (b"a: 1\n" * 70_000, "big.yaml", "over 256 KB"),
    (bytes(range(256)) * 8, "model.yaml", "binary file"),
    (BOMB, "bomb.yaml", "anchors and aliases"),
    (b"title: my notes\nauthor: me\n", "notes.yaml", "I do not recognise that framework"),
])
async def test_unreadable_files_get_a_clear_answer(h: Harness, api: FakeBotAPI, content: bytes, name: str,
                                                   expected: str) -> None:
    api.add_file("bad", content, path=f"documents/{name}")
    await h.feed(message(None, user_id=3007, document=document("bad", name, len(content))))
    assert expected in texts(api, 3007)[-1]


async def test_a_file_over_the_limit_is_not_downloaded_and_russian_reads_native(h: Harness, api: FakeBotAPI) -> None:
    big = b"x" * (300 * 1024)
    api.add_file("big", big, path="documents/big.yaml")
    await h.feed(message(None, user_id=3008, language_code="ru", document=document("big", "big.yaml", len(big))))
    assert texts(api, 3008)[-1].startswith("Файл больше 256\u00a0КБ")
    assert api.of("getFile") == []
    api.add_file("big2", big, path="documents/big2.yaml")  # the message did not say its size: cut after download
    await h.feed(message(None, user_id=3008, language_code="ru",
                         document={"file_id": "big2", "file_unique_id": "ub2", "file_name": "big2.yaml"}))
    assert texts(api, 3008)[-1].startswith("Файл больше 256\u00a0КБ")


async def test_secrets_are_never_echoed_nor_logged(h: Harness, api: FakeBotAPI,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    secret_yaml = AXOLOTL + f"hf_token: {TOKEN}\nhub_model_id: {TOKEN}\n"
    api.add_file("sec", secret_yaml.encode(), path="documents/axolotl.yaml")
    await h.feed(message(None, user_id=3009, document=document("sec", "axolotl.yaml", len(secret_yaml.encode()))))
    await h.feed(message(f"HF_TOKEN={TOKEN} vllm serve meta-llama/Llama-3.1-8B --api-key {TOKEN}", user_id=3009))
    await h.feed(message(f"trl sft --model_name_or_path Qwen/Qwen2.5-0.5B --hub_token {TOKEN}", user_id=3009))
    said = texts(api, 3009)
    assert len(said) == 3 and all("dropped unread" in s for s in said)
    answer = last_message(api, 3009)
    await h.feed(callback(button(answer, "⚙️ Config"), message_obj=answer, user_id=3009))
    assert documents(api, 3009)
    outgoing = [c for c in api.calls if c.method != "getUpdates"]
    sent = json.dumps([c.params for c in outgoing], ensure_ascii=False) + "".join(
        b.decode(errors="replace") for c in outgoing for b in c.files.values())
    assert TOKEN not in sent
    assert TOKEN not in caplog.text
    stored = [await h.store.get_request(d.split(":")[1]) for d in [button(answer, "⚙️ Config")]]
    assert stored and TOKEN not in json.dumps([s.model_dump(mode="json") for s in stored if s])


async def test_the_config_button_of_a_grpo_answer_carries_its_batch_and_vllm(h: Harness, api: FakeBotAPI) -> None:
    """The issue's GRPO config: batch 1 and no vLLM where the answer said batch 8 and vLLM colocated; in server mode
    the answer and the config are both in server mode."""
    for question, mode, uid in (("GRPO Qwen2.5-7B on 1 H100 with vLLM", "colocate", 3010),
                                ("grpo qwen2.5 32b на 8 h100, vllm в режиме сервера", "server", 3011)):
        answer = await ask(h, api, question, uid, lang="ru" if "на" in question else "en")
        label = "⚙️ Конфиг" if "на" in question else "⚙️ Config"
        await h.feed(callback(button(answer, label), message_obj=answer, user_id=uid))
        sent = {name: content.decode() for name, content, _caption in documents(api, uid)}
        script = sent["train.py"]
        assert "per_device_train_batch_size=8," in script and "use_vllm=True" in script, script
        assert f"vllm_mode={mode!r}" in script
        if mode == "server":
            assert "num_processes: 7" in sent["accelerate.yaml"]
