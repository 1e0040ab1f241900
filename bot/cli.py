"""The command line of CONTRACT.md: parse, estimate, plan, ask, run.

Every subcommand that takes TEXT reads one question per line from standard input when TEXT is
left out and writes exactly one line per input line, so that a thousand questions cost one
process start. Imports are lazy: `ask` must not pay for aiogram.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator
from datetime import date
from typing import Any

MAX_LINE = 1_000_000  # characters of one stdin line we look at; beyond that it is refused


def _lines(stream: Any) -> Iterator[str | None]:
    """Lines without their end; None for one longer than MAX_LINE (never held whole in memory)."""
    from bot.cli_input import read_lines

    return read_lines(stream, MAX_LINE)


def _emit(obj: dict[str, Any]) -> None:
    from bot.cli_input import dumps_line

    sys.stdout.write(dumps_line(obj) + "\n")


def _safe(handler: Callable[[str], dict[str, Any]], line: str | None) -> dict[str, Any]:
    """One answer per line whatever happens: an unexpected error becomes an error object."""
    if line is None or len(line) > MAX_LINE:
        return {"error": "input line too long"}
    try:
        return handler(line)
    except Exception as exc:
        return {"error": f"internal error: {type(exc).__name__}"}


def _parse_one(text: str) -> dict[str, Any]:
    from engine.contract import parse_json
    from engine.parse import parse

    return parse_json(parse(text))


def _estimate_text(text: str) -> dict[str, Any]:
    from engine.contract import NO_MODEL, estimate_request
    from engine.parse import parse

    request = parse(text)
    if request.model is None:
        return {"error": request.error or NO_MODEL}
    return estimate_request(request.model_dump(exclude={"language", "intent", "error"}))


def _estimate_json(line: str) -> dict[str, Any]:
    from bot.cli_input import JsonTooHostile, loads_limited
    from engine.contract import estimate_request

    if not line.strip():
        return {"error": "empty request"}
    try:
        data = loads_limited(line)
    except json.JSONDecodeError as exc:
        return {"error": f"invalid JSON: {exc.msg}"}
    except JsonTooHostile as exc:
        return {"error": f"invalid JSON: {exc}"}
    from bot.hub.cli import with_hub_config

    data, note = with_hub_config(data)
    out = estimate_request(data)
    if note is not None:
        out["model_source"] = note
    return out


def _plan_text(text: str) -> dict[str, Any]:
    from engine.answer import answer
    from engine.contract import plan_json
    from engine.parse import parse

    return plan_json(answer(parse(text), today=date.today()))  # the door's date: weekday deadlines


def _run_lines(handler: Callable[[str], dict[str, Any]], text: list[str] | None) -> int:
    if text:
        _emit(_safe(handler, " ".join(text)))
        return 0
    for line in _lines(sys.stdin):
        _emit(_safe(handler, line))
        sys.stdout.flush()
    return 0


def _price_flag(value: str) -> tuple[str, float]:
    """`--price "H100=2.5"`: the user's own price per GPU-hour (impossible values are reported in the answer)."""
    name, sep, number = value.rpartition("=")
    try:
        if not sep or not name.strip():
            raise ValueError
        return name.strip(), float(number.replace(",", "."))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected GPU=PRICE, got {value!r}") from None


def _ask(args: argparse.Namespace) -> int:
    from bot.pipeline import AnswerOptions, ask_text

    options = AnswerOptions(lang=args.lang, currency=args.currency, tier=args.tier, prices=dict(args.price),
                            rank_by=args.rank_by, usd_rub=args.usd_rub)

    def one(text: str | None) -> str:
        if text is None or len(text) > MAX_LINE:
            return "Input line too long."
        try:
            return ask_text(text, options, fmt=args.format)
        except Exception as exc:
            return f"Sorry, something went wrong ({type(exc).__name__})."

    if args.text:
        sys.stdout.write(one(" ".join(args.text)) + "\n")
        return 0
    for line in _lines(sys.stdin):  # one JSON object a line (CONTRACT.md): the reply under "answer"
        _emit({"answer": one(line)})
        sys.stdout.flush()
    return 0


def _config_one(text: str, framework: str | None) -> dict[str, Any]:
    """`config`: the best plan for the question as the framework's own files (CONTRACT.md v2)."""
    from engine.configs import config_for
    from engine.parse import parse
    from engine.scenario import ScenarioError

    if not text.strip():
        return {"error": "empty question"}
    request = parse(text)
    if request.model is None:
        return {"error": request.error or "no model size in the question"}
    try:
        out = config_for(request, framework)  # type: ignore[arg-type]
    except (ScenarioError, ValueError) as exc:
        return {"error": str(exc)}
    return out.model_dump(mode="json")


def _config(args: argparse.Namespace) -> int:
    def one(line: str) -> dict[str, Any]:
        return _config_one(line, args.framework)

    if args.text and not args.json:
        answer = _safe(one, " ".join(args.text))
        if "error" in answer:
            sys.stdout.write(f"error: {answer['error']}\n")
            return 0
        for f in answer["files"]:
            sys.stdout.write(f"==> {f['name']} <==\n{f['text']}\n")
        sys.stdout.write(f"$ {answer['command']}\n")
        from bot.pipeline import question_language
        from bot.views.configs import note_text
        from bot.views.render import plain

        lang = question_language(" ".join(args.text)) or "en"
        for note in answer.get("notes", []):  # in words, as the bot's caption says them (JSON keeps the keys)
            sys.stdout.write(f"note: {plain(note_text(lang, note))}\n")
        return 0
    return _run_lines(one, args.text)


MAX_CONFIG_BYTES = 256 * 1024


def _read_source(path: str) -> bytes | str:
    """The bytes of FILE or of standard input (`-`), at most one byte past the limit (the reader refuses it)."""
    if path == "-":
        return sys.stdin.buffer.read(MAX_CONFIG_BYTES + 1) if hasattr(sys.stdin, "buffer") else sys.stdin.read()
    with open(path, "rb") as fh:
        return fh.read(MAX_CONFIG_BYTES + 1)


def _check_error(out: dict[str, Any]) -> str:
    """The reason `check` could not estimate, in words (the JSON keeps the key: CONTRACT.md)."""
    key = str(out["error"])
    if key.startswith("serving.error."):
        from bot.views.serving_words import error_line

        model = ((out.get("request") or {}).get("model") or {}).get("name") or ""
        return error_line("en", key, {"model": model})
    if " " in key:  # already a sentence ("cannot read …", "internal error: …")
        return key
    from bot.views.configs import error_text

    return error_text("en", key)


def _check_summary(out: dict[str, Any]) -> str:
    """A compact plain summary of `check` (the full text answer comes later through the views)."""
    if out.get("error") and not out.get("request"):
        return f"error: {_check_error(out)}"
    r = out["request"] or {}
    stack = f"engine: {r['serving_engine']}" if r.get("serving_engine") and not r.get("framework") else \
        f"framework: {r.get('framework') or '-'}"
    lines = [f"format: {out.get('format')}  {stack}",
             f"job: {(r.get('model') or {}).get('name') or '?'}, {r.get('method') or '?'}"
             + (f", {r['stage']}" if r.get("stage") else "")]
    est = out.get("estimate")
    if est:
        served = est.get("serving") or {}
        pool = f" (the engine's budget: KV pool {served['kv_pool_gib']:.1f} GiB)" if served.get("kv_pool_gib") else ""
        lines.append(f"peak per GPU: {est['per_gpu']['total']:.1f} GiB on {est.get('gpu_count', 1)} GPU(s){pool}")
        fits = [f for f in est.get("fits", []) if f.get("fits")]
        if est.get("verdict"):
            lines.append(f"verdict: {est['verdict']} as written")
        if est.get("fits"):
            # one unit in one output: the peak, the headroom and the savings are all GiB (2^30 bytes); each with its
            # count, so that "does not load on 8" and "fits on 16" never read as one verdict
            spare = " beyond the requests asked" if served else ""  # a serving headroom: the pool the load leaves
            lines.append("fits: " + (", ".join(f"{f.get('count', 1)}×{f['gpu']} ({f['headroom_gb']:+.1f} GiB{spare})"
                                               for f in fits[:5]) or "none"))
    if out.get("error"):
        lines.append(f"error: {_check_error(out)}")
    for c in out.get("changes", []):
        lines.append(f"change: {c['key']} (saves {c['saves_gb']:.1f} GiB{', fits' if c.get('fits') else ''})")
    if out.get("ignored"):
        lines.append("not understood: " + ", ".join(out["ignored"]))
    if out.get("no_effect"):
        lines.append("ignored, don't affect memory: " + ", ".join(out["no_effect"]))
    return "\n".join(lines)


def _check(args: argparse.Namespace) -> int:
    from engine.configs import check_files

    files: list[tuple[str, bytes | str]] = []
    out: dict[str, Any] | None = None
    for path in args.file:
        try:
            files.append(("" if path == "-" else path, _read_source(path)))
        except OSError as exc:
            out = {"request": None, "estimate": None, "changes": [], "ignored": [], "no_effect": [],
                   "error": f"cannot read {path}: {exc.strerror or type(exc).__name__}"}
            break
    if out is None and (args.gpu or args.model) and len(files) == 1:  # a log that does not name its GPU / model
        from engine.configs.logcheck import check_log
        from engine.configs.readers.logs import looks_like_log

        raw = files[0][1]
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        if looks_like_log(text):
            out = check_log(text, args.gpu, args.model)
    if out is None:
        try:
            out = check_files(files)
        except Exception as exc:  # one answer whatever happens
            out = {"request": None, "estimate": None, "changes": [], "ignored": [], "no_effect": [],
                   "error": f"internal error: {type(exc).__name__}"}
    if args.record and out.get("calibration"):
        with open(args.record, "a", encoding="utf-8") as fh:  # one calibration row per log, appended
            fh.write(json.dumps(out["calibration"], ensure_ascii=False) + "\n")
    if args.json:
        _emit(out)
    elif (out.get("format") or "").startswith("log:"):
        from bot.views.logcheck import log_summary

        sys.stdout.write(log_summary(out) + "\n")
    else:
        sys.stdout.write(_check_summary(out) + "\n")
    return 0


def _run_bot(_: argparse.Namespace) -> int:
    from bot.config import ConfigError, load_config

    try:  # before aiogram is imported, so that a missing token is reported at once
        config = load_config()
    except ConfigError as exc:
        sys.stderr.write(f"gpu-advisor run: {exc}\n")
        return 1
    from bot.app import main as run_main

    return int(run_main(config))


def _config_targets() -> tuple[str, ...]:
    from engine.configs.model import TARGETS

    return TARGETS


def version() -> str:
    """The installed distribution's version (a checkout that was never installed says so)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("gpu-advisor")
    except PackageNotFoundError:
        return "(not installed)"


class VersionAction(argparse.Action):
    """`--version`: the version looked up only when asked (importlib.metadata costs every start otherwise)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="show the version and exit", **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        sys.stdout.write(f"{parser.prog} {version()}\n")
        parser.exit()


def build_parser(config_choices: bool = True) -> argparse.ArgumentParser:
    """`config_choices=False` leaves `config --framework` unchecked: its list lives with the config models, whose
    import (and the schema under it) would cost every other command's start; _main asks for it only when the
    command line can be a `config` one."""
    ap = argparse.ArgumentParser(prog="gpu-advisor", description="What GPU do I need, and what will it cost?")
    ap.add_argument("--version", action=VersionAction)
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("parse", help="what the question says, as JSON")
    p.add_argument("--json", action="store_true", help="JSON output (the default and only format)")
    p.add_argument("text", nargs="*")
    e = sub.add_parser("estimate", help="peak GPU memory per component")
    e.add_argument("--json", action="store_true")
    e.add_argument("--request", action="store_true", help="stdin holds JSON requests, one per line")
    e.add_argument("text", nargs="*")
    pl = sub.add_parser("plan", help="ranked arrangements that fit, with hours and money")
    pl.add_argument("--json", action="store_true")
    pl.add_argument("text", nargs="*")
    a = sub.add_parser("ask", help="the complete answer, as the bot would send it")
    a.add_argument("--lang", choices=["ru", "en"], default=None)
    a.add_argument("--format", choices=["text", "html"], default="text")
    a.add_argument("--currency", choices=["USD", "RUB"], default="USD", help="money in dollars or roubles")
    a.add_argument("--tier", choices=["cheapest", "typical", "premium"], default="typical",
                   help="which price of the market range ranks the plans")
    a.add_argument("--price", type=_price_flag, action="append", default=[], metavar="GPU=PRICE",
                   help="your own price per GPU-hour in --currency (repeatable)")
    a.add_argument("--rank-by", choices=["cost", "time"], default=None, help="cheapest or fastest plans first")
    a.add_argument("--usd-rub", type=float, default=None, metavar="RATE", help="roubles per dollar")
    a.add_argument("text", nargs="*")
    cf = sub.add_parser("config", help="the best plan as a ready-to-run config of a framework")
    cf.add_argument("--json", action="store_true")
    cf.add_argument("--framework", choices=list(_config_targets()) if config_choices else None, default=None,
                    help="the framework to write for (default: the one the question names, else TRL or vLLM)")
    cf.add_argument("text", nargs="*")
    ck = sub.add_parser("check", help="estimate the job a config file or command line describes")
    ck.add_argument("--json", action="store_true")
    ck.add_argument("--gpu", default=None, help="the GPU a start-up log ran on, when the log does not say")
    ck.add_argument("--model", default=None, help="the model a start-up log served, when the log does not name it")
    ck.add_argument("--record", default=None, metavar="FILE",
                    help="append the figures a start-up log measured, with its settings, as a calibration row")
    ck.add_argument("file", metavar="FILE", nargs="+",
                    help="the config file, or - for standard input; several files of one job are read together")
    sub.add_parser("run", help="start the Telegram bot")
    w = sub.add_parser("web", help="serve the Telegram Mini App (the what-if calculator) alone, under /app/")
    w.add_argument("--host", default="127.0.0.1")
    w.add_argument("--port", type=int, default=8081)
    w.add_argument("--dev-token", default=None, help="a made-up bot token that signs test initData (development only)")
    return ap


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:
        # "gpu-advisor ask ... | head": the reader left; the rest is not wanted, and no traceback either
        # (Python docs, signal: "Note on SIGPIPE"). stdout is pointed at devnull so the flush at exit is quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # what a shell reports for a process ended by SIGPIPE (128 + 13)


def _main(argv: list[str] | None) -> int:
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(encoding="utf-8", newline="\n")
    if hasattr(sys.stdin, "reconfigure"):
        sys.stdin.reconfigure(encoding="utf-8", errors="replace")
    from bot.cli_input import bad_argument

    words = sys.argv[1:] if argv is None else argv
    bad = bad_argument(words)
    if bad is not None:
        sys.stderr.write(f"gpu-advisor: argument {bad} is not valid UTF-8\n")
        return 2
    args = build_parser(config_choices="config" in words).parse_args(argv)
    if args.command not in ("run", "web"):
        # A one-shot command builds its models once and exits: pydantic's plugin lookup (every installed
        # distribution's entry points, through importlib.metadata) would cost it more than some answers take.
        # gpu-advisor uses no pydantic plugin; a value the caller set is kept (PYDANTIC_DISABLE_PLUGINS= loads them).
        os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    if args.command == "parse":
        return _run_lines(_parse_one, args.text)
    if args.command == "estimate":
        return _run_lines(_estimate_json if args.request else _estimate_text, args.text)
    if args.command == "plan":
        return _run_lines(_plan_text, args.text)
    if args.command == "ask":
        return _ask(args)
    if args.command == "config":
        return _config(args)
    if args.command == "check":
        return _check(args)
    if args.command == "web":
        from web.serve import main as serve_web

        return serve_web(args.host, args.port, args.dev_token)
    return _run_bot(args)
