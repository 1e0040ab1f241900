"""Rules of one engine and version that are not vLLM's (engine/catalog/serving.toml [sglang.*], [tgi], each cited
there): SGLang's default mem_fraction_static (the TP table, then the GPU-memory heuristic) and its reduction for
multimodal models; TGI's KV sizing after its warm-up batch, by release."""

from __future__ import annotations

from engine.schema import Architecture

from .profile import data, version_tuple

GIB = float(2**30)


def _at_least(version: str | None, since: str) -> bool:
    """The version is `since` or later; no version = the newest engine (said as an assumption by the caller)."""
    v = version_tuple(version)
    return v is None or v >= (version_tuple(since) or (0,))


def sglang_heuristic(version: str | None) -> bool:
    return _at_least(version, str(data()["sglang"]["heuristic"]["from_version"]))


def sglang_bucket(total_gib: float, tp: int) -> tuple[int, int]:
    """(chunked_prefill_size, cuda_graph_max_bs) SGLang picks for this GPU's memory (heuristic releases)."""
    mib = total_gib * 1024
    for under, chunked, bs_small, bs_large in data()["sglang"]["heuristic"]["buckets"]:
        if mib < under:
            return int(chunked), int(bs_small if tp < 4 else bs_large)
    return int(data()["sglang"]["chunked_prefill_size"]), int(data()["sglang"]["cuda_graph_max_bs"])


def sglang_default_fraction(version: str | None, total_gib: float, tp: int, pp: int,
                            chunked: int | None = None) -> float:
    """mem_fraction_static when the launch leaves it out: by TP size before the heuristic, else from the GPU."""
    s = data()["sglang"]
    if not sglang_heuristic(version):
        for least, fraction in s["mem_fraction_static"]:
            if tp * pp >= least:
                return float(fraction)
        return 0.88
    h = s["heuristic"]
    bucket_chunked, graph_bs = sglang_bucket(total_gib, tp)
    mib = total_gib * 1024
    reserved = (h["base_mib"] + max(chunked or bucket_chunked, h["min_prefill_tokens"]) * h["prefill_mib_per_token"]
                + graph_bs * h["graph_mib_per_bs"] + tp * pp / 8 * h["parallel_mib_per_8"])
    if mib > h["large_gpu_mib"]:
        reserved = max(reserved, h["large_floor_mib"])
    return round((mib - reserved) / mib, 3)


def sglang_vlm_factor(arch: Architecture, version: str | None, said: bool) -> float:
    """The factor SGLang applies to mem_fraction_static for a model with a vision tower (1.0 for text models, and
    for a value the launch set once the reduction moved into the default's heuristic)."""
    towers = data().get("vision_towers", {})
    tower = towers.get(arch.name) or (towers.get(arch.reference) if arch.reference else None)
    if not tower:
        return 1.0
    m = data()["sglang"]["multimodal"]
    if not _at_least(version, str(m["dynamic_from"])):
        v = version_tuple(version) or (0,)
        fixed = [float(f) for since, f in m["fixed"] if v >= (version_tuple(since) or (0,))]
        return fixed[-1] if fixed else 1.0
    if said and sglang_heuristic(version):
        return 1.0
    layers, hidden = tower.get("vit_layers"), tower.get("vit_hidden")
    if not layers or not hidden:
        return float(m["base"])
    ratio = layers * hidden**2 / (m["baseline_layers"] * m["baseline_hidden"] ** 2)
    low, high = m["clamp"]
    return float(m["base"]) * max(low, min(high, 1.0 - m["sensitivity"] * (ratio - 1.0)))


def tgi_era(version: str | None) -> tuple[float, str]:
    """(margin, how it applies) of the TGI release: 0.95 or 0.90 of the free memory, or 0.90 of the card."""
    v = version_tuple(version)
    margin, mode = 0.90, "of_total"
    for since, m, how in data()["tgi"]["eras"]:
        if v is None or v >= (version_tuple(since) or (0,)):
            margin, mode = float(m), str(how)
    return margin, mode


def tgi_defaults(version: str | None) -> tuple[int, int, int]:
    """(max_total_tokens, max_input_tokens, max_batch_prefill_tokens) of the launcher; 0 = the model's length."""
    v = version_tuple(version)
    row = data()["tgi"]["defaults"][-1]
    for candidate in data()["tgi"]["defaults"]:
        if v is not None and v >= (version_tuple(candidate[0]) or (0,)):
            row = candidate
    return int(row[1]), int(row[2]), int(row[3])


def tgi_warmup_tokens(version: str | None, prefill: int, max_model_len: int) -> int:
    """KV tokens the warm-up batch holds: requests of max_input_tokens until the prefill budget, each reserving
    max_total_tokens (its input plus max_new_tokens); from 3.0, with no max_total_tokens passed, one new token each
    (backends/v3/src/client/grpc_client.rs warmup: max_new_tokens 1)."""
    total, max_input, _ = tgi_defaults(version)
    if not total:  # 3.x with the limits left to the launcher: each warm-up request asks one new token
        return prefill + 1
    total = min(total, max_model_len)
    max_input = min(max_input, total - 1) if total > 1 else 1
    requests = max(1, -(-prefill // max(1, max_input)))
    return requests * total


def tgi_logits(arch: Architecture, tokens: int, version: str | None) -> float:
    """The warm-up's lm_head output over every prefill token and its log_softmax copy (prefill_logprobs), before
    3.0; from 3.0 the server keeps only each request's last token (REQUEST_LOGPROBS off by default)."""
    if _at_least(version, str(data()["tgi"]["prefill_logprobs_until"])):
        return 0.0
    return float(data()["tgi"]["logit_copies_bytes"]) * tokens * arch.vocab


def tgi_pool(total: float, used: float, warm_kv: float, fraction: float, version: str | None) -> float:
    """KV bytes after the warm-up: `used` = context + weights + warm-up peak + NCCL (without the warm-up's KV)."""
    margin, mode = tgi_era(version)
    warm_kv = min(warm_kv, max(0.0, total - used))  # a warm-up batch past the free memory fails (OOM), never grows it
    free_after = total - used - warm_kv
    if mode == "of_total":
        return max(0.0, free_after - (1.0 - fraction * margin) * total) + warm_kv
    return margin * max(0.0, free_after - (1.0 - fraction) * total) + warm_kv
