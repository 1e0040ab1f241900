"""The Mini App in a real headless Chromium (Debian's `chromium`, driven by Playwright's Python package): the
page with a signed test initData and a local stub of telegram-web-app.js; the context slider moves the total and
the verdict, serving switches the controls, light and dark themes, a 360 px phone; its figures are the CLI's."""

from __future__ import annotations

import asyncio
import json
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web
from playwright.sync_api import Page, expect, sync_playwright
from web_support import deps, init_data

from bot.cli import main as cli_main
from web.app import mount, webapp

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
STUB = Path(__file__).parents[1] / "data" / "telegram-web-app-stub.js"
SCREENSHOT = Path(__file__).parents[2] / "docs" / "img" / "miniapp.png"
DARK = {"bg_color": "#17212b", "text_color": "#f5f5f5", "hint_color": "#708499", "button_color": "#5288c1",
        "button_text_color": "#ffffff", "secondary_bg_color": "#232e3c"}
LIGHT = {"bg_color": "#ffffff", "text_color": "#000000", "hint_color": "#999999", "button_color": "#3390ec",
         "button_text_color": "#ffffff", "secondary_bg_color": "#f1f1f1"}


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    async def stub(_: web.Request) -> web.Response:
        return web.Response(text=STUB.read_text("utf-8"), content_type="application/javascript")

    app = web.Application()
    app.router.add_get("/stub/telegram-web-app.js", stub)
    mount(app, webapp(deps(telegram_js="/stub/telegram-web-app.js")))
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(app, access_log=None)
    started: dict[str, int] = {}
    ready = threading.Event()

    def serve() -> None:  # the server's own loop in its own thread: Playwright's sync API holds this one
        asyncio.set_event_loop(loop)
        loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        loop.run_until_complete(site.start())
        started["port"] = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        ready.set()
        loop.run_forever()
        loop.run_until_complete(runner.cleanup())
        loop.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert ready.wait(30)
    yield f"http://127.0.0.1:{started['port']}/app/"
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail("chromium is not installed: apt-get install -y chromium")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def open_page(browser, base_url: str, lang: str = "en", scheme: str = "light", width: int = 360,
              user_id: int = 100) -> Page:
    context = browser.new_context(viewport={"width": width, "height": 1100}, device_scale_factor=1)
    page = context.new_page()
    user = {"id": user_id, "first_name": "Test", "language_code": lang}
    tg = {"initData": init_data(user_id=user_id, lang=lang), "user": user, "colorScheme": scheme,
          "themeParams": DARK if scheme == "dark" else LIGHT}
    page.add_init_script(f"window.__TG__ = {json.dumps(tg)};")
    page.goto(base_url)
    expect(page.locator("#verdict")).not_to_be_empty(timeout=20_000)
    return page


def settle(page: Page, before: str, selector: str = "#total") -> str:
    expect(page.locator(selector)).not_to_have_text(before, timeout=20_000)
    return page.locator(selector).inner_text()


def cli(args: list[str], capsys) -> str:
    cli_main(args)
    return capsys.readouterr().out


def test_context_moves_the_total_and_the_verdict_then_serving(browser, base_url, capsys):
    page = open_page(browser, base_url, user_id=101)
    total, verdict = page.locator("#total").inner_text(), page.locator("#verdict").inner_text()
    assert "Llama-3.1-8B" in page.locator("#summary").inner_text() and "8k" in page.locator("#summary").inner_text()
    asked = cli(["ask", "--lang", "en", "LoRA Llama 3.1 8B on RTX 4090, context 8k"], capsys)
    assert verdict in asked  # the chat's verdict line for the same question
    page.locator("#ctx").fill("1")  # 1024 tokens
    new_total = settle(page, total)
    assert float(new_total.split()[0].replace(",", "")) < float(total.split()[0].replace(",", ""))
    expect(page.locator("#verdict")).not_to_have_text(verdict)
    assert "1k" in page.locator("#ctx-value").inner_text()
    estimate = json.loads(cli(["estimate", "--json", "LoRA Llama 3.1 8B on RTX 4090, context 1024"], capsys))
    need = estimate["per_gpu"]["total"] + estimate["per_gpu"]["cuda_context"]
    assert new_total.startswith(f"{need:.1f}".rstrip("0").rstrip("."))
    assert page.locator("#plans li").count() > 0
    page.locator("#kind button[data-kind=serving]").click()
    expect(page.locator("#users")).to_be_visible()
    expect(page.locator("#ctx")).to_be_hidden()
    expect(page.locator("#summary")).to_contain_text("vLLM", timeout=20_000)
    assert page.locator("#segments div").count() >= 3


@pytest.mark.parametrize("lang", ["ru", "en"])
def test_the_figures_are_the_clis_in_both_languages(browser, base_url, capsys, lang):
    page = open_page(browser, base_url, lang=lang, user_id=110 + len(lang))
    asked = cli(["ask", "--lang", lang, "LoRA Llama 3.1 8B on RTX 4090, context 8k"], capsys)
    assert page.locator("#verdict").inner_text() in asked
    for chip in page.locator("#changes button").all_inner_texts():
        assert chip in asked
    assert page.locator("[data-t=context]").inner_text() == ("Контекст" if lang == "ru" else "Context")


def test_a_chip_applies_its_change(browser, base_url):
    page = open_page(browser, base_url, user_id=120)
    total = page.locator("#total").inner_text()
    chip = page.locator("#changes button", has_text="context").first
    chip.click()
    settle(page, total)
    assert page.locator("#ctx-value").inner_text() != "8k"


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_themes_and_a_phone_width(browser, base_url, scheme):
    page = open_page(browser, base_url, scheme=scheme, user_id=130 + len(scheme))
    assert page.evaluate("document.documentElement.getAttribute('data-theme')") == scheme
    bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert bg == ("rgb(23, 33, 43)" if scheme == "dark" else "rgb(255, 255, 255)")
    assert page.evaluate("document.documentElement.scrollWidth") <= 360  # nothing wider than the phone
    assert page.evaluate("Telegram.WebApp.MainButton.visible") is True
    if scheme == "dark":
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOT), full_page=True)
        assert SCREENSHOT.stat().st_size > 10_000


def test_copy_config_shows_the_framework_files(browser, base_url):
    page = open_page(browser, base_url, user_id=140)
    page.locator("#target").select_option("axolotl")
    page.locator("#copy-config").click()
    expect(page.locator("#config")).to_contain_text("axolotl", timeout=20_000)


def test_without_initdata_the_page_says_to_open_it_from_telegram(browser, base_url):
    context = browser.new_context(viewport={"width": 360, "height": 800})
    page = context.new_page()
    page.goto(base_url)
    expect(page.locator("#error")).to_contain_text("Telegram", timeout=20_000)
    assert page.locator("#verdict").inner_text() == ""
