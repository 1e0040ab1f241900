"""Serving command lines: `vllm serve`, SGLang `launch_server`, `llama-server` (flags: options/vllm.txt,
options/sglang.txt, options/llama_cpp.txt)."""

from __future__ import annotations

import shlex

from engine.configs.common import header, quant_word
from engine.configs.model import ConfigFile, ConfigJob, ConfigOutput

VLLM_KV = {"fp8": "fp8", "bf16": "auto"}
SGLANG_KV = {"fp8": "fp8_e4m3", "bf16": "auto"}
LLAMA_KV = {"int8": "q8_0", "int4": "q4_0", "bf16": "f16"}


def _out(job: ConfigJob, framework: str, name: str, argv: list[str], notes: list[str]) -> ConfigOutput:
    cmd = shlex.join(argv)
    text = "\n".join(header(job, framework)) + "\n" + cmd + "\n"
    return ConfigOutput(framework=framework, files=[ConfigFile(name=name, text=text)], command=cmd,
                        estimate_gib=job.estimate_gib, notes=notes)


def _tp(job: ConfigJob) -> int:
    return job.tensor_parallel or max(1, job.gpu_count // (job.pipeline_parallel or 1))


def vllm(job: ConfigJob) -> ConfigOutput:
    notes: list[str] = []
    argv = ["vllm", "serve", job.model, "--tensor-parallel-size", str(_tp(job))]
    if job.pipeline_parallel and job.pipeline_parallel > 1:
        argv += ["--pipeline-parallel-size", str(job.pipeline_parallel)]
    argv += ["--max-model-len", str(job.seq_len)]
    if job.concurrency:
        argv += ["--max-num-seqs", str(job.concurrency)]
    argv += ["--gpu-memory-utilization", str(job.gpu_memory_utilization or 0.9)]
    if job.kv_cache_dtype:
        if job.kv_cache_dtype in VLLM_KV:
            argv += ["--kv-cache-dtype", VLLM_KV[job.kv_cache_dtype]]
        else:
            notes.append(f"not_expressible:kv_cache_dtype={job.kv_cache_dtype}")
    q = quant_word(job)
    if q:
        argv += ["--quantization", q]
    if (job.quantization or "").startswith("gguf:"):
        notes.append("not_expressible:gguf in vllm (serve the GGUF file with llama-server)")
    return _out(job, "vllm", "vllm_serve.sh", argv, notes)


def sglang(job: ConfigJob) -> ConfigOutput:
    notes: list[str] = []
    argv = ["python", "-m", "sglang.launch_server", "--model-path", job.model, "--tp-size", str(_tp(job))]
    if job.pipeline_parallel and job.pipeline_parallel > 1:
        argv += ["--pp-size", str(job.pipeline_parallel)]
    argv += ["--context-length", str(job.seq_len)]
    if job.concurrency:
        argv += ["--max-running-requests", str(job.concurrency)]
    argv += ["--mem-fraction-static", str(job.gpu_memory_utilization or 0.9)]
    if job.kv_cache_dtype:
        if job.kv_cache_dtype in SGLANG_KV:
            argv += ["--kv-cache-dtype", SGLANG_KV[job.kv_cache_dtype]]
        else:
            notes.append(f"not_expressible:kv_cache_dtype={job.kv_cache_dtype}")
    q = quant_word(job)
    if q:
        argv += ["--quantization", q]
    return _out(job, "sglang", "sglang_serve.sh", argv, notes)


def gguf_type(job: ConfigJob) -> str:
    """The GGUF type that keeps the weight precision the estimate assumed (a GGUF repository must offer it)."""
    q = (job.quantization or "").lower()
    bits = 4 if q in ("awq", "gptq", "nf4", "mxfp4", "nvfp4") else 8 if q in ("int8", "fp8") else job.bits
    return {4: "Q4_K_M", 8: "Q8_0"}.get(bits, "BF16")


def llama_cpp(job: ConfigJob) -> ConfigOutput:
    """llama-server splits -c over -np slots (each sequence gets ctx/np tokens): -c = context x concurrency."""
    notes: list[str] = []
    quant = (job.quantization or "")
    model = job.model if job.model.lower().endswith(".gguf") else None
    slots = job.concurrency or 1
    argv = ["llama-server"]
    if model:
        argv += ["-m", model]
    else:
        tag = quant.split(":", 1)[1].upper() if quant.startswith("gguf:") else gguf_type(job)
        if not quant.startswith("gguf:"):
            notes.append(f"gguf_type_assumed:{tag}")
        argv += ["-hf", f"{job.model}:{tag}"]
    argv += ["-c", str(job.seq_len * slots), "-np", str(slots), "-ngl", "999", "-fa", "on" if job.flash_attention
             else "off"]
    if job.kv_cache_dtype:
        if job.kv_cache_dtype in LLAMA_KV:
            argv += ["-ctk", LLAMA_KV[job.kv_cache_dtype], "-ctv", LLAMA_KV[job.kv_cache_dtype]]
        else:
            notes.append(f"not_expressible:kv_cache_dtype={job.kv_cache_dtype}")
    if job.gpu_count > 1:
        argv += ["-sm", "layer", "-ts", ",".join(["1"] * job.gpu_count)]
    return _out(job, "llama.cpp", "llama_server.sh", argv, notes)
