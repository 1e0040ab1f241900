"""The Mini App's answer: the CLI's own JSON views of the engine's Answer (`estimate --json`, `plan --json`) and
the chat's rendering of it (`ask`), plus what the page draws: the stacked bar, the verdict line, the plans and the
changes as request patches. One pipeline: bot.pipeline.render_request, engine.contract.estimate_request/plan_json."""

from __future__ import annotations

from typing import Any

from bot.pipeline import AnswerOptions, render_request, smalltalk_reply
from bot.views.render import RenderedAnswer, plain
from bot.views.words import COMPONENTS, component_label
from engine.contract import estimate_request, plan_json
from engine.parts import parts as breakdown_lines
from engine.schema import Answer, Change, Language, MarketAnswer, ModelsAnswer, PlannedAnswer, Request, ServingAnswer

CONTRACT_EXCLUDE = {"language", "intent", "error"}  # what `gpu-advisor estimate` leaves out of a parsed question


def contract_data(request: Request) -> dict[str, Any]:
    """The request as `estimate --request` reads it (the CLI's text path hands over the same dump)."""
    return request.model_dump(exclude=CONTRACT_EXCLUDE)


def change_patch(c: Change, count: int) -> dict[str, Any] | None:
    """The request fields a training change sets (None for one the page cannot apply)."""
    p = c.params
    match c.key:
        case "gradient_checkpointing":
            return {"gradient_checkpointing": True}
        case "optimizer_8bit":
            return {"optimizer": "adamw_8bit"}
        case "fused_loss":
            return {"fused_loss": True}
        case "cpu_offload":
            return {"offload": True}
        case "method":
            return {"method": p.get("to"), "bits": None, "optimizer": None}
        case "bits":
            return {"bits": p.get("to")}
        case "shorter_context":
            return {"seq_len": p.get("to")}
        case "smaller_batch":
            return {"batch_size": p.get("to")}
        case "more_gpus":
            return {"gpu_count": p.get("count", count), "sharding": p.get("sharding")}
        case "combined":
            out: dict[str, Any] = {}
            for part in c.parts:
                patch = change_patch(part, count)
                if patch is None:
                    return None
                out.update(patch)
            return out
    return None


SERVING_PATCHES = {
    "serving.change.fp8_weights": lambda p: {"quantization": "fp8"},
    "serving.change.fp8_kv_cache": lambda p: {"kv_cache_dtype": "fp8"},
    "serving.change.fewer_users": lambda p: {"concurrency": p.get("to")},
    "serving.change.arrangement": lambda p: {"gpu": p.get("gpu"), "gpu_count": p.get("count")},
    "serving.change.combined": lambda p: {"quantization": p.get("weight_format"),
                                          "kv_cache_dtype": p.get("kv_cache_dtype")},
}


def serving_patch(c: Change) -> dict[str, Any] | None:
    make = SERVING_PATCHES.get(c.key)
    return make(c.params) if make is not None else None


def bar(lang: str, a: Answer) -> dict[str, Any]:
    """The per-GPU memory as segments against the card: the chat's own table rows (training) or serving table."""
    r = a.serving if isinstance(a, ServingAnswer) else None
    if r is not None and r.memory is not None and r.gpu is not None:
        from bot.views.catalogs import _

        m = r.memory
        parts = [("weights", _(lang, "weights"), m.weights_gib),
                 ("activations", _(lang, "activation peak"), m.activation_peak_gib),
                 ("overhead", _(lang, "non-torch + CUDA graphs"), m.non_torch_gib + m.cuda_graph_gib),
                 ("kv_cache", _(lang, "KV pool"), max(0.0, m.kv_pool_gib))]
        total = sum(p[2] for p in parts)
        return {"segments": [{"key": k, "label": label, "gib": round(v, 2)} for k, label, v in parts if v >= 0.05],
                "total": round(total, 2), "capacity": round(r.gpu.total_gib, 2), "gpu": r.gpu.name}
    if not isinstance(a, PlannedAnswer):
        return {"segments": [], "total": 0.0, "capacity": 0.0, "gpu": None}
    b = a.breakdown
    values = breakdown_lines(b)  # the lines as the table shows them (engine.parts); the bar draws the positive ones
    return {"segments": [{"key": k, "label": component_label(lang, k), "gib": round(values[k], 2)}
                         for k in COMPONENTS if values.get(k, 0.0) >= 0.05],
            "total": round(a.need_gb, 2), "capacity": round(a.capacity_gib, 2),
            "gpu": a.asked.gpu if a.asked else None}


def view(rendered: RenderedAnswer) -> dict[str, Any]:
    """What the page shows in the user's language, worded by the chat's own views."""
    lang, a = rendered.lang, rendered.answer
    out: dict[str, Any] = {"headline": rendered.title, "line": rendered.description, "text": plain(rendered.html),
                           "verdict": a.verdict, "bar": bar(lang, a), "serving": isinstance(a, ServingAnswer)}
    if isinstance(a, ServingAnswer):
        from bot.views.serving_view import serving_view

        model = serving_view(lang, a).model
        out["summary"] = model["summary"]
        out["figures"] = [x for x in (model["speed"], model["price"], model["kv"]) if x]
        out["changes"] = [{"label": label, "patch": serving_patch(c)}
                          for label, c in zip(model["changes"], a.serving.changes, strict=False)]
        out["plans"] = []
        return out
    from bot.views.view import view_model

    assert isinstance(a, PlannedAnswer), a.kind  # an error or a price is answered before (answer_payload)
    model = view_model(lang, a).model
    count = a.scenario.gpu_count
    out["summary"] = model["summary"]
    out["figures"] = [x for x in (model["lead"], model["per_card"]) if x]
    out["plans"] = model["plans"] + model["alternatives"]
    out["changes"] = [{"label": label, "patch": change_patch(c, count)}
                      for label, c in zip(model["changes"], a.changes, strict=False)]
    return out


def answer_payload(request: Request, lang: Language) -> dict[str, Any]:
    """The whole answer to one request in `lang`: as `ask --lang` words it and as `estimate`/`plan --json` give it."""
    options = AnswerOptions(lang=lang)
    talk = smalltalk_reply(request, options)
    rendered = render_request(request, options)
    out: dict[str, Any] = {"lang": rendered.lang, "request": request.model_dump(mode="json", exclude_none=True)}
    if talk is not None or not rendered.understood or isinstance(rendered.answer, (MarketAnswer, ModelsAnswer)):
        out["error"] = plain(talk or rendered.html)
        return out
    out["estimate"] = estimate_request(contract_data(request))
    out["plan"] = plan_json(rendered.answer)
    out["view"] = view(rendered)
    return out
