"""The plain-text reply to `check` of a start-up log: the settings read, then ours beside theirs per component."""

from __future__ import annotations

import html
from typing import Any

from bot.views.messages import t


def _num(v: Any) -> str:
    if isinstance(v, float) and v >= 1000:
        return f"{v:,.0f}"
    return f"{v:g}" if isinstance(v, (int, float)) else str(v)


def log_summary(out: dict[str, Any]) -> str:
    kind = out.get("format", "log:?").split(":", 1)[1]
    s = out.get("settings") or {}
    lines = [f"{kind} log" + (f", version {out['engine_version']}" if out.get("engine_version") else "")]
    shown = [f"{k}={_num(v)}" for k, v in s.items() if k not in ("enforce_eager",)]
    if shown:
        lines.append("settings: " + ", ".join(shown))
    rows = out.get("components") or []
    if rows:
        lines.append(f"{'component':<18}{'theirs':>12}{'ours':>12}{'diff':>8}  reason")
        for r in rows:
            diff = f"{r['diff_pct']:+.0f}%" if r.get("diff_pct") is not None else "-"
            lines.append(f"{r['component']:<18}{_num(r['theirs']):>12}{_num(r['ours']):>12}{diff:>8}  {r['reason']}")
    elif out.get("measured"):
        lines.append("measured: " + ", ".join(f"{k}={_num(v)}" for k, v in out["measured"].items()))
    for a in out.get("assumptions") or []:
        lines.append(f"assumed: {a}")
    if out.get("note"):
        lines.append(out["note"])
    if out.get("error"):
        lines.append(f"error: {out['error']}")
    return "\n".join(lines)


def log_reply_html(lang: str, out: dict[str, Any]) -> str:
    """The bot's reply: a translated heading, then the table as preformatted text (secrets and paths already gone)."""
    kind = out.get("format", "log:?").split(":", 1)[1]
    head = "🔎 <b>" + t(lang, "Start-up log of %(engine)s read back: our estimate beside the measured figures",
                        engine=html.escape(kind)) + "</b>"
    return head + "\n<pre>" + html.escape(log_summary(out)) + "</pre>"
