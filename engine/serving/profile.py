"""Engine profiles: which engine and version, its defaults, the weight format it loads (engine/catalog/serving.toml)."""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from engine.catalog import HERE
from engine.datafiles import read
from engine.schema.serving import EngineFamily

ENGINES = ("vllm", "sglang", "tgi", "llama.cpp", "ollama", "hf", "tensorrt-llm")
BARE_GGUF = {"2": "q2_k", "3": "q3_k_m", "4": "q4_k_m", "5": "q5_k_m", "6": "q6_k", "8": "q8_0"}
GGUF = re.compile(r"^(?:gguf[:\s_-]*)?(f32|f16|bf16|q\d_k_[sml]|q\d_k|q\d_[01]|iq\d_[a-z]+|mxfp4)$", re.IGNORECASE)


@cache
def data() -> dict[str, Any]:
    return read(HERE / "serving.toml")


def version_tuple(version: str | None) -> tuple[int, ...] | None:
    """"0.19.0 (V1)" -> (0, 19, 0); None when no number is given."""
    if not version:
        return None
    m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", version)
    if not m:
        return None
    return tuple(int(x) for x in m.groups() if x is not None)


def family(engine: str, version: str | None, compute_capability: float | None = None,
           use_v1: bool | None = None) -> EngineFamily:
    if engine == "vllm":
        v = version_tuple(version)
        removed_v0 = v is not None and v >= (0, 11)
        if use_v1 is not None and not removed_v0 and (use_v1 is False or compute_capability is None
                                                      or compute_capability >= 8.0):
            return "vllm-v1" if use_v1 else "vllm-v0"  # VLLM_USE_V1 (vllm/envs.py) as the log or request says
        if compute_capability is not None and compute_capability < 8.0 and (v is None or v < (0, 11)):
            return "vllm-v0"  # V1 needs sm80+ until V0's removal (arg_utils _is_v1_supported_oracle falls back)
        if version and re.search(r"\bV0\b", version):
            return "vllm-v0"
        if version and re.search(r"\bV1\b", version):
            return "vllm-v1"
        if v is not None and v < version_tuple(data()["vllm"]["v1_from"]):  # type: ignore[operator]
            return "vllm-v0"
        return "vllm-v1"
    if engine in ("sglang", "tgi", "llama.cpp", "ollama", "hf"):
        return engine  # type: ignore[return-value]
    return "vllm-v1"  # tensorrt-llm: sized like a paged-KV engine with the same budget rules (said as such)


def v1_before(version: str | None, key: str) -> bool:
    """The vLLM release is older than [vllm.v1] `key` (no version = the newest release: False)."""
    v = version_tuple(version)
    return v is not None and v < version_tuple(str(data()["vllm"]["v1"][key]))  # type: ignore[operator]


def cuda_graphs_in_budget(version: str | None) -> bool:
    v = version_tuple(version)
    return v is not None and v >= version_tuple(data()["vllm"]["cuda_graphs_in_budget_from"])  # type: ignore[operator]


def weight_format(quantization: str | None, bits: int | None, engine: str) -> str | None:
    """The format key a request names: "fp8 (compressed-tensors, fp8-dynamic)" -> "fp8"; None = not understood."""
    q = (quantization or "").strip().lower()
    if not q:
        if engine in ("llama.cpp", "ollama"):
            # none said: the Q4_K_M file GGUF repositories lead with (llama.cpp as Ollama), unless bits say otherwise
            return "gguf:" + str(data()["ollama"]["default_gguf"]) if engine == "ollama" or bits in (4, None) else \
                "gguf:" + ("q8_0" if bits == 8 else "f16" if bits in (16, None) else "f32")
        return {4: "awq", 8: "int8", 32: "fp32"}.get(bits or 16, "bf16")
    head = q.split("(")[0].strip()
    m = GGUF.match(head.replace("gguf:", "").strip()) if head.startswith("gguf") or engine in ("llama.cpp", "ollama") \
        else None
    if m:
        return "gguf:" + m.group(1).lower()
    bare = re.match(r"^(?:gguf[:\s_-]*)?q([2-8])$", head) if engine in ("llama.cpp", "ollama") or "gguf" in head \
        else None
    if bare:  # "q4": the usual mix of that width (the _K_M files most GGUF repositories lead with)
        return "gguf:" + BARE_GGUF[bare.group(1)]
    for key, words in (("nvfp4", ("nvfp4",)), ("mxfp4", ("mxfp4",)), ("fp8", ("fp8", "float8")),
                       ("awq", ("awq",)), ("gptq", ("gptq", "w4a16", "int4", "marlin")),
                       ("bitsandbytes", ("bitsandbytes", "bnb", "nf4")), ("int8", ("int8", "w8a8", "w8a16")),
                       ("fp16", ("fp16", "float16", "half")), ("bf16", ("bf16", "bfloat16")), ("fp32", ("fp32",))):
        if any(w in head for w in words):
            return key
    return None


def supports(engine: str, fmt: str) -> bool:
    table = data()["support"]
    key = "gguf" if fmt.startswith("gguf") else fmt
    return key in table.get(engine, table["vllm"])


def runs_on(engine: str, fmt: str, compute_capability: float | None) -> bool:
    """Whether the engine's kernels for the weight format run on a GPU of that NVIDIA compute capability (catalog
    serving.toml [min_capability]; an unknown capability, AMD or Apple: as far as this table says, yes)."""
    floor = data()["min_capability"].get(engine, {}).get(fmt)
    return compute_capability is None or floor is None or compute_capability >= float(floor)


def v0_chunked_prefill(max_model_len: int, max_num_batched_tokens: int | None = None) -> bool:
    """vLLM V0 runs chunked prefill when max_model_len passes chunked_prefill_above (the OpenAI server's default)
    or when the token budget is below max_model_len (V0 refuses that budget without chunked prefill:
    vllm/config.py SchedulerConfig._verify_args)."""
    v0 = data()["vllm"]["v0"]
    if max_model_len > int(v0["chunked_prefill_above"]):
        return True
    return max_num_batched_tokens is not None and max_num_batched_tokens < max_model_len


def batch_defaults(fam: EngineFamily, total_gib: float, gpu_name: str, max_model_len: int,
                   version: str | None = None) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) the engine picks when the request leaves them out."""
    v = data()["vllm"]
    if fam == "vllm-v0":
        v0 = v["v0"]
        if v0_chunked_prefill(max_model_len):
            return int(v0["chunked_batched_tokens"]), int(v0["max_num_seqs"])
        return max(max_model_len, int(v0["min_batched_tokens"])), int(v0["max_num_seqs"])
    if fam == "sglang":
        return int(data()["sglang"]["chunked_prefill_size"]), 1024
    if fam == "tgi":
        return int(data()["tgi"]["max_batch_prefill_tokens"]), 128
    if fam in ("llama.cpp", "ollama", "hf"):
        return int(data()["llama_cpp"]["n_ubatch"]), 1
    if fam == "vllm-v1" and v1_before(version, "early_defaults_until"):
        v1 = v["v1"]  # 0.7.x run as V1: by the device's name, 1024 sequences
        named = any(x.lower() in gpu_name.lower() for x in v1["early_large_names"])
        return int(v1["early_large_batched_tokens" if named else "early_small_batched_tokens"]), \
            int(v1["early_max_num_seqs"])
    bd = v["batch_defaults"]
    large = total_gib >= bd["large_memory_gib"] and not any(x.lower() in gpu_name.lower() for x in bd["excluded_names"])
    row = bd["large" if large else "small"]
    return int(row["max_num_batched_tokens"]), int(row["max_num_seqs"])
