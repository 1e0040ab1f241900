"""`check` of a start-up log: the settings it shows, our estimate of the same setup, and the two side by side,
component by component, with the reason for each difference; and the calibration row `--record` appends.

A component's difference is explained by the mechanism that sets it (engine/catalog/serving.toml, cited there) and,
for the KV pool (what is left of the budget), by the differences of the components taken before it.
"""

from __future__ import annotations

from typing import Any

from engine.configs.readers.logs import LogReading, read_log, request_data, safe_model

# (measured name, serving block key, label)
COMPONENTS = (("weights_gib", "weights_gib", "weights"), ("activation_peak_gib", "activation_peak_gib",
              "activation peak"), ("non_torch_gib", "non_torch_gib", "non-torch memory"),
              ("cuda_graph_gib", "cuda_graph_gib", "CUDA graphs"), ("kv_cache_gib", "kv_pool_gib", "KV pool"),
              ("kv_tokens", "kv_tokens", "KV tokens"), ("max_concurrency", "max_concurrency", "max concurrency"))

# The mechanism behind each component, as %(name)s templates: the English reason is filled in here; the bot
# translates the same templates (bot/views/logcheck.py), so each row also carries them as `reason_parts`.
MECHANISM: dict[str, str | dict[str, str]] = {
    "weights": "the rank's share of the weights in %(fmt)s (vLLM / SGLang pad the vocabulary to 64 x TP)",
    "activation peak": {"vllm-v1": "profile run: forward of max_num_batched_tokens (%(mnbt)s) tokens and the sampler "
                                   "over min(max_num_seqs, max_num_batched_tokens) rows of fp32 logits",
                        "vllm-v0": "profile run: max_num_seqs (%(mns)s) dummy sequences through the sampler (fp32 "
                                   "logits of the vocabulary)",
                        "llama.cpp": "compute buffer: the larger of the fp32 logits of n_ubatch (512) outputs and, "
                                     "without flash attention, one layer's fp32 attention scores (n_ctx x n_ubatch x "
                                     "heads)",
                        "": "the engine's warm-up batch"},
    "non-torch memory": "NCCL / custom all-reduce buffers under TP, cuBLAS workspace",
    "CUDA graphs": {"in": "graph pool of the captured batch sizes (counted inside the budget)",
                    "": "graph pool of the captured batch sizes (taken after the KV pool, outside it)"},
    "KV pool": {"vllm-v1": "total x gpu_memory_utilization (%(util)s) minus weights, activation peak and non-torch "
                           "memory", "vllm-v0": "total x gpu_memory_utilization (%(util)s) minus weights, activation "
                           "peak and non-torch memory",
                "sglang": "total x mem_fraction_static minus what the process holds after loading",
                "tgi": "free memory after the warm-up batch less the release's margin (0.95 of it before 2.4, 0.90 in "
                       "2.4, a tenth of the card from 3.0), within cuda_memory_fraction",
                "llama.cpp": "n_ctx x layers x K+V bytes, allocated whole at start (not paged)",
                "": "the KV cache the engine allocates"},
    "KV tokens": "pool / (bytes per token: %(bpt)s B), in blocks of 16",
    "max concurrency": "KV tokens / blocks one max_model_len (%(mml)s) request needs",
}
UPSTREAM = "the pool is what is left, so it moves against %(components)s"
FOLLOWS_POOL = "follows the KV pool (%(gib)s GiB)"
GRAPHS_FITTED = "fitted per layer on vLLM 0.19 logs (serving.toml [vllm.cuda_graphs])"
CLOSE = 0.05  # within 5 %: no reason needed beyond the mechanism

Part = tuple[str, dict[str, Any]]


def _mechanism(label: str, s: dict[str, Any]) -> Part:
    entry = MECHANISM[label]
    if isinstance(entry, str):
        text = entry
    elif label == "CUDA graphs":
        text = entry["in" if s.get("cuda_graphs_in_budget") else ""]
    else:
        text = entry.get(s.get("engine_family") or "", entry[""])
    args = {"fmt": s.get("weight_format"), "mnbt": s.get("max_num_batched_tokens"), "mns": s.get("max_num_seqs"),
            "util": s.get("gpu_memory_utilization"), "bpt": s.get("kv_bytes_per_token"),
            "mml": s.get("max_model_len")}
    return text, {k: v for k, v in args.items() if f"%({k})s" in text}


def _english(parts: list[Part]) -> str:
    """The reason as one English line: the templates filled in, joined with '; '."""
    out = []
    for text, args in parts:
        if "components" in args:
            args = {"components": ", ".join(f"{k} ({v:+.2f} GiB)" for k, v in args["components"])}
        out.append(text % args if args else text)
    return "; ".join(out)


def compare(reading: LogReading, serving: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per component the log measured: theirs, ours, the difference and its reason (English, and the
    templates with their parameters in `reason_parts`)."""
    rows: list[dict[str, Any]] = []
    diffs: dict[str, float] = {}
    for measured_key, ours_key, label in COMPONENTS:
        theirs, ours = reading.measured.get(measured_key), serving.get(ours_key)
        if theirs is None or ours is None:
            continue
        diff = float(ours) - float(theirs)
        rel = diff / theirs if theirs else None
        diffs[label] = diff
        parts = [_mechanism(label, serving)]
        if rel is not None and abs(rel) > CLOSE:
            if label == "KV pool":
                upstream = [(k, round(v, 2)) for k, v in diffs.items() if k in ("weights", "activation peak",
                                                                                 "non-torch memory") and abs(v) >= 0.05]
                if upstream:
                    parts.append((UPSTREAM, {"components": upstream}))
            elif label in ("KV tokens", "max concurrency") and "KV pool" in diffs and abs(diffs["KV pool"]) >= 0.05:
                parts.append((FOLLOWS_POOL, {"gib": f"{diffs['KV pool']:+.2f}"}))
            elif label == "CUDA graphs":
                parts.append((GRAPHS_FITTED, {}))
        rows.append({"component": label, "theirs": theirs, "ours": ours,
                     "diff_pct": round(100 * rel, 1) if rel is not None else None, "reason": _english(parts),
                     "reason_parts": [[text, args] for text, args in parts]})
    return rows


def calibration_row(reading: LogReading, serving: dict[str, Any] | None) -> dict[str, Any]:
    """The figures measured, with their settings, as a row of shared/data/serving-logs.jsonl."""
    s = reading.settings
    tp, pp = int(s.get("tp") or 1), int(s.get("pp") or 1)
    return {
        "id": f"check-{reading.kind}-{(s.get('model') or 'model').replace('/', '-')[:60]}-tp{tp}pp{pp}",
        "engine": reading.kind, "engine_version": reading.version, "model": s.get("model"),
        "dtype": s.get("dtype"), "quantization": s.get("quantization"),
        "kv_cache_dtype": s.get("kv_cache_dtype") or "auto", "gpu": s.get("gpu"),
        "gpu_total_gib": s.get("gpu_total_gib"), "tp": tp, "pp": pp,
        "gpu_memory_utilization": s.get("gpu_memory_utilization"), "max_model_len": s.get("max_model_len"),
        "max_num_seqs": s.get("max_num_seqs"), "max_num_batched_tokens": s.get("max_num_batched_tokens"),
        "measured": dict(reading.measured),
        "estimate": {k: serving.get(v) for _, v, k in COMPONENTS} if serving else None,
        "source": "gpu-advisor check (a team's own start-up log)", "confidence": "high",
    }


def check_log(text: str, gpu: str | None = None, model: str | None = None) -> dict[str, Any] | None:
    """`check --json` of a log: None when the text is not a log. `gpu` / `model`: what the user names when the log
    does not (a model the log names wins: the log is what ran)."""
    from engine.contract import estimate_request

    reading = read_log(text)
    if reading is None:
        return None
    if model and not reading.settings.get("model"):
        reading.settings["model"] = safe_model(model)
    out: dict[str, Any] = {"format": f"log:{reading.kind}", "engine_version": reading.version,
                           "settings": reading.settings, "measured": reading.measured, "request": None,
                           "estimate": None, "components": [], "changes": [], "ignored": [], "no_effect": []}
    data = request_data(reading, gpu)
    if data is None:
        if reading.kind in ("nvidia-smi", "torch"):
            out["note"] = "a memory printout without the model or settings: paste the engine's start-up log too"
        else:
            out["error"] = "the log does not name the model"
        out["calibration"] = calibration_row(reading, None)
        return out
    out["request"] = data
    answer = estimate_request(data)
    serving = answer.get("serving") if isinstance(answer, dict) else None
    if not serving or "error" in serving:
        out["error"] = answer.get("error") or (serving or {}).get("error") or "no estimate"
    else:
        out["estimate"] = {k: serving.get(k) for k in ("weights_gib", "activation_peak_gib", "non_torch_gib",
                                                       "cuda_graph_gib", "kv_pool_gib", "kv_tokens",
                                                       "max_concurrency", "engine_family", "weight_format")}
        out["components"] = compare(reading, serving)
        out["assumptions"] = serving.get("assumptions", [])
    out["calibration"] = calibration_row(reading, serving if out["estimate"] else None)
    return out
