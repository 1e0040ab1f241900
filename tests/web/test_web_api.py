"""The Mini App's routes: initData before any engine work, bodies capped, the chat's throttle, and the answer the
CLI gives for the same request."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from web_support import TOKEN, deps, init_data

import web.app as webapp_module
from bot.cli import main as cli_main
from bot.pipeline import AnswerOptions, render_request
from engine.parse import parse
from web.app import standalone

QUESTION = "LoRA Llama 3.1 8B on RTX 4090, context 8k"


@pytest.fixture
async def client():
    app = standalone(deps())
    async with TestClient(TestServer(app)) as c:
        yield c


async def post(c: TestClient, path: str, body: Any, data: str | None = None, raw: bytes | None = None) -> Any:
    headers = {"X-Telegram-Init-Data": data if data is not None else init_data()}
    resp = await c.post(path, data=raw if raw is not None else json.dumps(body), headers=headers)
    return resp.status, await resp.json()


def engine_calls(monkeypatch) -> list[Any]:
    calls: list[Any] = []
    real = webapp_module.computed  # every engine call of a route goes through it

    async def spy(request, user, fn, *args):
        calls.append(fn)
        return await real(request, user, fn, *args)

    monkeypatch.setattr(webapp_module, "computed", spy)
    return calls


async def test_page_and_static_files_are_served(client):
    page = await client.get("/app/")
    assert page.status == 200 and "telegram-web-app.js" in await page.text()
    assert (await client.get("/app/static/app.js")).status == 200
    assert (await client.get("/app/static/../initdata.py")).status == 404
    redirect = await client.get("/app", allow_redirects=False)
    assert redirect.status == 308 and redirect.headers["Location"] == "/app/"


async def test_catalog_lists_the_controls_choices(client):
    data = await (await client.get("/app/api/catalog")).json()
    assert any(m["name"] == "Llama-3.1-8B" for m in data["models"])
    assert any(g["name"] == "RTX 4090" for g in data["gpus"])
    assert "vllm" in data["engines"] and "lora" in data["methods"] and "trl" in data["frameworks"]


@pytest.mark.parametrize("data", ["", "auth_date=1&hash=00", init_data(token="654321:another-bots-token-abc"),
                                  init_data(age_s=2 * 86400)])
async def test_no_valid_initdata_is_401_before_the_engine(client, monkeypatch, data):
    calls = engine_calls(monkeypatch)
    for path in ("/app/api/answer", "/app/api/config", "/app/api/share", "/app/api/send"):
        status, body = await post(client, path, {"text": QUESTION}, data=data)
        assert status == 401 and body["error"]
    assert calls == []


async def test_big_and_malformed_bodies_get_clear_errors(client, monkeypatch):
    calls = engine_calls(monkeypatch)
    status, body = await post(client, "/app/api/answer", None, raw=b'{"text": "' + b"x" * (1024 * 1024) + b'"}')
    assert status == 413 and "KB" in body["error"]
    status, body = await post(client, "/app/api/answer", None, raw=b"{not json")
    assert status == 400 and "JSON" in body["error"]
    status, body = await post(client, "/app/api/answer", [1, 2])
    assert status == 400
    status, body = await post(client, "/app/api/answer", {"request": {"seq_len": -5}})
    assert status == 400 and "seq_len" in body["error"]
    assert calls == []


async def test_a_flood_from_one_user_is_throttled_without_hurting_another(client):
    statuses = [(await post(client, "/app/api/answer", {"text": "?"}, data=init_data(user_id=7)))[0]
                for _ in range(8)]
    assert statuses[:5] == [200] * 5 and 429 in statuses[5:]
    status, body = await post(client, "/app/api/answer", {"text": "?"}, data=init_data(user_id=7))
    assert status == 429 and body["retry_after"] > 0
    status, _ = await post(client, "/app/api/answer", {"text": QUESTION}, data=init_data(user_id=8))
    assert status == 200


@pytest.mark.parametrize("lang", ["ru", "en"])
async def test_the_answer_is_the_clis_for_the_same_request(client, lang, capsys):
    request = parse(QUESTION)
    status, body = await post(client, "/app/api/answer", {"request": request.model_dump(mode="json"), "lang": lang})
    assert status == 200
    cli_main(["estimate", "--json", QUESTION])
    assert body["estimate"] == json.loads(capsys.readouterr().out)
    cli_main(["plan", "--json", QUESTION])
    assert body["plan"] == json.loads(capsys.readouterr().out)
    cli_main(["ask", "--lang", lang, QUESTION])
    asked = capsys.readouterr().out
    assert body["view"]["headline"] in asked and body["view"]["text"].strip() == asked.strip()
    bar = body["view"]["bar"]
    per_gpu = body["estimate"]["per_gpu"]
    assert bar["total"] == pytest.approx(per_gpu["total"] + per_gpu["cuda_context"], abs=0.01)
    weights = {s["key"]: s["gib"] for s in bar["segments"]}["weights"]
    assert weights == pytest.approx(per_gpu["weights"], abs=0.01) and bar["capacity"] > 0
    assert body["view"]["plans"] and body["view"]["changes"]


async def test_text_and_stored_question_paths_give_the_same_answer(client):
    _, by_text = await post(client, "/app/api/answer", {"text": QUESTION, "lang": "en"})
    _, shared = await post(client, "/app/api/share", {"request": parse(QUESTION).model_dump(mode="json")})
    _, by_qid = await post(client, "/app/api/answer", {"qid": shared["qid"], "lang": "en"})
    assert by_text["estimate"] == by_qid["estimate"] and by_text["view"]["headline"] == by_qid["view"]["headline"]
    status, body = await post(client, "/app/api/answer", {"qid": "nope"})
    assert status == 400 and "stored" in body["error"]


async def test_a_change_chip_patch_changes_the_answer(client):
    request = parse(QUESTION).model_dump(mode="json")
    _, before = await post(client, "/app/api/answer", {"request": request})
    chip = next(c for c in before["view"]["changes"] if c["patch"] and "seq_len" in c["patch"])
    _, after = await post(client, "/app/api/answer", {"request": {**request, **chip["patch"]}})
    assert after["request"]["seq_len"] == chip["patch"]["seq_len"]
    assert after["view"]["bar"]["total"] < before["view"]["bar"]["total"]


async def test_serving_answer_has_its_own_bar(client):
    request = parse("serve Llama 3.1 8B on L4 for 32 users with vLLM").model_dump(mode="json")
    status, body = await post(client, "/app/api/answer", {"request": request, "lang": "ru"})
    assert status == 200 and body["view"]["serving"] and body["estimate"]["serving"]["gpu"] == "L4"
    assert body["view"]["bar"]["capacity"] == body["estimate"]["serving"]["gpu_total_gib"]
    expected = render_request(parse("serve Llama 3.1 8B on L4 for 32 users with vLLM"), AnswerOptions(lang="ru"))
    assert body["view"]["headline"] == expected.title


async def test_config_route_is_the_config_writer(client):
    status, body = await post(client, "/app/api/config", {"request": parse(QUESTION).model_dump(mode="json"),
                                                          "framework": "axolotl"})
    assert status == 200 and body["files"] and "axolotl" in body["command"]
    status, body = await post(client, "/app/api/config", {"text": QUESTION, "framework": "rm -rf"})
    assert status == 400


async def test_send_needs_the_bot_and_a_query_id(client):
    status, body = await post(client, "/app/api/send", {"text": QUESTION})
    assert status == 501 and "webhook" in body["error"]
    sent: list[tuple[str, str, str]] = []

    async def send(qid: str, title: str, html: str) -> None:
        sent.append((qid, title, html))

    async with TestClient(TestServer(standalone(deps(send=send)))) as c:
        status, _ = await post(c, "/app/api/send", {"text": QUESTION, "lang": "ru"}, data=init_data(query_id="AAQ"))
        assert status == 200 and sent[0][0] == "AAQ" and "RTX 4090" in sent[0][2]


async def test_dev_init_data_only_with_a_dev_token():
    async with TestClient(TestServer(standalone(deps()))) as c:
        assert (await c.get("/app/api/dev-init-data")).status == 404
    async with TestClient(TestServer(standalone(deps(dev=True)))) as c:
        data = (await (await c.get("/app/api/dev-init-data?lang=ru")).json())["initData"]
        status, _ = await post(c, "/app/api/answer", {"text": QUESTION}, data=data)
        assert status == 200


def test_the_mount_on_the_webhook_server(monkeypatch):
    from aiogram import Bot

    from bot.app import build_dispatcher
    from bot.config import load_config
    from bot.storage import MemoryStorage
    from bot.webhook import webhook_app

    common = {"token": TOKEN.replace("TEST-", "TEST"), "mode": "webhook", "webhook_url": "https://x.test/hook",
              "webhook_secret": "s"}
    dp = build_dispatcher(load_config(**common), MemoryStorage())
    bot = Bot(common["token"])
    without = webhook_app(bot, dp, load_config(**common))
    assert not any(str(r.url_for()).startswith("/app") for r in without.router.resources() if hasattr(r, "url_for")
                   and not r.canonical.startswith("/{"))
    with_app = webhook_app(bot, dp, load_config(**common, webapp_url="https://x.test/app/"))
    assert any(r.canonical == "/app" for r in with_app.router.resources())
    assert isinstance(with_app, web.Application)
