"""Serving command lines: `vllm serve`, SGLang `launch_server`, `llama-server`, read through the engines' flag
tables (engine/configs/serving_flags.py, shared with the writers; flag names: options/vllm.txt, options/sglang.txt,
options/llama_cpp.txt)."""

from __future__ import annotations

import re
from typing import Any

from engine.configs.common import as_int
from engine.configs.options import known
from engine.configs.readers.collect import Collector
from engine.configs.readers.flags import flags
from engine.configs.serving_flags import BAD, LLAMA_SERVER, SGLANG, TGI, VLLM, Engine


def _engine_options(c: Collector, **values: object) -> None:
    opts = dict(c.fields.get("engine_options") or {})
    opts.update({k: v for k, v in values.items() if v is not None})
    c.fields["engine_options"] = opts


def _apply(c: Collector, said: dict[str, Any], field: str, value: Any) -> None:
    """What one flag's value does to the request (or to what the engine's finish step reads: `said`)."""
    if field == "model":
        c.model, quantization = value
        c.set("quantization", quantization)
        if quantization and quantization.startswith("gguf:"):
            c.set("bits", gguf_bits(quantization))
    elif field == "seq_len":
        c.set("seq_len", value)
        _engine_options(c, max_model_len=value)
    elif field == "concurrency":
        # vLLM's --max-num-seqs / SGLang's --max-running-requests cap the batch; the engine reserves no KV for them
        # (vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory: the pool must hold ONE request of
        # max_model_len to start): how many run at once is what the pool holds, said in the answer
        _engine_options(c, max_num_seqs=value)
    elif field == "gpu_memory_utilization":
        _engine_options(c, gpu_memory_utilization=value)
    elif field == "max_num_batched_tokens":
        _engine_options(c, max_num_batched_tokens=value)
    elif field == "quantization":
        c.set("quantization", value[0])
        c.set("bits", value[1])
    elif field == "gpu_count":
        c.gpu_count = value
    elif field in ("kv_cache_dtype", "flash_attention", "enforce_eager"):
        c.set(field, value)
    else:
        said[field] = value  # tensor_parallel, pipeline_parallel, ctx, slots


def _read(engine: Engine, args: list[str], c: Collector) -> dict[str, Any]:
    """Every flag through the engine's table; flags it lacks are listed (known ones only when memory-relevant)."""
    c.fields.pop("framework", None)  # a serving engine is not a training framework: `serving_engine` says it
    c.set("method", "inference")
    c.set("serving_engine", engine.name)
    said, pos = read_flags(engine, args, c)
    if pos and any(f.positional for f in engine.flags):
        c.model = pos[0]
    _format_from_repo(c)
    return said


def read_flags(engine: Engine, args: list[str], c: Collector) -> tuple[dict[str, Any], list[str]]:
    """The flags through the engine's table (what each sets, in `c` or the returned `said`), and the positional
    arguments; a flag the table lacks is listed (as without effect when it has no bearing on memory)."""
    fl, pos = flags(args)
    table = engine.by_name()
    names = known(engine.tool)
    said: dict[str, Any] = {}
    for key, value in fl.items():
        flag = table.get(key)
        if flag is None:
            if key in names:
                c.unknown(key.lstrip("-").replace("-", "_") if engine.snake else key, value)
            else:
                c.other(key, value)
        elif flag.field == "secret":
            c.secret(key, value)
        elif flag.field is not None:
            got = flag.read(value if isinstance(value, str) else "")
            if got is BAD:
                c.ignore(flag.report or key)
            else:
                _apply(c, said, flag.field, got)
    return said, pos


# a repository's format (its name: -AWQ, -GPTQ-Int4, -FP8, -bnb-4bit) → (quantization, bits) of the request
REPO_QUANT = {"awq": ("awq", 4), "gptq": ("gptq", 4), "fp8": ("fp8", 8), "bnb-4bit": ("nf4", 4), "mxfp4": ("mxfp4", 4)}


def gguf_bits(quantization: str) -> int:
    """The request's `bits` for a GGUF type (the estimate's bits are 4, 8 or 16): Q2-Q5 K-quants and IQ types are
    4-bit class, Q6_K and Q8_0 8-bit class, F16/BF16 16 (the serving estimate reads the exact type itself)."""
    t = quantization.split(":", 1)[1]
    if t in ("f16", "bf16"):
        return 16
    return 8 if t.startswith(("q6", "q8")) else 4


def _format_from_repo(c: Collector) -> None:
    """The weights a repository holds, when no flag said the format: `Qwen/Qwen2.5-72B-Instruct-AWQ` is AWQ 4-bit."""
    from engine.catalog.checkpoints import format_of_repo

    fmt = format_of_repo(c.model) if isinstance(c.model, str) else None
    if "quantization" not in c.fields and fmt in REPO_QUANT:
        c.set("quantization", REPO_QUANT[fmt][0])
        c.set("bits", REPO_QUANT[fmt][1])


def _parallel(engine: Engine, args: list[str], c: Collector) -> None:
    said = _read(engine, args, c)
    tp, pp = said.get("tensor_parallel", 1), said.get("pipeline_parallel", 1)
    c.set("tensor_parallel", tp)
    c.set("pipeline_parallel", pp if pp > 1 else None)
    c.gpu_count = tp * pp * said.get("data_parallel", 1)  # data parallel: copies of the TP x PP instance


def _vllm(args: list[str], c: Collector) -> None:
    _parallel(VLLM, args, c)


def _sglang(args: list[str], c: Collector) -> None:
    _parallel(SGLANG, args, c)


def _tgi(args: list[str], c: Collector) -> None:
    _parallel(TGI, args, c)


# `ollama run qwen2.5:32b`: the library's tags are Q4_K_M unless the tag names another type (ollama.com/library)
OLLAMA_TYPE = re.compile(r"(q\d_k_[sml]|q\d_\d|fp16|f16|bf16)$")


def _ollama(args: list[str], c: Collector, env: dict[str, str]) -> None:
    """`ollama run|pull|serve [model]` with the server's OLLAMA_* variables (the ones the Ollama writer sets)."""
    c.fields.pop("framework", None)
    c.set("method", "inference")
    c.set("serving_engine", "ollama")
    names = [a for a in args[1:] if not a.startswith("-")] if args[:1] in (["run"], ["pull"]) else []
    if names:
        name, _, tag = names[0].partition(":")
        size = re.match(r"(\d+(?:\.\d+)?b)", tag.lower())
        c.model = f"{name}-{size.group(1)}" if size else name
        t = OLLAMA_TYPE.search(tag.lower())
        kind = t.group(1).replace("fp16", "f16") if t else "q4_k_m"
        c.set("quantization", f"gguf:{kind}")
        c.set("bits", gguf_bits(f"gguf:{kind}"))
    c.ignored[:] = [k for k in c.ignored if k not in ("env:OLLAMA_CONTEXT_LENGTH", "env:OLLAMA_NUM_PARALLEL")]
    ctx, slots = as_int(env.get("OLLAMA_CONTEXT_LENGTH")), as_int(env.get("OLLAMA_NUM_PARALLEL"))
    if ctx:
        c.set("seq_len", ctx)
        _engine_options(c, max_model_len=ctx)
    if slots:
        c.set("concurrency", slots)
        _engine_options(c, max_num_seqs=slots)
    c.gpu_count = c.gpu_count or 1


def _llama_server(args: list[str], c: Collector) -> None:
    said = _read(LLAMA_SERVER, args, c)
    ctx, slots = said.get("ctx"), said.get("slots", 1)
    if ctx:
        per = ctx // slots if ctx >= slots else ctx
        c.set("seq_len", per)
        _engine_options(c, max_model_len=per)
    c.set("concurrency", slots)
    _engine_options(c, max_num_seqs=slots)
    c.gpu_count = c.gpu_count or 1
