"""engine.serving's keys in words: `serving.error.*`, `serving.warning.*`, `serving.change.*`, "key=value"
assumptions, engines and formats."""

from __future__ import annotations

import math
from typing import Any

from bot.views.catalogs import _, _n
from bot.views.formats import context_text, decimal, money, num, pct
from bot.views.words import assumption_text
from engine.schema import Assumption, Change
from engine.schema import ServingSettings as Settings

ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang", "tgi": "TGI", "llama.cpp": "llama.cpp", "ollama": "Ollama",
                "hf": "HF generate", "tensorrt-llm": "TensorRT-LLM"}
FORMAT_NAMES = {"auto": "auto", "awq": "AWQ", "gptq": "GPTQ", "bitsandbytes": "bitsandbytes", "mxfp4": "MXFP4",
                "nvfp4": "NVFP4"}


def per_million_text(lang: str, value: float, currency: str) -> str:
    """"$1.17 per 1M output tokens"."""
    return _(lang, "%(money)s per 1M output tokens") % {"money": money(lang, value, currency)}


def format_label(fmt: str) -> str:
    """"bf16" as is, "awq" → "AWQ", "gguf:q4_k_m" → "GGUF Q4_K_M"."""
    if fmt.startswith("gguf:"):
        return "GGUF " + fmt.split(":", 1)[1].upper()
    if fmt in ("q8_0", "q4_0", "f16"):
        return fmt.upper() if fmt != "f16" else "F16"
    return FORMAT_NAMES.get(fmt, fmt)


def engine_name(engine: str) -> str:
    return ENGINE_NAMES.get(engine, engine)


def engine_label(lang: str, s: Settings) -> str:
    """"vLLM (V1)", "vLLM 0.6.3 (V0)", "SGLang"."""
    name = engine_name(s.engine) + (f" {s.version}" if s.version else "")
    if s.family in ("vllm-v0", "vllm-v1"):
        name += " (V0)" if s.family == "vllm-v0" else " (V1)"
    return name


def _n_int(x: Any) -> int:
    try:
        return int(x)
    except (TypeError, ValueError):
        return 0


def _list(lang: str, items: Any) -> str:
    if not isinstance(items, list | tuple):
        return str(items)
    return ", ".join(engine_name(str(i)) for i in items) or "—"


def error_line(lang: str, key: str, p: dict[str, Any]) -> str:
    """An input error or a warning of engine.serving, with its parameters."""
    match key:
        case "serving.error.users_too_many":
            users, most = _n_int(p.get("users")), _n_int(p.get("max_users"))
            return _(lang, "%(users)s at once is more than %(max_gpus)s GPUs serve at a context of %(ctx)s: "
                           "%(most)s") % {
                "users": _n(lang, "%(n)s user", "%(n)s users", users) % {"n": num(lang, users)},
                "max_gpus": num(lang, _n_int(p.get("max_gpus"))), "ctx": context_text(lang, _n_int(p.get("context"))),
                "most": _n(lang, "at most about %(n)s such request", "at most about %(n)s such requests", most) % {
                    "n": num(lang, most)}}
        case "serving.error.context_beyond_model":
            return _(lang, "A context of %(ctx)s is beyond what %(model)s takes (max_position_embeddings = "
                           "%(limit)s)") % {"ctx": context_text(lang, _n_int(p.get("context"))),
                                            "model": p.get("model", ""),
                                            "limit": num(lang, _n_int(p.get("limit")))}  # config.json's value
        case "serving.warning.beyond_model_context":
            return _(lang, "max_model_len %(ctx)s is past the limit of %(model)s (%(limit)s): it needs RoPE "
                           "scaling or VLLM_ALLOW_LONG_MAX_MODEL_LEN") % {
                "ctx": context_text(lang, _n_int(p.get("context"))), "model": p.get("model", ""),
                "limit": context_text(lang, _n_int(p.get("limit")))}
        case "serving.error.tp_not_divisor":
            valid = ", ".join(str(v) for v in p.get("valid", []))
            return _(lang, "TP %(tp)s does not divide the attention heads (%(heads)s, KV heads %(kv)s): "
                           "valid degrees are %(valid)s") % {
                "tp": p.get("tensor_parallel"), "heads": p.get("heads"), "kv": p.get("kv_heads"), "valid": valid}
        case "serving.error.format_not_supported":
            return _(lang, "%(engine)s cannot load %(format)s weights; engines that can: %(engines)s") % {
                "engine": engine_name(str(p.get("engine", ""))), "format": format_label(str(p.get("format", ""))),
                "engines": _list(lang, p.get("engines", []))}
        case "serving.error.format_not_on_gpu":
            return _(lang, "%(engine)s has no %(format)s kernels for the %(gpu)s (compute capability %(cc)s; they need "
                           "%(needs)s or newer), so those weights do not load there; on it: %(formats)s") % {
                "engine": engine_name(str(p.get("engine", ""))), "format": format_label(str(p.get("format", ""))),
                "gpu": p.get("gpu", ""), "cc": decimal(lang, float(p.get("capability") or 0), 1, keep_zeros=True),
                "needs": decimal(lang, float(p.get("needs") or 0), 1, keep_zeros=True),
                "formats": _list(lang, [format_label(str(f)) for f in p.get("formats", [])])}
        case "serving.error.unknown_format":
            return _(lang, "The weight format “%(q)s” is not one I know: bf16, fp8, int8, AWQ, GPTQ, bitsandbytes, "
                           "MXFP4, NVFP4 or a GGUF type") % {"q": p.get("quantization", "")}
        case "serving.error.unknown_model":
            return _(lang, "I do not know the model %(model)s: give its size (say 70B) or its Hugging Face id") % {
                "model": p.get("model", "")}
        case "serving.error.no_arrangement":
            return _(lang, "No arrangement of the catalog's GPUs serves a context of %(ctx)s") % {
                "ctx": context_text(lang, _n_int(p.get("context")))}
    return key


def _room(lang: str, n: int) -> str:
    return _n(lang, "room for %(n)s such request", "room for %(n)s such requests", n) % {"n": num(lang, n)}


def _served(e: dict[str, Any]) -> int:
    if "users_served" in e:
        return _n_int(e["users_served"])
    return math.floor(float(e.get("concurrency_at_context", 0)) + 1e-9)


def _latency(lang: str, e: dict[str, Any]) -> str:
    """"TTFT p95 ≈ 0.4 s, ~35 tokens/s per user" of a load figure; the capacity when the queue grows without bound."""
    if not e.get("stable") or e.get("ttft_p95_ms") is None:
        return _(lang, "capacity %(cap)s requests/s") % {"cap": decimal(lang, float(e.get("capacity_rps") or 0), 2)}
    tps = round(float(e.get("per_user_tokens_s") or 0))
    return _(lang, "TTFT p95 ≈ %(ttft)s s, ~%(tps)s tokens/s per user") % {
        "ttft": decimal(lang, float(e["ttft_p95_ms"]) / 1000, 2), "tps": num(lang, tps)}


def load_change_line(lang: str, c: Change) -> str | None:
    """A change under load with the load model's figures at the asked load, before → after; ✓ when it keeps the
    promise (or the queue bounded); None for a change that is not one of these."""
    p, e = c.params, c.effect
    before = e.get("before") or {}
    match c.key:
        case "serving.change.prefix_caching":
            text = _(lang, "prompts sharing a prefix (%(hit)s of each prompt assumed cached): prefix caching "
                           "(--enable-prefix-caching, on by default in vLLM V1): %(before)s → %(after)s") % {
                "hit": pct(lang, round(float(p.get("hit_rate", 0)) * 100)), "after": _latency(lang, e),
                "before": _latency(lang, before)}
        case "serving.change.speculative":
            text = _(lang, "EAGLE speculative decoding (%(k)s proposals, acceptance %(a)s assumed; needs an EAGLE "
                           "head for the model): %(before)s → %(after)s, ×%(x)s per user") % {
                "k": p.get("k"), "a": decimal(lang, float(p.get("acceptance", 0)), 2), "after": _latency(lang, e),
                "before": _latency(lang, before), "x": num(lang, float(e.get("speedup", 1)))}
            if e.get("stops_paying_at"):
                text += "; " + _(lang, "it stops paying from about %(n)s requests at once") % {
                    "n": num(lang, _n_int(e["stops_paying_at"]))}
            return text
        case "serving.change.disaggregated":
            text = _(lang, "prefill and decode on separate instances (%(p)s prefill, %(d)s decode, %(how)s): "
                           "%(before)s → %(after)s, TPOT %(tb)s → %(ta)s ms") % {
                "p": p.get("prefill"), "d": p.get("decode"), "after": _latency(lang, e),
                "before": _latency(lang, before),
                "how": "--disaggregation-mode prefill|decode" if p.get("engine") == "sglang"
                else "NixlConnector, --kv-transfer-config" if p.get("engine") == "vllm" else "disaggregated serving",
                "tb": num(lang, round(float(e.get("tpot_ms_before") or 0), 1)),
                "ta": num(lang, round(float(e.get("tpot_ms") or 0), 1))}
        case "serving.change.dp_attention":
            text = _(lang, "data-parallel attention over %(n)s GPUs (%(how)s): room for %(a)s requests at once instead "
                           "of %(b)s, %(before)s → %(after)s") % {
                "n": p.get("dp"), "a": num(lang, _n_int(e.get("max_concurrency"))),
                "b": num(lang, _n_int(e.get("max_concurrency_before"))),
                "how": "--enable-dp-attention" if p.get("engine") == "sglang"
                else "--data-parallel-size, --enable-expert-parallel",
                "after": _latency(lang, e), "before": _latency(lang, before)}
        case "serving.change.more_replicas":
            par = f"TP\u00a0{p.get('tensor_parallel')}"
            if _n_int(p.get("pipeline_parallel")) > 1:
                par += f" × PP\u00a0{p.get('pipeline_parallel')}"
            text = _(lang, "%(count)s×%(gpu)s (%(replicas)s × %(par)s): %(before)s → %(after)s") % {
                "count": p.get("count"), "gpu": p.get("gpu"), "replicas": p.get("replicas"), "par": par,
                "after": _latency(lang, e), "before": _latency(lang, before)}
        case _:
            return None
    return text + (" ✓" if e.get("meets") else "")


def change_line(lang: str, c: Change, users: int | None) -> str:
    """One change that helps, with the number it gives; ✓ when it serves the asked users."""
    under_load = load_change_line(lang, c)
    if under_load is not None:
        return under_load
    p, e = c.params, c.effect
    served = _served(e)
    if c.key == "serving.change.arrangement":
        replicas = max(1, _n_int(p.get("replicas")) or 1)
        served = math.floor(float(e.get("concurrency_at_context", 0)) + 1e-9) * replicas
    room = _room(lang, served)
    match c.key:
        case "serving.change.fp8_weights":
            text = _(lang, "FP8 weights (%(gib)s GB per GPU): %(room)s") % {
                "gib": num(lang, float(e.get("weights_gib", 0))), "room": room}
        case "serving.change.fp8_kv_cache":
            text = _(lang, "FP8 KV cache (--kv-cache-dtype fp8): %(room)s") % {"room": room}
        case "serving.change.combined":
            text = _(lang, "FP8 weights and FP8 KV cache together (%(gib)s GB of weights per GPU): %(room)s") % {
                "gib": num(lang, float(e.get("weights_gib", 0))), "room": room}
        case "serving.change.int4_weights":
            text = _(lang, "4-bit %(format)s weights (%(checkpoint)s)%(kv)s: %(gib)s GB of weights per GPU, "
                           "%(room)s") % {
                "format": format_label(str(p.get("format", ""))), "checkpoint": p.get("checkpoint", ""),
                "kv": _(lang, " and FP8 KV cache") if p.get("kv_cache_dtype") == "fp8" else "",
                "gib": num(lang, float(e.get("weights_gib", 0))), "room": room}
        case "serving.change.smaller_gguf":
            text = _(lang, "%(to)s weights, 3-bit (%(gib)s GB per GPU; some quality lost against %(from)s): "
                           "%(room)s") % {"to": format_label(str(p.get("to", ""))),
                                          "from": format_label(str(p.get("from", ""))),
                                          "gib": num(lang, float(e.get("weights_gib", 0))), "room": room}
        case "serving.change.q8_kv_cache":
            text = _(lang, "q8_0 KV cache (-ctk q8_0 -ctv q8_0): %(room)s") % {"room": room}
        case "serving.change.shorter_max_model_len":
            text = _(lang, "max_model_len %(from)s → %(to)s: it loads, %(room)s") % {
                "from": num(lang, _n_int(p.get("from"))), "to": num(lang, _n_int(p.get("to"))), "room": room}
        case "serving.change.max_model_len_to_context":
            text = _(lang, "max_model_len %(from)s → %(to)s (your context): %(room)s") % {
                "from": num(lang, _n_int(p.get("from"))), "to": num(lang, _n_int(p.get("to"))), "room": room}
        case "serving.change.fewer_users":
            to = _n_int(p.get("to"))
            return _n(lang, "at most %(to)s user at once instead of %(from)s",
                      "at most %(to)s users at once instead of %(from)s", to) % {
                "to": num(lang, to), "from": num(lang, _n_int(p.get("from")))}
        case "serving.change.arrangement":
            par = f"TP\u00a0{p.get('tensor_parallel')}"
            if _n_int(p.get("pipeline_parallel")) > 1:
                par += f" × PP\u00a0{p.get('pipeline_parallel')}"
            if _n_int(p.get("replicas")) > 1:
                par = f"{p.get('replicas')} × {par}"
            single = _n_int(p.get("tensor_parallel")) <= 1 and _n_int(p.get("pipeline_parallel")) <= 1 \
                and _n_int(p.get("replicas")) <= 1  # one card (llama.cpp's only kind): no parallelism to name
            text = f"{p.get('count')}×{p.get('gpu')}" + ("" if single else f" ({par})") + f": {room}"
            currency = str(e.get("currency", "USD"))
            if e.get("per_hour") is not None:
                text += ", " + money(lang, float(e["per_hour"]), currency) + _(lang, "/h")
            if e.get("per_million_output_tokens") is not None:
                text += " · " + per_million_text(lang, float(e["per_million_output_tokens"]), currency)
        case _:
            text = c.key
    return text + (" ✓" if e.get("loads", True) and served >= (users or 1) else "")


# What each engine calls vLLM's settings (the command line's own flag names, so that the assumption reads as the knob)
ENGINE_SETTINGS = {
    "sglang": {"gpu_memory_utilization": "mem_fraction_static", "max_num_seqs": "max_running_requests",
               "max_num_batched_tokens": "chunked_prefill_size", "max_model_len": "context_length"},
    "tgi": {"gpu_memory_utilization": "cuda_memory_fraction", "max_num_batched_tokens": "max_batch_prefill_tokens",
            "max_model_len": "max_total_tokens"},
}


def assumption_line(lang: str, item: Assumption, family: str = "vllm-v1") -> str:
    """A default of engine.serving in words, with the engine's own name for a setting."""
    key, _sep, value = str(item).partition("=")  # the value as the contract prints it ("like Llama-3.1-8B")
    named = ENGINE_SETTINGS.get(family, {}).get(key, key)
    match key:
        case "engine_version":
            return _(lang, "engine version %(v)s") % {"v": value} if value else _(lang, "the latest engine version")
        case "serving_engine":
            return _(lang, "engine %(v)s") % {"v": engine_name(value)}
        case "memory_model":
            return _(lang, "memory sized by the rules of %(v)s") % {"v": "vLLM V1" if value == "vllm-v1" else value}
        case "architecture":
            return _(lang, "architecture %(v)s") % {"v": value.replace("like", _(lang, "like"), 1)}
        case "weight_format":
            return _(lang, "weights in %(v)s") % {"v": format_label(value)}
        case "weight_format_instead":
            return _(lang, "weights in %(v)s: in 16 bits the model does not load on these GPUs") % {
                "v": format_label(value)}
        case "serving_engine_apple":
            return _(lang, "engine %(v)s: vLLM and SGLang do not run on Apple GPUs (no Metal backend); MLX LM is the "
                           "other way") % {"v": engine_name(value)}
        case "serving_engine_instead":
            return _(lang, "engine %(v)s: in vLLM the model does not load on these GPUs") % {"v": engine_name(value)}
        case "fp8_compute":
            return _(lang, "FP8 weight-only on this GPU (W8A16 through FP8 Marlin): FP8's memory, bf16's speed")
        case "native_format":
            return _(lang, "weights in %(v)s, as the checkpoint ships") % {"v": format_label(value)}
        case "max_model_len":
            return f"{named} {num(lang, _n_int(value))}"
        case "gpu":
            return _(lang, "GPU %(v)s: the cheapest that serves it") % {"v": value}
        case "tensor_parallel":
            return _(lang, "tensor parallel %(v)s: the largest the GPUs allow") % {"v": value}
        case "gpu_count":
            n = _n_int(value)
            return _n(lang, "%(v)s GPU for the parallelism", "%(v)s GPUs for the parallelism", n) % {"v": n}
        case "context":
            n = _n_int(value)
            return _n(lang, "context %(v)s token", "context %(v)s tokens", n) % {"v": num(lang, n)}
        case "output_len":
            n = _n_int(value)
            return _n(lang, "output %(v)s token", "output %(v)s tokens", n) % {"v": num(lang, n)}
        case "gpu_memory_utilization" | "max_num_seqs" | "max_num_batched_tokens":
            return f"{named} {value}"
        case "latency_as_ttft":  # "p95 500": a latency promise naming no phase, read as the time to first token
            pct_said, _sp, ms = value.partition(" ")
            return _(lang, "latency read as the time to first token: TTFT %(pct)s ≤ %(s)s s (say TPOT or “per token” "
                           "for the speed of the answer)") % {"pct": pct_said, "s": decimal(lang, float(ms) / 1000, 2)}
        case "moe_active":  # "30b moe": the active share assumed (engine.answer.moe_active), worded once
            return assumption_text(lang, Assumption(key=key, value=value))
    return str(item)
