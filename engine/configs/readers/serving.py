"""Serving command lines: `vllm serve`, SGLang `launch_server`, `llama-server` (flags: options/vllm.txt,
options/sglang.txt, options/llama_cpp.txt)."""

from __future__ import annotations

import re

from engine.configs.options import known
from engine.configs.readers.collect import Collector, as_float, as_int
from engine.configs.readers.flags import flags


def _serving(c: Collector, engine: str) -> None:
    """A serving engine is not a training framework: `serving_engine` says it, `framework` stays unsaid."""
    c.fields.pop("framework", None)
    c.set("method", "inference")
    c.set("serving_engine", engine)


def _quant(c: Collector, value: str) -> None:
    q = value.lower()
    if q in ("awq", "awq_marlin", "gptq", "gptq_marlin"):
        c.set("quantization", q.split("_")[0])
        c.set("bits", 4)
    elif q in ("fp8", "mxfp4"):
        c.set("quantization", q)
        c.set("bits", 8 if q == "fp8" else 4)
    elif q == "bitsandbytes":
        c.set("quantization", "nf4")
        c.set("bits", 4)
    else:
        c.ignore("--quantization")


def _engine_options(c: Collector, **values: object) -> None:
    opts = dict(c.fields.get("engine_options") or {})
    opts.update({k: v for k, v in values.items() if v is not None})
    c.fields["engine_options"] = opts


def _vllm(args: list[str], c: Collector) -> None:
    _serving(c, "vllm")
    fl, pos = flags(args)
    names = known("vllm")
    if pos:
        c.model = pos[0]
    tp = pp = 1
    for key, value in fl.items():
        v = value if isinstance(value, str) else ""
        if key in ("--tensor-parallel-size", "-tp"):
            tp = as_int(v) or 1
        elif key in ("--pipeline-parallel-size", "-pp"):
            pp = as_int(v) or 1
        elif key == "--max-model-len":
            c.set("seq_len", as_int(v))
            _engine_options(c, max_model_len=as_int(v))
        elif key == "--max-num-seqs":
            c.set("concurrency", as_int(v))
            _engine_options(c, max_num_seqs=as_int(v))
        elif key == "--gpu-memory-utilization":
            _engine_options(c, gpu_memory_utilization=as_float(v))
        elif key == "--kv-cache-dtype":
            if v.startswith("fp8"):
                c.set("kv_cache_dtype", "fp8")
            elif v != "auto":
                c.ignore(key)
        elif key in ("--quantization", "-q"):
            _quant(c, v)
        elif key == "--model":
            c.model = v
        elif key in names:
            c.unknown(key.lstrip("-").replace("-", "_"), value)
        else:
            c.other(key, value)
    c.set("tensor_parallel", tp)
    c.set("pipeline_parallel", pp if pp > 1 else None)
    c.gpu_count = tp * pp


def _sglang(args: list[str], c: Collector) -> None:
    _serving(c, "sglang")
    fl, _ = flags(args)
    names = known("sglang")
    tp = pp = 1
    for key, value in fl.items():
        v = value if isinstance(value, str) else ""
        if key in ("--model-path", "--model"):
            c.model = v
        elif key in ("--tp-size", "--tensor-parallel-size"):
            tp = as_int(v) or 1
        elif key in ("--pp-size", "--pipeline-parallel-size"):
            pp = as_int(v) or 1
        elif key == "--context-length":
            c.set("seq_len", as_int(v))
            _engine_options(c, max_model_len=as_int(v))
        elif key == "--max-running-requests":
            c.set("concurrency", as_int(v))
            _engine_options(c, max_num_seqs=as_int(v))
        elif key == "--mem-fraction-static":
            _engine_options(c, gpu_memory_utilization=as_float(v))
        elif key == "--kv-cache-dtype":
            if v.startswith("fp8"):
                c.set("kv_cache_dtype", "fp8")
            elif v not in ("auto", "bf16", "bfloat16"):
                c.ignore(key)
        elif key == "--quantization":
            _quant(c, v)
        elif key in names:
            c.unknown(key.lstrip("-").replace("-", "_"), value)
        else:
            c.other(key, value)
    c.set("tensor_parallel", tp)
    c.set("pipeline_parallel", pp if pp > 1 else None)
    c.gpu_count = tp * pp


LLAMA_KV = {"q8_0": "int8", "q4_0": "int4", "q4_1": "int4", "f16": "bf16", "bf16": "bf16"}


def _llama_server(args: list[str], c: Collector) -> None:
    _serving(c, "llama.cpp")
    fl, _ = flags(args)
    names = known("llama_cpp")
    ctx, slots = None, 1
    for key, value in fl.items():
        v = value if isinstance(value, str) else ""
        if key in ("-m", "--model"):
            c.model = v
            m = re.search(r"(q\d_k_[sml]|q\d_k|q\d_\d|iq\d_\w+|f16|bf16|q8_0)", v.lower())
            if m:
                c.set("quantization", f"gguf:{m.group(1)}")
        elif key in ("-hf", "-hfr", "--hf-repo"):
            repo, _, tag = v.partition(":")
            c.model = repo
            c.set("quantization", f"gguf:{(tag or 'Q4_K_M').lower()}")
        elif key in ("-c", "--ctx-size"):
            ctx = as_int(v)
        elif key in ("-np", "--parallel"):
            slots = as_int(v) or 1
        elif key in ("-fa", "--flash-attn"):
            c.set("flash_attention", v.lower() != "off")
        elif key in ("-ctk", "--cache-type-k", "-ctv", "--cache-type-v"):
            if v.lower() in LLAMA_KV:
                c.set("kv_cache_dtype", LLAMA_KV[v.lower()])
            else:
                c.ignore(key)
        elif key in ("-ts", "--tensor-split"):
            c.gpu_count = len([p for p in re.split(r"[,/]+", v) if p.strip()])
        elif key in ("-hft", "--hf-token"):
            c.secret(key, value)
        elif key in ("-ngl", "--gpu-layers", "--n-gpu-layers", "-sm", "--split-mode"):
            continue
        elif key in names:
            c.unknown(key, value)
        else:
            c.other(key, value)
    if ctx:
        per = ctx // slots if ctx >= slots else ctx
        c.set("seq_len", per)
        _engine_options(c, max_model_len=per)
    c.set("concurrency", slots)
    _engine_options(c, max_num_seqs=slots)
    c.gpu_count = c.gpu_count or 1
