"""Start-up logs read back: a vLLM (V0 / V1), SGLang, TGI or llama.cpp start-up log, an `nvidia-smi` table or a
`torch.cuda.max_memory_allocated / reserved` printout → the settings it shows and the figures it measured.

- `looks_like_log(text)`: whether a text is one of these (the `check` hook asks before the config readers);
- `read_log(text) -> LogReading`: engine, version, settings (model, dtype, TP/PP, gpu_memory_utilization,
  max_model_len, ...) and measured figures under the names of shared/data/serving-logs.jsonl `measured`;
- `request_data(reading)`: the CONTRACT v2 request for the same setup (what `estimate --request` takes).

Secrets (hf_… tokens, API keys) never reach a reading; a local model path keeps only its last folder name.
The patterns are the engines' own log lines (cited at each). A launch command pasted with the log (`vllm serve ...`,
`python -m sglang.launch_server ...`, `text-generation-launcher ...`) is read through the engines' flag tables
(engine/configs/readers/serving.py, as `check` reads a command alone) for what the log lines leave out: a log often
prints no TP degree, no memory share, no context.
"""

from __future__ import annotations

import contextlib
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

_NUM = r"([0-9][0-9,]*(?:\.[0-9]+)?)"
_SECRET = re.compile(r"\b(hf_[A-Za-z0-9]{8,}|sk-[A-Za-z0-9_-]{8,}|(?:api[_-]?key|token)\s*[=:]\s*['\"]?[^\s,'\")]+)",
                     re.IGNORECASE)


@dataclass
class LogReading:
    kind: str  # "vllm" | "sglang" | "tgi" | "llama.cpp" | "nvidia-smi" | "torch"
    version: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    measured: dict[str, float] = field(default_factory=dict)


def _f(text: str) -> float:
    return float(text.replace(",", ""))


def scrub(text: str) -> str:
    """The text without secrets: hf_… tokens, sk-… keys and `token=` / `api_key=` values become ***."""
    return _SECRET.sub("***", text)


def safe_model(name: str) -> str:
    """A model as the log names it, with a local path cut to its last folder ('/weights/ckpt/UI-TARS' -> 'UI-TARS')."""
    name = name.strip().strip("'\"")
    if name.startswith(("/", "~", ".")) or "\\" in name or name.count("/") > 1:
        name = re.split(r"[/\\]", name.rstrip("/\\"))[-1]
    return scrub(name)[:200]


_MARKERS = {
    "vllm": re.compile(r"vllm|GPU KV cache size|Model loading took|Loading model weights took|#? ?GPU blocks: \d|"
                       r"Available KV cache memory|Memory profiling results", re.I),
    "sglang": re.compile(r"sglang|ServerArgs\(|KV Cache is allocated|max_total_num_tokens"),
    "tgi": re.compile(r"text_generation_launcher|text_generation_router|max_batch_total_tokens|Args \{"),
    "llama.cpp": re.compile(r"llama_model_loader|llama_context|llama_kv_cache|load_tensors:|llama_new_context"),
    "nvidia-smi": re.compile(r"NVIDIA-SMI \d|\|\s*\d+MiB\s*/\s*\d+MiB"),
    "torch": re.compile(r"max_memory_(?:allocated|reserved)(?:\(\))?\s*(?:[:=]|is)?\s*\d"),
}


def detect(text: str) -> str | None:
    for kind in ("sglang", "tgi", "llama.cpp", "vllm", "nvidia-smi", "torch"):
        if _MARKERS[kind].search(text):
            return kind
    return None


def looks_like_log(text: str) -> bool:
    """A start-up log or a memory printout (not a command line or a config file)."""
    if re.match(r"\s*(?:\{|\[\s*[\[{\"\]])", text):  # JSON, not "[2025-03-02 09:11:04] ..."
        return False
    kind = detect(text)
    if kind is None:
        return False
    if kind in ("nvidia-smi", "torch"):
        return True
    return bool(re.search(r"^(?:INFO|DEBUG|WARNING|\(\w+ pid=\d+\)|\[?\d{4}-\d\d-\d\d|\d\d-\d\d \d\d:|llama_|load_|"
                          r"print_info|.*\bINFO\b)", text, re.M)
                or re.search(LOG_LINE_WORDS, text, re.M))


# lines an engine prints at start-up, recognised when a pasted excerpt lost its timestamps and INFO prefixes (as
# logs are quoted in issues): vLLM's loading and profiling lines, its block count, SGLang's pool line
LOG_LINE_WORDS = (r"^\s*(?:Loading model weights took|Model loading took|Memory profiling (?:results|takes)|"
                  r"#? ?(?:GPU|cuda) blocks: \d|GPU KV cache size:|Available KV cache memory:|"
                  r"Maximum concurrency for|KV Cache is allocated|Load weight end)")


def _search(pattern: str, text: str, flags: int = 0) -> re.Match[str] | None:
    return re.search(pattern, text, flags)


def _kv_args(text: str, start: str) -> dict[str, str]:
    """key=value pairs of a printed config ("model='x', tensor_parallel_size=2, ...")."""
    m = re.search(re.escape(start) + r"(.*)", text)
    if not m:
        return {}
    return {k: v.strip("'\"") for k, v in re.findall(r"(\w+)=('[^']*'|\"[^\"]*\"|[^,\s)]+)", m.group(1))}


def _dict_args(text: str) -> dict[str, str]:
    """vLLM >= 0.9 prints `non-default args: {'model': 'x', 'max_model_len': 8192}`."""
    m = re.search(r"non-default args: \{(.*)\}", text)
    if not m:
        return {}
    return {k: v.strip("'\"") for k, v in re.findall(r"'(\w+)': ('[^']*'|[^,}]+)", m.group(1))}


_DTYPE = {"torch.bfloat16": "bf16", "bfloat16": "bf16", "torch.float16": "fp16", "float16": "fp16", "half": "fp16",
          "torch.float32": "fp32", "float32": "fp32"}


def _settings_from(args: dict[str, str], s: dict[str, Any]) -> None:
    names = {"model": "model", "model_path": "model", "model_id": "model", "tensor_parallel_size": "tp",
             "tp_size": "tp", "pipeline_parallel_size": "pp", "pp_size": "pp", "gpu_memory_utilization":
             "gpu_memory_utilization", "max_model_len": "max_model_len", "max_seq_len": "max_model_len",
             "context_length": "max_model_len", "max_num_seqs": "max_num_seqs", "max_running_requests":
             "max_num_seqs", "max_num_batched_tokens": "max_num_batched_tokens", "quantization": "quantization",
             "kv_cache_dtype": "kv_cache_dtype", "dtype": "dtype", "mem_fraction_static": "mem_fraction_static",
             "chunked_prefill_size": "max_num_batched_tokens", "enforce_eager": "enforce_eager"}
    for key, value in args.items():
        target = names.get(key)
        if target is None or (value in ("None", "", "auto") and target != "kv_cache_dtype"):
            continue
        if target == "model":
            s.setdefault("model", safe_model(value))
        elif target in ("tp", "pp", "max_model_len", "max_num_seqs", "max_num_batched_tokens"):
            if re.fullmatch(r"\d+", value):
                s.setdefault(target, int(value))
        elif target in ("gpu_memory_utilization", "mem_fraction_static"):
            with contextlib.suppress(ValueError):
                s.setdefault(target, float(value))
        elif target == "dtype":
            s.setdefault("dtype", _DTYPE.get(value, value))
        else:
            s.setdefault(target, value)


def _vllm(text: str, r: LogReading) -> None:
    s, m = r.settings, r.measured
    v = (_search(r"vLLM API server version ([\w.+-]+)", text) or _search(r"LLM engine \(v([\w.+-]+)\)", text)
         or _search(r"version[= ]v?(\d+\.\d+\.\d+[\w.+-]*)", text))
    engine_v1 = bool(_search(r"V1 LLM engine|v1/(?:worker|core|engine)|EngineCore|VLLM_USE_V1=1", text))
    engine_v0 = bool(_search(r"Initializing an LLM engine|#? ?(?:GPU|cuda) blocks: \d+, # CPU blocks|"
                             r"worker/model_runner\.py|VLLM_USE_V1=0|Memory profiling results: total_gpu_memory=",
                             text))
    r.version = ((v.group(1) + " ") if v else "") + ("(V1)" if engine_v1 and not engine_v0 else
                                                     "(V0)" if engine_v0 else "")
    r.version = r.version.strip() or None
    if engine_v1 and not engine_v0:
        s["vllm_use_v1"] = True
    elif engine_v0 and not engine_v1:
        s["vllm_use_v1"] = False
    _settings_from(_dict_args(text), s)
    _settings_from(_kv_args(text, "with config: "), s)
    _settings_from(_kv_args(text, "Namespace("), s)
    if (g := _search(r"Model loading took " + _NUM + r"\s*Gi?B", text)) or \
            (g := _search(r"Loading model weights took " + _NUM + r"\s*Gi?B", text)):
        m["weights_gib"] = _f(g.group(1))
    if g := _search(r"torch peak memory increase: " + _NUM + r"\s*GiB", text):
        m["activation_peak_gib"] = _f(g.group(1))
    if g := _search(r"PyTorch activation peak memory takes " + _NUM + r"\s*GiB", text):
        m["activation_peak_gib"] = _f(g.group(1))
    if g := _search(r"non-torch forward increase memory: " + _NUM + r"\s*GiB", text) or \
            _search(r"non_torch_memory takes " + _NUM + r"\s*GiB", text):
        m["non_torch_gib"] = _f(g.group(1))
    if g := _search(r"Available KV cache memory: " + _NUM + r"\s*GiB", text) or \
            _search(r"reserved for KV Cache is " + _NUM + r"\s*GiB", text):
        m["kv_cache_gib"] = _f(g.group(1))
    if g := _search(r"GPU KV cache size: " + _NUM + r" tokens", text):
        m["kv_tokens"] = _f(g.group(1))
    if g := _search(r"(?:^|# |\s)GPU blocks: " + _NUM, text) or _search(r"num_gpu_blocks is: " + _NUM, text):
        m["gpu_blocks"] = _f(g.group(1))
    if g := _search(r"Maximum concurrency for " + _NUM + r" tokens per request: " + _NUM + "x", text):
        m["max_concurrency"] = _f(g.group(2))
        s.setdefault("max_model_len", int(_f(g.group(1))))
    if g := _search(r"Actual usage is " + _NUM + r" GiB for weight, " + _NUM + r" GiB for peak activation, " + _NUM +
                    r" GiB for non-torch memory, and " + _NUM + r" GiB for CUDAGraph memory", text):
        # vllm/v1/worker/gpu_worker.py compile_or_warm_up_model: the --kv-cache-memory suggestion line
        for key, value in zip(("weights_gib", "activation_peak_gib", "non_torch_gib", "cuda_graph_gib"), g.groups(),
                              strict=True):
            m.setdefault(key, _f(value))
    if g := _search(r"Graph capturing finished in [\d.]+ secs?, took " + _NUM + r"\s*GiB", text):
        m["cuda_graph_gib"] = _f(g.group(1))
    if g := _search(r"Memory profiling results: total_gpu_memory=" + _NUM + r"GiB.*?peak_torch_memory=" + _NUM +
                    r"GiB.*?non_torch_memory=" + _NUM + r"GiB kv_cache_size=" + _NUM + r"GiB", text):
        # vLLM 0.6.3-0.6.4 (worker/worker.py determine_num_available_blocks): peak_torch_memory includes the weights
        s["gpu_total_gib"] = _f(g.group(1))
        if "weights_gib" in m:
            m["activation_peak_gib"] = round(_f(g.group(2)) - m["weights_gib"], 3)
        m["non_torch_gib"], m["kv_cache_gib"] = _f(g.group(3)), _f(g.group(4))
    if g := _search(r"total_gpu_memory \(" + _NUM + r"\s*GiB\)", text) or \
            _search(r"total_memory=" + _NUM + r"\s*GiB", text):
        s["gpu_total_gib"] = _f(g.group(1))
    if g := _search(r"Requested memory: " + _NUM + r" \(util\), " + _NUM + r"\s*GiB", text):
        s.setdefault("gpu_memory_utilization", _f(g.group(1)))
        s.setdefault("gpu_total_gib", round(_f(g.group(2)) / _f(g.group(1)), 2))
    if g := _search(r"gpu_memory_utilization \(" + _NUM + r"\)", text) or \
            _search(r"kv_cache_size=[\d.]+GiB gpu_memory_utilization=" + _NUM, text):  # the 0.6.4 profiling line
        s.setdefault("gpu_memory_utilization", _f(g.group(1)))
    if "kv_tokens" not in m and "gpu_blocks" in m:
        m["kv_tokens"] = m["gpu_blocks"] * 16  # vllm/config/cache.py block_size 16 on CUDA


def _sglang(text: str, r: LogReading) -> None:
    s, m = r.settings, r.measured
    if v := _search(r"sglang[ =]v?(?:version[ :=]*)?(\d+\.\d+\.\d+[\w.]*)", text, re.I):
        r.version = v.group(1)
    elif d := _search(r"\[(20\d\d-\d\d-\d\d)[ T]\d", text):  # no version printed: the rules of the log's date
        from engine.serving.profile import data as serving_data

        h = serving_data()["sglang"]["heuristic"]
        release = str(h["before_dates"])
        for since, version in h["by_date"]:
            if d.group(1) >= since:
                release = str(version)
        r.version = f"{release} (the rules of {d.group(1)}, the log's date)"
    _settings_from(_kv_args(text, "ServerArgs("), s)
    ranks = [int(x) for x in re.findall(r"\bTP(\d+)\]", text)]  # "[2025-10-16 09:06:22 TP7] ..." per rank
    if ranks and max(ranks) > 0 and "tp" not in s:  # only TP0 printing says nothing: most lines come from rank 0
        s["tp"] = max(ranks) + 1
    begin = _search(r"Load weight begin\. avail mem=" + _NUM, text)
    end = _search(r"Load weight end\..*?avail mem=" + _NUM, text)
    if g := _search(r"Load weight end\..*?mem usage=" + _NUM + r" GB", text):
        m["weights_gib"] = _f(g.group(1))
    elif begin and end:  # releases that print no mem usage
        m["weights_gib"] = round(_f(begin.group(1)) - _f(end.group(1)), 2)
    # the free memory before loading, which profile_max_num_token scales by mem_fraction_static
    if begin:
        s["free_at_load_gib"] = _f(begin.group(1))
    elif end and "weights_gib" in m:
        s["free_at_load_gib"] = round(_f(end.group(1)) + m["weights_gib"], 2)
    if g := _search(r"KV Cache is allocated\.(?: dtype: [\w.]+,)? (?:#tokens: " + _NUM + r", )?K size: " + _NUM
                    + r" GB, V size: " + _NUM, text):
        if g.group(1):
            m["kv_tokens"] = _f(g.group(1))
        m["kv_cache_gib"] = round(_f(g.group(2)) + _f(g.group(3)), 3)
    if "kv_tokens" not in m and (g := _search(r"max_total_num_tokens=" + _NUM, text)):
        m["kv_tokens"] = _f(g.group(1))
    if g := _search(r"Capture cuda graph end\..*?mem usage=" + _NUM + r" GB", text):
        m["cuda_graph_gib"] = _f(g.group(1))
    if g := _search(r"context_len=" + _NUM, text):
        s.setdefault("max_model_len", int(_f(g.group(1))))


def _tgi(text: str, r: LogReading) -> None:
    s, m = r.settings, r.measured
    if v := _search(r"[Vv]ersion[\":= ]+\"?(\d+\.\d+\.\d+)", text) or \
            _search(r"text-generation-inference:(\d+\.\d+(?:\.\d+)?)", text):  # the image tag pulled
        r.version = v.group(1)
    if g := _search(r"model_id: \"([^\"]+)\"", text):
        s["model"] = safe_model(g.group(1))
    if g := _search(r"num_shard: Some\(\s*(\d+),?\s*\)", text):
        s["tp"] = int(g.group(1))
    if g := _search(r"max_total_tokens: Some\(\s*(\d+),?\s*\)", text):
        s["max_model_len"] = int(g.group(1))
    if g := _search(r"max_batch_prefill_tokens: Some\(\s*(\d+),?\s*\)", text):
        s["max_num_batched_tokens"] = int(g.group(1))
    if g := _search(r"quantize: Some\(\s*(\w+)", text):
        s["quantization"] = g.group(1).lower()
    if g := _search(r"cuda_memory_fraction: " + _NUM, text):
        s["gpu_memory_utilization"] = _f(g.group(1))
    if g := _search(r"(?:Setting max batch total tokens to|max_batch_total_tokens[\":= ]+(?:Some\()?)\s*" + _NUM, text):
        m["kv_tokens"] = _f(g.group(1))
    if g := _search(r"KV-cache blocks: " + _NUM + r", size: (\d+)", text):
        m["gpu_blocks"] = _f(g.group(1))
        m["kv_tokens"] = _f(g.group(1)) * int(g.group(2))


def _mib(pattern: str, text: str) -> float | None:
    found = re.findall(pattern + r"\s*=\s*" + _NUM + r" MiB", text)
    return sum(_f(x) for x in found) / 1024 if found else None


def _llama_cpp(text: str, r: LogReading) -> None:
    s, m = r.settings, r.measured
    if v := _search(r"build: (\d+) \(", text):
        r.version = "b" + v.group(1)
    if g := _search(r"general\.name\s+(?:str\s+)?=\s+(.+)", text):  # the loader's kv dump or print_meta's line
        s["model"] = safe_model(g.group(1))
    if g := _search(r"(?:file type|model ftype)\s+=\s+(\S+)(?: - (Small|Medium|Large))?", text):
        size = {"Small": "_s", "Medium": "_m", "Large": "_l"}.get(g.group(2) or "", "")
        s["quantization"] = "gguf:" + g.group(1).lower() + size
    if g := _search(r"n_ctx\s+=\s+(\d+)", text):
        s["max_model_len"] = int(g.group(1))
    if g := _search(r"n_seq_max\s+=\s+(\d+)", text):
        s["parallel"] = int(g.group(1))
    weights = _mib(r"CUDA\d+ model buffer size", text) or _mib(r"Metal(?:_Mapped)? model buffer size", text)
    if weights is not None:
        m["weights_gib"] = round(weights, 3)
    kv = _mib(r"CUDA\d+ KV buffer size", text) or _mib(r"Metal KV buffer size", text)
    if kv is not None:
        m["kv_cache_gib"] = round(kv, 3)
    compute = _mib(r"CUDA\d+ compute buffer size", text) or _mib(r"Metal compute buffer size", text)
    if compute is not None:
        m["activation_peak_gib"] = round(compute, 3)


def _nvidia_smi(text: str, r: LogReading) -> None:
    used = [(_f(a), _f(b)) for a, b in re.findall(r"(\d+)MiB\s*/\s*(\d+)MiB", text)]
    if used:
        r.measured["used_gib"] = round(max(u for u, _ in used) / 1024, 2)
        r.settings["gpu_total_gib"] = round(max(t for _, t in used) / 1024, 2)
        r.settings["gpu_count"] = len(used)
    if g := _search(r"\|\s+\d+\s+(NVIDIA [A-Za-z0-9 -]+?)\s{2,}", text):
        r.settings["gpu"] = g.group(1).replace("NVIDIA ", "").strip()


def _torch(text: str, r: LogReading) -> None:
    for key, name in (("allocated", "max_allocated_gib"), ("reserved", "max_reserved_gib")):
        g = _search(r"max_memory_" + key + r"[^0-9\n]*" + _NUM + r"\s*(GiB|GB|MiB|MB|B|bytes)?", text)
        if g:
            value, unit = _f(g.group(1)), (g.group(2) or "B").lower()
            scale = {"gib": 1.0, "gb": 1.0, "mib": 1 / 1024, "mb": 1 / 1024}.get(unit, 1 / 2 ** 30)
            r.measured[name] = round(value * scale, 3)


_READERS = {"vllm": _vllm, "sglang": _sglang, "tgi": _tgi, "llama.cpp": _llama_cpp, "nvidia-smi": _nvidia_smi,
            "torch": _torch}

# a launch line in the paste: env assignments, then the engine's entry point, continued over "\\" line ends
_LAUNCH = {"vllm": re.compile(r"(?:^|\s)(?:vllm\s+serve|python3?\s+-m\s+vllm\.entrypoints\.openai\.api_server)\s(.*)"),
           "sglang": re.compile(r"(?:^|\s)python3?\s+-m\s+sglang\.launch_server\s(.*)"),
           "tgi": re.compile(r"(?:^|\s)text-generation-launcher\s(.*)")}


def _launch(text: str, r: LogReading) -> None:
    """The settings of a launch command in the paste, where the log lines did not show them (setdefault)."""
    pattern = _LAUNCH.get(r.kind)
    if pattern is None:
        return
    joined = re.sub(r"\\[ \t]*\r?\n", " ", text)
    m = next((m for line in joined.splitlines() if (m := pattern.search(line))), None)
    if m is None:
        return
    try:
        args = shlex.split(m.group(1))
    except ValueError:
        return
    from engine.configs.readers.collect import Collector
    from engine.configs.readers.serving import read_flags
    from engine.configs.serving_flags import SGLANG, TGI, VLLM

    engine = {"vllm": VLLM, "sglang": SGLANG, "tgi": TGI}[r.kind]
    c = Collector("log", None)
    said, pos = read_flags(engine, args, c)
    s = r.settings
    model = c.model or (pos[0] if pos and r.kind == "vllm" else None)
    if isinstance(model, str) and model:
        s.setdefault("model", safe_model(model))
    for key, target in (("tensor_parallel", "tp"), ("pipeline_parallel", "pp")):
        if isinstance(said.get(key), int) and said[key] > 1:
            s.setdefault(target, said[key])
    for key, value in dict(c.fields.get("engine_options") or {}).items():
        if key in ("gpu_memory_utilization", "max_model_len", "max_num_seqs", "max_num_batched_tokens"):
            s.setdefault(key, value)
    for key in ("kv_cache_dtype", "quantization"):
        if isinstance(c.fields.get(key), str):
            s.setdefault(key, c.fields[key])


def read_log(text: str) -> LogReading | None:
    """What a log says; None when the text is none of the kinds read here."""
    text = re.sub(r"^\(\w+ pid=\d+\)\s*", "", text, flags=re.M)  # "(EngineCore pid=242) INFO ..."
    kind = detect(text)
    if kind is None:
        return None
    r = LogReading(kind=kind)
    _READERS[kind](text, r)
    _launch(text, r)
    return r


ENGINE = {"vllm": "vllm", "sglang": "sglang", "tgi": "tgi", "llama.cpp": "llama.cpp"}


def request_data(r: LogReading, gpu: str | None = None) -> dict[str, Any] | None:
    """The CONTRACT v2 request of the logged setup (as shared/tools/eval_serving.py builds one from a row)."""
    s = r.settings
    if r.kind not in ENGINE or not s.get("model"):
        return None
    tp, pp = int(s.get("tp") or 1), int(s.get("pp") or 1)
    ref: dict[str, Any] = {"count": tp * pp}
    if gpu:
        ref["name"] = gpu
    if s.get("gpu_total_gib"):
        ref["total_gib"] = s["gpu_total_gib"]
        ref["memory_gb"] = round(s["gpu_total_gib"] / 0.9313)
    if r.kind == "sglang" and s.get("free_at_load_gib"):
        # SGLang sizes its pool from the memory free before loading (profile_max_num_token): the card as the log saw
        # it is that free memory plus what the engine takes as held before loading, so the estimate starts from the
        # logged free memory whatever else (a desktop, another process) held the card
        from engine.schema import GpuRef
        from engine.serving.budget import GIB, sglang_held
        from engine.serving.core import gpu_choice

        choice, _ = gpu_choice(GpuRef(name=gpu, count=tp * pp) if gpu else None)
        ref["total_gib"] = round(s["free_at_load_gib"] + sglang_held(tp, bool(gpu) and choice.nvlink) / GIB, 2)
        if not gpu:
            ref.setdefault("memory_gb", round(ref["total_gib"] / 0.9313))
    opts = {k: s[k] for k in ("gpu_memory_utilization", "max_num_seqs", "max_num_batched_tokens", "max_model_len")
            if s.get(k)}
    if r.version:
        opts["engine_version"] = r.version[:40]
    if r.kind == "vllm" and "vllm_use_v1" in s:
        opts["vllm_use_v1"] = bool(s["vllm_use_v1"])
    q: dict[str, Any] = {"model": {"name": s["model"]}, "method": "inference", "serving_engine": ENGINE[r.kind],
                         "tensor_parallel": tp, "pipeline_parallel": pp, "engine_options": opts}
    if ref.get("name") or ref.get("memory_gb"):
        q["gpus"] = [ref]
    quant = s.get("quantization")
    if quant and quant not in ("None", "none"):
        q["quantization"] = quant
    kv = s.get("kv_cache_dtype")
    if kv and kv != "auto":
        q["kv_cache_dtype"] = "fp8" if "fp8" in kv else kv
    if s.get("max_model_len"):
        q["seq_len"] = s["max_model_len"]
    return q
