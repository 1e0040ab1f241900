"""The JSON shapes of the command line (CONTRACT.md): `parse`, `estimate`, `plan`. Nothing else in the
engine knows them; the CLI reads the text and writes the lines."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from engine import posttrain
from engine.answer import answer, asked_kv_gib, asks_a_price, serving_breakdown
from engine.fit import NO_HEADROOM, capacity, fits, headroom_gb
from engine.parts import parts, posttrain_parts
from engine.plan.search import all_arrangements, asked_arrangements
from engine.scenario import ScenarioError
from engine.schema import (
    PARSE_FIELDS,
    Answer,
    Arrangement,
    Breakdown,
    Change,
    ErrorAnswer,
    Fit,
    MarketAnswer,
    ModelsAnswer,
    PlannedAnswer,
    PostTrainAnswer,
    Request,
    Scenario,
    ServingAnswer,
)
from engine.serving import serving_block

NO_MODEL = "no model size in the question"


def parse_json(request: Request) -> dict[str, Any]:
    """`parse`: what the question said."""
    return request.model_dump(include=set(PARSE_FIELDS), mode="json")


def scenario_json(s: Scenario) -> dict[str, Any]:
    return {
        "model": {"name": s.arch.name, "params_b": round(s.arch.params / 1e9, 4),
                  "active_params_b": round(s.arch.active_params / 1e9, 4) if s.arch.experts else None,
                  "known": s.arch.known},
        "method": s.method, "bits": s.bits, "optimizer": s.optimizer, "mixed_precision": s.mixed_precision,
        "lora_rank": s.lora_rank or None, "lora_targets": s.lora_targets or None, "seq_len": s.seq_len,
        "batch_size": s.batch_size, "gradient_checkpointing": s.gradient_checkpointing,
        "flash_attention": s.flash_attention, "fused_loss": s.fused_loss, "sharding": s.sharding,
        "offload": s.offload, "gpu_count": s.gpu_count,
    }


def estimate_json(request: Request) -> dict[str, Any]:
    """`estimate` for a validated request; raises ScenarioError when it cannot be made. Everything comes from the one
    Answer (engine.answer): `per_gpu` is the memory the verdict was judged on, and `fits[]` the same rule on it."""
    a = answer(request)
    if isinstance(a, ServingAnswer):
        return serving_estimate_json(a)
    if not isinstance(a, PlannedAnswer):  # an error, or a price question: no memory to estimate
        reason = a.errors[0].params.get("reason") if isinstance(a, ErrorAnswer) else None
        raise ScenarioError(str(reason or a.request.error or NO_MODEL))
    request, scenario, b = a.request, a.scenario, a.breakdown
    extra: dict[str, Any] = {}
    if posttrain.applies(request):  # post-training stages and long-context parallelism (engine/posttrain)
        _total, extra["posttrain"] = posttrain.estimate_block(request)
    count = max((g.count for g in request.gpus), default=1)
    candidates = asked_arrangements(request) if request.gpus else all_arrangements(count)
    out = {**extra,
        "request": scenario_json(scenario),
        "assumptions": [str(x) for x in scenario.assumptions],
        "per_gpu": per_gpu_json(b, posttrain_parts(a.posttrain) if isinstance(a, PostTrainAnswer) else parts(b)),
        "cpu_ram_gb": round(b.cpu_ram, 2),
        "trainable_params": round(b.trainable_params),
        "gpu_count": scenario.gpu_count,
        "fits": [fit_json(a, b, c) for c in candidates],
    }
    out["cluster_total_gib"] = round((b.total + b.cuda_context) * scenario.gpu_count, 3)  # CONTRACT.md v2
    out["verdict"] = None if a.verdict == "compare" else a.verdict  # the reply's own verdict; a comparison has none
    return out


def per_gpu_json(b: Breakdown, lines: dict[str, float]) -> dict[str, Any]:
    """The breakdown's lines as engine.parts shows them (they add up to `total`), with the flags beside."""
    return {**{k: round(v, 3) for k, v in lines.items() if k != "cuda_context"}, "total": round(b.total, 3),
            "cuda_context": round(b.cuda_context, 3), "upcast": round(b.upcast, 3), "pressure": int(b.pressure),
            "shape_margin": round(b.shape_margin, 3)}


def fit_json(a: PlannedAnswer, b: Breakdown, c: Arrangement) -> dict[str, Any]:
    """One arrangement judged by engine.fit's rule on the answer's breakdown; the GPUs asked as the verdict says
    (a GPU that cannot run the job as asked, QLoRA on Apple, does not fit whatever its memory)."""
    room = capacity(c.gpu, c.memory_gb)
    ok = fits(b, room, NO_HEADROOM)
    if a.asked is not None and c == a.asked and a.verdict not in (None, "compare"):
        ok = a.verdict in ("fits", "tight")
    return Fit(gpu=c.gpu, memory_gb=c.memory_gb, count=c.count, fits=ok, headroom_gb=headroom_gb(b, room)).model_dump()


def serving_estimate_json(a: ServingAnswer) -> dict[str, Any]:
    """A serving question's `estimate`: `per_gpu` is the serving engine's accounting of one GPU (weights, activation
    peak, KV pool, CUDA graphs; non-torch memory as `cuda_context`), `fits[]` the GPUs it runs on, judged as the
    verdict is (the asked users at the asked context in the KV pool)."""
    r = a.serving
    if r.memory is None or r.gpu is None:
        first = r.errors[0] if r.errors else None  # what the serving engine could say, beside the reason
        return {"error": first.key if first else NO_MODEL, "serving": serving_block(r), "verdict": a.verdict}
    m, g = r.memory, r.gpu
    kv_pool = max(0.0, m.kv_pool_gib)
    total = m.weights_gib + m.activation_peak_gib + kv_pool + m.cuda_graph_gib
    per_gpu = {"weights": m.weights_gib, "adapters": 0.0, "gradients": 0.0, "optimizer": 0.0,
               "activations": m.activation_peak_gib, "logits": 0.0, "kv_cache": kv_pool, "overhead": m.cuda_graph_gib,
               "freed_before_peak": 0.0, "total": total, "cuda_context": m.non_torch_gib}
    need = serving_breakdown(r)
    asked_ok = a.verdict in ("fits", "tight") if a.verdict is not None else r.fits
    headroom = g.total_gib - (need.total + need.cuda_context) if need is not None else 0.0
    if not r.fits and r.kv is not None:  # the asked users' KV beyond the pool is what is missing
        headroom = min(headroom, kv_pool - asked_kv_gib(r))
    # the GPUs named first when they miss the load's promise or capacity (the rest is the arrangement sized for it)
    named = [Fit(gpu=x.gpu.name, memory_gb=x.gpu.total_gib, count=x.gpu.count, fits=False,
                 headroom_gb=x.headroom_gib).model_dump() for x in (r.instead_of,) if x is not None]
    return {
        "request": {"model": {"name": r.model, "params_b": r.params_b, "known": r.model_known},
                    "method": "inference", "gpu_count": r.instead_of.gpu.count if r.instead_of else g.count},
        "assumptions": [str(x) for x in r.assumptions],
        "per_gpu": {k: round(v, 3) for k, v in per_gpu.items()},
        "cpu_ram_gb": round(m.host_ram_gib, 2),
        "trainable_params": 0,
        "gpu_count": g.count,
        # the GPUs it was sized on (the verdict's), then the arrangements that serve the asked users
        "fits": [*named,
                 Fit(gpu=g.name, memory_gb=g.total_gib, count=g.count, fits=asked_ok or bool(named),
                     headroom_gb=round(headroom, 2)).model_dump(),
                 *(Fit(gpu=x.gpu, memory_gb=x.total_gib, count=x.count, fits=True,
                       headroom_gb=x.headroom_gib).model_dump()
                   for x in (r.arrangement, *r.alternatives) if x is not None)],
        "cluster_total_gib": round((total + m.non_torch_gib) * g.count, 3),
        "serving": serving_block(r),
        "verdict": a.verdict,
    }


def estimate_request(data: object) -> dict[str, Any]:
    """`estimate --request` for one decoded JSON value: an answer, or {"error": reason}."""
    try:
        request = Request.model_validate(data)
    except ValidationError as exc:
        return {"error": validation_reason(exc)}
    try:
        return estimate_json(request)
    except (ScenarioError, ValueError) as exc:
        return {"error": str(exc)}


def validation_reason(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "request"
    return f"{where}: {first['msg']}"


def plan_json(a: Answer) -> dict[str, Any]:
    """`plan`: ranked arrangements, the changes as short lines, whether the asked GPU fits."""
    asked_fits = None if a.verdict in (None, "compare") else a.verdict in ("fits", "tight")
    if isinstance(a, ServingAnswer):
        return serving_plan_json(a, asked_fits)
    if isinstance(a, MarketAnswer):  # a price question: the GPU's market range per GPU-hour, no plans to rank
        return {"plans": [], "suggestions": [], "asked_fits": None, "verdict": None, "assumptions": [],
                "market": a.market.model_dump(mode="json")}
    if isinstance(a, ModelsAnswer):  # «какую модель можно запустить на 4090»: the largest size of each row
        return {"plans": [], "suggestions": [], "asked_fits": None, "verdict": None, "assumptions": [],
                "models": [r.model_dump(mode="json") for r in a.rows]}
    if asks_a_price(a.request):  # the bot's and `ask`'s answer to it: no market prices for this GPU
        return {"error": f"no market prices for {a.request.gpus[0].name}"}
    if not isinstance(a, PlannedAnswer):
        reason = a.errors[0].params.get("reason") if a.errors else None
        return {"error": reason or a.request.error or NO_MODEL}
    return {
        "plans": [{"gpu": p.gpu, "count": p.count, "techniques": p.techniques, "per_gpu_gb": p.per_gpu_gb,
                   "hours": p.hours, "usd": p.usd, "usd_per_hour": p.usd_per_hour,
                   "hours_per_100m_tokens": p.hours_per_100m_tokens, "headroom_gb": p.headroom_gb}
                  for p in a.plans],
        "suggestions": [change_line(c) for c in a.changes],
        "asked_fits": asked_fits,
        "verdict": None if a.verdict == "compare" else a.verdict,
        "assumptions": [str(x) for x in a.assumptions],
    }


def serving_plan_json(a: ServingAnswer, asked_fits: bool | None) -> dict[str, Any]:
    """`plan` of a serving question: the arrangements that serve the asked users (smallest first), the engine's
    changes as message keys, whether the GPUs asked serve them (the verdict's own reading)."""
    r = a.serving
    if r.memory is None and r.arrangement is None:
        first = r.errors[0] if r.errors else None
        return {"error": first.key if first else NO_MODEL}
    shown = [x for x in (r.arrangement, *r.alternatives) if x is not None]
    return {
        "plans": [{"gpu": x.gpu, "count": x.count, "techniques": [],
                   "per_gpu_gb": round(x.total_gib - x.headroom_gib, 2), "hours": None,
                   "usd": None, "usd_per_hour": x.per_hour if x.currency == "USD" else None,
                   "hours_per_100m_tokens": None, "headroom_gb": x.headroom_gib,
                   "tensor_parallel": x.tensor_parallel,
                   "replicas": x.replicas, "users": x.users_per_instance * max(1, x.replicas)} for x in shown],
        "suggestions": [c.key for c in r.changes],
        "asked_fits": asked_fits,
        "verdict": a.verdict,
        "assumptions": [str(x) for x in r.assumptions],
    }


TRAINING_CHANGE_FIELDS = {"key", "params", "saves_gb", "fits", "total_gb", "tight"}


def change_json(c: Change) -> dict[str, Any]:
    """A training change as `check --json` gives it: key, params, what it saves, whether it fits, what one GPU then
    holds, and the changes made together (the other kinds' figures of a Change are theirs)."""
    return {**c.model_dump(mode="json", include=TRAINING_CHANGE_FIELDS), "parts": [change_json(p) for p in c.parts]}


def change_line(c: Change) -> str:
    """"shorter_context(from=8192, to=4096): -3.1 GB (fits)": a machine-readable line, not a sentence."""
    params = ", ".join(f"{k}={v}" for k, v in c.params.items())
    return f"{c.key}{'(' + params + ')' if params else ''}: -{c.saves_gb} GB" + (" (fits)" if c.fits else "")
