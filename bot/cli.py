"""The command line of CONTRACT.md: parse, estimate, plan, ask, run.

Every subcommand that takes TEXT reads one question per line from standard input when TEXT is
left out and writes exactly one line per input line, so that a thousand questions cost one
process start. Imports are lazy: `ask` must not pay for aiogram.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from typing import Any

MAX_LINE = 1_000_000  # characters of one stdin line we look at; beyond that it is refused


def _lines(stream: Any) -> Iterator[str]:
    for raw in stream:
        line = raw[:-1] if raw.endswith("\n") else raw
        yield line[:-1] if line.endswith("\r") else line


def _emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")


def _safe(handler: Callable[[str], dict[str, Any]], line: str) -> dict[str, Any]:
    """One answer per line whatever happens: an unexpected error becomes an error object."""
    if len(line) > MAX_LINE:
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
    from engine.contract import estimate_request

    if not line.strip():
        return {"error": "empty request"}
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        return {"error": f"invalid JSON: {exc.msg}"}
    return estimate_request(data)


def _plan_text(text: str) -> dict[str, Any]:
    from engine.answer import answer
    from engine.contract import plan_json
    from engine.parse import parse

    return plan_json(answer(parse(text)))


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
    from bot.answers import AnswerOptions, ask_text

    options = AnswerOptions(lang=args.lang, currency=args.currency, tier=args.tier, prices=dict(args.price),
                            rank_by=args.rank_by, usd_rub=args.usd_rub)

    def one(text: str) -> str:
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


def _run_bot(_: argparse.Namespace) -> int:
    from bot.config import ConfigError, load_config

    try:  # before aiogram is imported, so that a missing token is reported at once
        config = load_config()
    except ConfigError as exc:
        sys.stderr.write(f"gpu-advisor run: {exc}\n")
        return 1
    from bot.app import main as run_main

    return int(run_main(config))


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="gpu-advisor", description="What GPU do I need, and what will it cost?")
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
    sub.add_parser("run", help="start the Telegram bot")
    return ap


def main(argv: list[str] | None = None) -> int:
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(encoding="utf-8", newline="\n")
    if hasattr(sys.stdin, "reconfigure"):
        sys.stdin.reconfigure(encoding="utf-8", errors="replace")
    args = build_parser().parse_args(argv)
    if args.command == "parse":
        return _run_lines(_parse_one, args.text)
    if args.command == "estimate":
        return _run_lines(_estimate_json if args.request else _estimate_text, args.text)
    if args.command == "plan":
        return _run_lines(_plan_text, args.text)
    if args.command == "ask":
        return _ask(args)
    return _run_bot(args)
