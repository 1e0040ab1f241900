"""The load benchmark's profile of the replica: cProfile switched on by a signal, and where the time goes."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

# (label, path suffix, function): cumulative time of these functions; nested, so the rows overlap
PROFILE_ROWS: tuple[tuple[str, str, str], ...] = (
    ("webhook request, aiohttp task (JSON, Update, the 200)", "aiogram/webhook/aiohttp_server.py", "handle"),
    ("  request.json()", "aiohttp/web_request.py", "json"),
    ("  Update validation (pydantic)", "aiogram/dispatcher/dispatcher.py", "feed_webhook_update"),
    ("dispatch task: feed_update (middlewares, filters, handler)", "aiogram/dispatcher/dispatcher.py", "feed_update"),
    ("    answer_question (our handler)", "bot/handlers/common.py", "answer_question"),
    ("      storage.get_settings (loop side)", "bot/storage/sqlite.py", "get_settings"),
    ("      question_language", "bot/pipeline.py", "question_language"),
    ("      engine read_question (one parse, with the follow-up reading)", "engine/parse/__init__.py", "read_question"),
    ("      engine parse", "engine/parse/__init__.py", "parse"),
    ("      make_reply", "bot/pipeline.py", "make_reply"),
    ("        render_request", "bot/pipeline.py", "render_request"),
    ("          engine.answer", "engine/answer.py", "answer"),
    ("          view_model", "bot/views/view.py", "view_model"),
    ("          jinja Template.render (x2: error page too)", "jinja2/environment.py", "render"),
    ("        storage.put_request (loop side)", "bot/storage/sqlite.py", "put_request"),
    ("          question_id (model_dump_json + blake2b)", "bot/storage/base.py", "question_id"),
    ("        answer_keyboard", "bot/views/keyboards.py", "answer_keyboard"),
    ("          CallbackData.pack", "aiogram/filters/callback_data.py", "pack"),
    ("      send → Bot API call (aiogram)", "aiogram/client/bot.py", "__call__"),
    ("        build_form_data (serialise)", "aiogram/client/session/aiohttp.py", "build_form_data"),
    ("        check_response (parse Message)", "aiogram/client/session/base.py", "check_response"),
    ("          Response[T] generic class rebuilt after GC", "pydantic/main.py", "__class_getitem__"),
    ("        aiohttp client post", "aiohttp/client.py", "_request"),
    ("webhook response writer (multipart)", "aiogram/webhook/aiohttp_server.py", "_build_response_writer"),
    ("logging (all records)", "logging/__init__.py", "callHandlers"),
    ("asyncio.to_thread (loop side)", "asyncio/threads.py", "to_thread"),
    ("aiohttp server: data_received (parse HTTP)", "aiohttp/web_protocol.py", "data_received"),
    ("event loop: epoll wait (idle)", "", "<method 'poll' of 'select.epoll' objects>"),
)


OWN_TIME_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("engine: plan, memory, speed, pricing", ("engine/plan", "engine/answer", "engine/memory", "engine/speed",
                                              "engine/pricing", "engine/fit", "engine/scenario", "engine/catalog")),
    ("engine: parse", ("engine/parse",)),
    ("engine: schema", ("engine/",)),
    ("bot/views (render, keyboards, messages)", ("bot/views",)),
    ("bot (handlers, middlewares, storage, answers)", ("bot/",)),
    ("jinja2, markupsafe", ("jinja2", "markupsafe")),
    ("babel, gettext", ("babel", "gettext")),
    ("aiogram", ("aiogram",)),
    ("magic_filter", ("magic_filter",)),
    ("pydantic (validation, models, serialisation)", ("pydantic", "SchemaValidator", "SchemaSerializer")),
    ("aiohttp, multidict, yarl", ("aiohttp", "multidict", "yarl")),
    ("asyncio, selectors (incl. epoll wait)", ("asyncio", "selectors", "epoll")),
    ("socket send/recv", ("_socket.socket",)),
    ("logging", ("logging",)),
    ("threads, sqlite3 (loop side)", ("threading", "concurrent/futures", "sqlite3", "queue.py")),
    ("json, urllib.parse (form encoding), re", ("json", "urllib", "re/", "re.py", "_sre", "Pattern")),
)


def print_profile(path: str, top: int, questions: int) -> None:
    import pstats

    if not Path(path).exists():
        print(f"no profile at {path} (the replica did not dump it)")
        return
    stats = pstats.Stats(path)
    raw: dict[tuple[str, int, str], tuple[int, int, float, float, Any]] = stats.stats  # type: ignore[attr-defined]
    total = float(stats.total_tt)  # type: ignore[attr-defined]
    n = max(1, questions)
    print(f"\nreplica profile {path}: measured phases only, {total:.2f} s profiled on the replica's main thread "
          f"for {questions} questions (cProfile slows the replica ~2x: read the shares, not the rates)")
    print(f"{'where (cumulative, nested rows overlap)':<58} {'cum s':>7} {'ms/question':>11} {'share':>6}")

    def row(label: str, cum: float) -> None:
        print(f"{label:<58} {cum:>7.2f} {cum / n * 1e3:>11.3f} {cum / total * 100:>5.1f}%")

    cums: dict[str, float] = {}
    for label, suffix, func in PROFILE_ROWS:
        cums[func] = sum(v[3] for (file, _line, name), v in raw.items() if name == func and file.endswith(suffix))
        row(label, cums[func])
    # own time by where the code lives: a partition of the whole profile (coroutine cumulatives above are rough)
    groups: dict[str, float] = {}
    for (file, _line, name), v in raw.items():
        label = next((lab for lab, parts in OWN_TIME_GROUPS if any(x in file or x in name for x in parts)), "other")
        groups[label] = groups.get(label, 0.0) + v[2]
    print(f"\n{'own time by package (a partition)':<58} {'own s':>7} {'ms/question':>11} {'share':>6}")
    for label, own in sorted(groups.items(), key=lambda kv: -kv[1]):
        row(label, own)
    print(f"\ntop {top} by own time:")
    stats.sort_stats("tottime").print_stats(top)
    print(f"top {top} by cumulative time:")
    stats.sort_stats("cumulative").print_stats(top)


def replica_profiled(path: str) -> int:
    """`gpu-advisor run` under cProfile, switched on by SIGUSR1 and dumped to `path` by SIGUSR2."""
    import cProfile

    prof = cProfile.Profile()

    def on(_signum: int, _frame: object) -> None:
        prof.enable()

    def off(_signum: int, _frame: object) -> None:
        prof.disable()
        prof.dump_stats(path)

    signal.signal(signal.SIGUSR1, on)
    signal.signal(signal.SIGUSR2, off)
    from bot.cli import main as cli_main

    return cli_main(["run"])
