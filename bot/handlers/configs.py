"""Every file and pasted config that comes in, and the configs that go out, in Telegram.

In: one handler owns every uploaded file (`document`): a model's config.json is an architecture, answered as the
question its caption asks; a YAML/JSON/.py/.sh training or serving config is checked (what it describes, the answer
for it with its keyboard, the keys not understood); a start-up log is read back. A pasted launch command, YAML
config or log is checked the same way (`pasted`); a pasted model config.json is a question (the pipeline's
enrich step). Out: the "⚙️ Config" button under an answer sends the config of the answer's best plan as documents
(file names per framework), with a row to pick another framework.

Nothing a user sent is logged: only error keys and exception class names.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from aiogram import Bot, F, Router
from aiogram.exceptions import TelegramAPIError
from aiogram.types import BufferedInputFile, CallbackQuery, Message

from bot.config import BotConfig
from bot.downloads import FileTooBig, download_capped
from bot.enrich import config_from_text, request_from_config
from bot.handlers.common import (
    answer_question,
    button_request,
    chat_language,
    is_private,
    is_question_id,
    not_sent,
    send,
)
from bot.handlers.filters import InLoop
from bot.hub.ids import MAX_PASTE
from bot.pasted import checked, checked_request, pasted_config
from bot.pipeline import (
    MAX_QUESTION_CHARS,
    answer_options,
    apply_serving_state,
    apply_state,
    make_reply,
    resolve_language,
)
from bot.storage import ChatSettings, Storage
from bot.views.configs import check_header, config_caption, config_failed, error_text
from bot.views.keyboards import (
    CODE_FORMATS,
    CODE_METHODS,
    CODE_TARGETS,
    ConfigCb,
    ServingConfigCb,
    frameworks_keyboard,
    pack_config,
    pack_serving_config,
)
from bot.views.logcheck import log_reply_html
from bot.views.messages import t
from engine.configs import ReadResult, Target, config_for, read_config
from engine.configs.bridge import as_answered, default_target, is_serving
from engine.configs.common import made_for
from engine.configs.readers.logs import looks_like_log
from engine.parse import parse
from engine.scenario import ScenarioError
from engine.schema import MAX_BATCH, MAX_GPUS, MAX_SEQ_LEN, Language, Request

log = logging.getLogger(__name__)

MAX_CONFIG_BYTES = MAX_PASTE  # one limit for uploaded and pasted configs (256 KB); media's config.json uses it too
CONFIG_SUFFIXES = (".yaml", ".yml", ".py", ".sh", ".txt", ".cfg", ".toml", ".log")
CONFIG_MIME = ("application/x-yaml", "application/yaml", "text/yaml", "text/x-yaml", "text/x-python",
               "application/x-python-code", "text/x-sh", "application/x-sh", "text/plain")
TELEGRAM_LIMIT = 4096


# ---- what comes in --------------------------------------------------------------------------------------------


async def _is_config_file(message: Message) -> bool:  # a coroutine: aiogram runs plain functions in a thread
    doc = message.document
    if doc is None:
        return False
    name = (doc.file_name or "").lower()
    return name.endswith((*CONFIG_SUFFIXES, ".json")) or (doc.mime_type or "") in (*CONFIG_MIME, "application/json")


def is_addressed(message: Message, bot: Bot) -> bool:
    """A file or a pasted config in a private chat, or in a group as a reply to the bot."""
    if is_private(message.chat):
        return True
    reply = message.reply_to_message
    return reply is not None and reply.from_user is not None and reply.from_user.id == bot.id


async def _pasted(message: Message, bot: Bot) -> dict[str, Any] | bool:
    """A pasted config in a private chat, or in a group as a reply to the bot."""
    if not message.text or not is_addressed(message, bot):
        return False
    if looks_like_log(message.text):  # a serving engine's start-up log, nvidia-smi, torch memory printout
        return {"pasted": message.text}
    read = pasted_config(message.text)
    return {"pasted": read} if read is not None else False


async def pasted(message: Message, pasted: ReadResult | str, settings: ChatSettings, store: Storage,
                 config: BotConfig) -> None:
    if isinstance(pasted, str):
        await answer_log(message, pasted, settings=settings, config=config)
        return
    await answer_check(message, pasted, None, settings=settings, store=store, config=config)


async def answer_log(message: Message, text: str, *, settings: ChatSettings, config: BotConfig) -> None:
    """A start-up log read back: the settings it shows, ours beside theirs per component (engine.configs.check)."""
    from engine.configs.logcheck import check_log

    lang = chat_language(settings, message.from_user, config)
    gpu = parse(message.caption[:MAX_QUESTION_CHARS]).gpus if message.caption else []
    out = await asyncio.to_thread(check_log, text, gpu[0].name if gpu else None)
    if out is None:
        await send(message, error_text(lang, "unknown_format"))
        return
    await send(message, log_reply_html(lang, out)[:TELEGRAM_LIMIT])


async def document(message: Message, lang: Language, settings: ChatSettings, store: Storage, config: BotConfig,
                   bot: Bot, hub_cache: Any = None) -> None:
    """Every uploaded file: a model's config.json (an architecture) is the question its caption asks; any other
    config, or a start-up log, is checked."""
    doc = message.document
    assert doc is not None
    if not is_addressed(message, bot):
        return
    data = await download_document(message, bot, lang)
    if data is None:
        return
    name = (doc.file_name or "").lower()
    architecture = not (name.endswith(CONFIG_SUFFIXES) or (doc.mime_type or "") in CONFIG_MIME)  # a .json
    cfg = config_from_text(data.decode("utf-8", errors="replace")) if architecture else None
    if cfg is None:  # a training, serving or DeepSpeed config (a config.json too), or a log: checked as one
        await check_file(message, data, doc.file_name, settings=settings, store=store, config=config)
        return
    caption = message.caption or ""
    request = request_from_config(cfg, caption, doc.file_name or "config.json")
    await answer_question(message, caption, settings=settings, store=store, config=config, bot=bot,
                          hub_cache=hub_cache, request=request)


async def download_document(message: Message, bot: Bot, lang: str) -> bytes | None:
    """The document's bytes, streamed and cut past the one limit for configs; None once the user was told why
    not (over the limit, or the download failed)."""
    doc = message.document
    assert doc is not None
    try:
        if doc.file_size is not None and doc.file_size > MAX_CONFIG_BYTES:
            raise FileTooBig(doc.file_size)
        return await download_capped(bot, doc.file_id, MAX_CONFIG_BYTES)
    except FileTooBig:
        await send(message, error_text(lang, "too_large"))
    except (TelegramAPIError, OSError, TimeoutError) as exc:
        log.info("config download failed: %s", type(exc).__name__)
        await send(message, error_text(lang, "download"))
    return None


async def check_file(message: Message, data: bytes, filename: str | None, *, settings: ChatSettings,
                     store: Storage, config: BotConfig) -> None:
    """Check a downloaded file (also a config.json that is not a model's architecture)."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    if looks_like_log(text):
        await answer_log(message, text, settings=settings, config=config)
        return
    read = await asyncio.to_thread(read_config, data, filename)
    if read.request is not None and message.caption:
        read = read.model_copy(update={"request": with_caption_gpu(read.request, message.caption)})
    await answer_check(message, read, filename, settings=settings, store=store, config=config)


def with_caption_gpu(request: Request, caption: str) -> Request:
    """A config rarely names its GPU: the one a caption names ("on 2×RTX 4090") is what the check fits against
    (the config's own GPU count wins when it says one)."""
    said = parse(caption[:MAX_QUESTION_CHARS]).gpus
    if not said or (request.gpus and any(g.name or g.memory_gb for g in request.gpus)):
        return request
    count = request.gpus[0].count if request.gpus and request.gpus[0].count > 1 else said[0].count
    gpus = [g.model_copy(update={"count": count}) for g in said[:1]]
    return request.model_copy(update={"gpus": gpus})


async def answer_check(message: Message, read: ReadResult, filename: str | None, *, settings: ChatSettings,
                       store: Storage, config: BotConfig) -> None:
    user = message.from_user
    read = checked(read)
    sized = checked_request(read)  # the size from the model id, as `gpu-advisor check` reads it
    if sized is None:
        lang = chat_language(settings, user, config)
        log.info("config not read: %s", read.error or "unknown_format")
        await send(message, error_text(lang, read.error or "unknown_format"))
        return
    request = sized
    lang = resolve_language(None, settings.language, user.language_code if user else None, config.default_language)
    request = request.model_copy(update={"language": lang})
    reply = await make_reply(request, store, answer_options(settings, lang, config.default_language))
    header = check_header(reply.lang, read.format, request.model_dump(mode="json", exclude_none=True), read.ignored,
                          read.secrets, filename, read.no_effect)
    if len(header) + len(reply.html) + 2 <= TELEGRAM_LIMIT:
        await send(message, header + "\n\n" + reply.html, reply_markup=reply.markup)
        return
    await send(message, header[:TELEGRAM_LIMIT])
    await send(message, reply.html, reply_markup=reply.markup)


# ---- what goes out --------------------------------------------------------------------------------------------


def valid(cb: ConfigCb) -> bool:
    return (is_question_id(cb.q) and cb.m in CODE_METHODS
            and 1 <= cb.c <= MAX_SEQ_LEN and 1 <= cb.n <= MAX_GPUS and cb.lg in ("ru", "en")
            and (cb.f == "" or cb.f in CODE_TARGETS))


def valid_serving(cb: ServingConfigCb) -> bool:
    return (is_question_id(cb.q) and (cb.f in CODE_FORMATS or cb.f == "-")
            and 0 <= cb.u <= MAX_BATCH and 1 <= cb.c <= MAX_SEQ_LEN and cb.lg in ("ru", "en")
            and (cb.t == "" or cb.t in CODE_TARGETS))


async def config_button(query: CallbackQuery, callback_data: ConfigCb, lang: Language, store: Storage,
                        bot: Bot) -> None:
    """The config of a training answer in the state its keyboard shows."""
    cb = callback_data
    if not valid(cb):
        await query.answer(t(lang, "This button no longer works."))
        return

    def pack(code: str) -> str:
        return pack_config(cb.q, cb.m, cb.c, cb.n, cb.lg, code)

    await send_config(query, bot, store, cb.q, lambda r: apply_state(r, cb.m, cb.c, cb.n), cb.f, cb.lg, pack, lang)


async def serving_config_button(query: CallbackQuery, callback_data: ServingConfigCb, lang: Language,
                                store: Storage, bot: Bot) -> None:
    """The config of a serving answer in the state its keyboard shows (weight format, users, context)."""
    cb = callback_data
    if not valid_serving(cb):
        await query.answer(t(lang, "This button no longer works."))
        return

    def pack(code: str) -> str:
        return pack_serving_config(cb.q, cb.f, cb.u, cb.c, cb.lg, code)

    await send_config(query, bot, store, cb.q, lambda r: apply_serving_state(r, cb.f, cb.u, cb.c), cb.t, cb.lg,
                      pack, lang)


async def send_config(query: CallbackQuery, bot: Bot, store: Storage, qid: str, state: Callable[[Request], Request],
                      code: str, answer_lang: str, pack: Callable[[str], str], lang: str) -> None:
    """Send the config of the answer's best plan (in the state the keyboard shows) for the framework asked."""
    request = await button_request(query, store, qid, state, lang)
    if request is None:
        return
    lang = answer_lang
    if code not in CODE_TARGETS:  # the default framework: the one the answer's fix runs on, if it names one
        request = await asyncio.to_thread(as_answered, request)
    target: Target = CODE_TARGETS.get(code) or default_target(request)  # type: ignore[assignment]
    try:
        out = await asyncio.to_thread(config_for, request, target)
    except ValueError as exc:
        reason = "framework_mismatch" if str(exc).startswith("framework_mismatch") else "failed"
        await query.answer(config_failed(lang, reason), show_alert=True)
        return
    except ScenarioError as exc:
        log.info("config not written: %s", type(exc).__name__)
        await query.answer(config_failed(lang, "failed"), show_alert=True)
        return
    message = query.message
    chat_id = message.chat.id if message is not None else query.from_user.id
    gpu = next((found for f in out.files if (found := made_for(f.text))), None)  # JSON has no comments: the script
    caption = config_caption(lang, target, gpu, out.estimate_gib, out.command, out.notes)
    markup = frameworks_keyboard(pack, is_serving(request), target)
    try:
        for i, file in enumerate(out.files):
            document = BufferedInputFile(file.text.encode(), filename=file.name)
            if i == 0:
                await bot.send_document(chat_id, document, caption=caption, reply_markup=markup)
            else:
                await bot.send_document(chat_id, document)
    except TelegramAPIError as exc:
        log.info("config not sent: %s", type(exc).__name__)
        await not_sent(query, t(lang, "I could not send the config: try again in a minute, please."),
                       t(lang, "Open a chat with me to get the config."))
        return
    await query.answer()


def make_router() -> Router:
    router = Router(name="configs")
    router.callback_query.register(config_button, ConfigCb.filter())
    router.callback_query.register(serving_config_button, ServingConfigCb.filter())
    router.message.register(document, InLoop(F.document), _is_config_file)
    router.message.register(pasted, InLoop(F.text), _pasted)
    return router
