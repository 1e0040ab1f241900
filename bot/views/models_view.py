"""The words of a "which model fits" answer (engine.answer.models_fit), in Telegram HTML."""

from __future__ import annotations

import html

from bot.views.catalogs import _
from bot.views.formats import gb, num
from bot.views.words import gpu_name
from engine.schema import ModelFit, ModelsAnswer

METHODS = {"lora": "LoRA", "qlora": "QLoRA"}


def models_lines(lang: str, a: ModelsAnswer) -> list[str]:
    """The headline, a line per row, and how to get the exact figure."""
    if a.gpu:
        where = f"{a.count}×{gpu_name(lang, a.gpu)}"
    elif a.count == 1:
        where = _(lang, "a %(gb)s card") % {"gb": gb(lang, a.memory_gb)}
    else:
        where = _(lang, "%(n)s cards of %(gb)s") % {"n": a.count, "gb": gb(lang, a.memory_gb)}
    serving = a.request.serving_engine
    head = _(lang, "The largest models that fit on %(where)s") % {"where": where}
    if serving:
        head += " (" + html.escape(serving) + ")"
    lines = ["🧩 " + head + ":"]
    lines += ["• " + _row(lang, r, serving) for r in a.rows]
    lines.append("<i>" + _(lang, "Sizes of typical architectures (Llama, Qwen) at the default settings; name the "
                             "model for its own figure, e.g. «Qwen2.5 14B on a 4090»") + "</i>")
    return lines


def _row(lang: str, r: ModelFit, serving: str | None) -> str:
    if r.method == "inference":
        label = {16: "bf16", 8: _(lang, "8-bit"), 4: _(lang, "4-bit")}[r.bits]
        if serving in ("llama.cpp", "ollama"):
            label = {16: "F16", 8: "Q8_0", 4: "Q4_K_M"}[r.bits]
    else:
        label = METHODS.get(r.method) or _(lang, "full fine-tuning")
    if r.params_b is None:
        return _(lang, "%(label)s: not even a 0.5B model fits") % {"label": label}
    size = num(lang, r.params_b) + "B"
    if r.method == "inference":
        text = _(lang, "%(label)s: up to %(size)s (weights %(gb)s on a GPU)") % {
            "label": label, "size": size, "gb": gb(lang, r.need_gb or 0.0)}
        if r.host_ram_gb:
            text += "; " + _(lang, "%(gb)s of layers in CPU RAM") % {"gb": gb(lang, r.host_ram_gb)}
        return text
    return _(lang, "%(label)s: up to %(size)s (peak %(gb)s on a GPU)") % {
        "label": label, "size": size, "gb": gb(lang, r.need_gb or 0.0)}
