"""The serving engines' flags, each declared once: its names, the setting it carries, how a reader turns the text
into that setting and how a writer turns a job into the text. readers/serving.py and writers/serving.py both walk
these tables, so a flag the writer emits is one the reader understands. Flag names: options/vllm.txt,
options/sglang.txt, options/llama_cpp.txt (the engines' own argument parsers)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.configs.common import as_float, as_int, quant_word
from engine.configs.model import ConfigJob

BAD = object()  # a reader's value it does not understand: the flag is listed as not understood
UNSAID = object()  # a job's setting the engine has no value for: the writer notes `not_expressible:<field>=<value>`

Read = Callable[[str], Any]
Write = Callable[[ConfigJob], Any]


@dataclass(frozen=True)
class Flag:
    """One flag. `field` names what it says (a request field, or the reader's own word: tensor_parallel, ctx, ...);
    `read` gives its value from the flag's text, `write` the text for a job (None: not written)."""

    names: tuple[str, ...]  # the first is the one written; every one is read
    field: str | None  # None: says nothing the estimate uses (read and dropped)
    read: Read = str
    write: Write = lambda job: None
    positional: bool = False  # written bare (`vllm serve MODEL`); the first positional argument is read as it
    report: str | None = None  # the name a value not understood is listed under (default: the flag as written)


@dataclass(frozen=True)
class Engine:
    name: str  # serving_engine
    tool: str  # options/<tool>.txt
    program: tuple[str, ...]  # the argv before the flags
    file: str  # the written script's name
    flags: tuple[Flag, ...]  # in the order the writer writes them
    snake: bool  # a known flag with no mapping is listed under its Python name (vLLM, SGLang argparse dests)

    def by_name(self) -> dict[str, Flag]:
        return {name: flag for flag in self.flags for name in flag.names}


def tp(job: ConfigJob) -> int:
    return job.tensor_parallel or max(1, job.gpu_count // (job.pipeline_parallel or 1))


def _int_or_one(v: str) -> int:
    return as_int(v) or 1


def _pp(job: ConfigJob) -> str | None:
    return str(job.pipeline_parallel) if job.pipeline_parallel and job.pipeline_parallel > 1 else None


def _dp(job: ConfigJob) -> str | None:
    return str(job.replicas) if job.replicas > 1 else None


def _batched(job: ConfigJob) -> str | None:
    return str(job.max_num_batched_tokens) if job.max_num_batched_tokens else None


def _concurrency(job: ConfigJob) -> str | None:
    return str(job.concurrency) if job.concurrency else None


def _memory(job: ConfigJob) -> str:
    return str(job.gpu_memory_utilization or 0.9)


def _model(v: str) -> tuple[str, str | None]:
    return v, None


def _quant_write(job: ConfigJob) -> str | None:
    """--quantization only where the engine quantizes bf16 weights on load (FP8, bitsandbytes): a repository that
    holds AWQ/GPTQ/FP8/bnb weights says so in its config.json, and `--quantization awq` would only turn off the
    faster awq_marlin kernels (vLLM's quantization override check)."""
    from engine.catalog.checkpoints import format_of_repo

    return None if format_of_repo(job.model) else quant_word(job)


def _dtype(job: ConfigJob) -> str | None:
    """--dtype half on GPUs without bf16 (T4, V100: gpus.toml `bf16`); vLLM refuses bf16 weights there."""
    from engine.catalog import find_gpu

    gpu = find_gpu(job.gpu_name) if job.gpu_name else None
    return "half" if gpu is not None and not gpu.bf16 else None


def _quant_read(v: str) -> Any:
    """vLLM's and SGLang's --quantization → (quantization, bits)."""
    q = v.lower()
    if q in ("awq", "awq_marlin", "gptq", "gptq_marlin"):
        return q.split("_")[0], 4
    if q in ("fp8", "mxfp4"):
        return q, 8 if q == "fp8" else 4
    if q == "bitsandbytes":
        return "nf4", 4
    return BAD


def _kv(written: dict[str, str], plain: tuple[str, ...]) -> tuple[Read, Write]:
    """--kv-cache-dtype: fp8* is fp8, `plain` values are the model's own dtype; `written` maps the job's dtypes."""

    def read(v: str) -> Any:
        if v.startswith("fp8"):
            return "fp8"
        return None if v in plain else BAD

    def write(job: ConfigJob) -> Any:
        if not job.kv_cache_dtype:
            return None
        return written.get(job.kv_cache_dtype, UNSAID)

    return read, write


VLLM_KV = _kv({"fp8": "fp8", "bf16": "auto"}, ("auto",))
SGLANG_KV = _kv({"fp8": "fp8_e4m3", "bf16": "auto"}, ("auto", "bf16", "bfloat16"))


def _common(model: Flag, tp_: tuple[str, ...], pp_: tuple[str, ...], dp_: tuple[str, ...], seq: str, conc: str,
            batched: str, memory: str, kv: tuple[Read, Write], quant: tuple[str, ...],
            eager: str) -> tuple[Flag, ...]:
    """vLLM and SGLang carry the same settings under their own flag names."""
    return (
        model,
        Flag(tp_, "tensor_parallel", _int_or_one, lambda job: str(tp(job))),
        Flag(pp_, "pipeline_parallel", _int_or_one, _pp),
        # data parallel: that many copies of the TP x PP instance behind one endpoint (the answer's replicas)
        Flag(dp_, "data_parallel", _int_or_one, _dp),
        Flag((seq,), "seq_len", as_int, lambda job: str(job.seq_len)),
        Flag((conc,), "concurrency", as_int, _concurrency),
        Flag((batched,), "max_num_batched_tokens", as_int, _batched),
        Flag((memory,), "gpu_memory_utilization", as_float, _memory),
        Flag(("--kv-cache-dtype",), "kv_cache_dtype", *kv),
        Flag(quant, "quantization", _quant_read, _quant_write, report="--quantization"),
        Flag(("--dtype",), None, write=_dtype),  # half and bf16 weigh the same: read and dropped
        # no CUDA graphs: their memory is not taken (read; the writer leaves graphs on)
        Flag((eager,), "enforce_eager", lambda v: True),
    )


VLLM = Engine("vllm", "vllm", ("vllm", "serve"), "vllm_serve.sh", _common(
    Flag(("--model",), "model", _model, lambda job: job.model, positional=True),
    ("--tensor-parallel-size", "-tp"), ("--pipeline-parallel-size", "-pp"), ("--data-parallel-size",),
    "--max-model-len", "--max-num-seqs", "--max-num-batched-tokens", "--gpu-memory-utilization", VLLM_KV,
    ("--quantization", "-q"), "--enforce-eager"), snake=True)

SGLANG = Engine("sglang", "sglang", ("python", "-m", "sglang.launch_server"), "sglang_serve.sh", _common(
    Flag(("--model-path", "--model"), "model", _model, lambda job: job.model),
    ("--tp-size", "--tensor-parallel-size", "--tp"), ("--pp-size", "--pipeline-parallel-size"),
    ("--dp-size", "--data-parallel-size"), "--context-length", "--max-running-requests",
    "--chunked-prefill-size", "--mem-fraction-static", SGLANG_KV, ("--quantization",), "--disable-cuda-graph"),
    snake=True)


def gguf_type(job: ConfigJob) -> str:
    """The GGUF type that keeps the weight precision the estimate assumed (a GGUF repository must offer it)."""
    q = (job.quantization or "").lower()
    bits = 4 if q in ("awq", "gptq", "nf4", "mxfp4", "nvfp4") else 8 if q in ("int8", "fp8") else job.bits
    return {4: "Q4_K_M", 8: "Q8_0"}.get(bits, "BF16")


def gguf_file(job: ConfigJob) -> str | None:
    return job.model if job.model.lower().endswith(".gguf") else None


def gguf_tag(job: ConfigJob) -> str:
    """The type after `-hf repo:`: the one the job names (gguf:<type>), else the one that keeps its precision."""
    quant = job.quantization or ""
    return quant.split(":", 1)[1].upper() if quant.startswith("gguf:") else gguf_type(job)


def _slots(job: ConfigJob) -> int:
    return job.concurrency or 1


def _file_read(v: str) -> tuple[str, str | None]:
    m = re.search(r"(q\d_k_[sml]|q\d_k|q\d_\d|iq\d_\w+|f16|bf16|q8_0)", v.lower())
    return v, f"gguf:{m.group(1)}" if m else None


def _repo_read(v: str) -> tuple[str, str]:
    repo, _, tag = v.partition(":")
    return repo, f"gguf:{(tag or 'Q4_K_M').lower()}"


LLAMA_KV_READ = {"q8_0": "int8", "q4_0": "int4", "q4_1": "int4", "f16": "bf16", "bf16": "bf16"}
LLAMA_KV_WRITE = {"int8": "q8_0", "int4": "q4_0", "bf16": "f16"}


def _llama_kv_read(v: str) -> Any:
    return LLAMA_KV_READ.get(v.lower(), BAD)


def _llama_kv_write(job: ConfigJob) -> Any:
    return LLAMA_KV_WRITE.get(job.kv_cache_dtype, UNSAID) if job.kv_cache_dtype else None


def _split_count(v: str) -> int:
    return len([p for p in re.split(r"[,/]+", v) if p.strip()])


def _many(job: ConfigJob, text: str) -> str | None:
    return text if job.gpu_count > 1 else None


# llama-server splits -c over -np slots (each sequence gets ctx/np tokens): -c = context x concurrency
LLAMA_SERVER = Engine("llama.cpp", "llama_cpp", ("llama-server",), "llama_server.sh", (
    Flag(("-m", "--model"), "model", _file_read, gguf_file),
    Flag(("-hf", "-hfr", "--hf-repo"), "model", _repo_read,
         lambda job: None if gguf_file(job) else job.model),  # the writer resolves repo:TYPE
    Flag(("-c", "--ctx-size"), "ctx", as_int, lambda job: str(job.seq_len * _slots(job))),
    Flag(("-np", "--parallel"), "slots", _int_or_one, lambda job: str(_slots(job))),
    # 999: every layer (and the output layer) on the GPU; fewer only where the answer left some in host RAM
    Flag(("-ngl", "--gpu-layers", "--n-gpu-layers"), None,
         write=lambda job: "999" if job.gpu_layers is None else str(job.gpu_layers)),
    Flag(("-fa", "--flash-attn"), "flash_attention", lambda v: v.lower() != "off",
         lambda job: "on" if job.flash_attention else "off"),
    Flag(("-ctk", "--cache-type-k"), "kv_cache_dtype", _llama_kv_read, _llama_kv_write),
    Flag(("-ctv", "--cache-type-v"), "kv_cache_dtype", _llama_kv_read, _llama_kv_write),
    Flag(("-sm", "--split-mode"), None, write=lambda job: _many(job, "layer")),
    Flag(("-ts", "--tensor-split"), "gpu_count", _split_count, lambda job: _many(job, ",".join(["1"] * job.gpu_count))),
    Flag(("-hft", "--hf-token"), "secret"),
), snake=False)


# TGI's --quantize (launcher/src/main.rs `Quantization`) → (quantization, bits)
TGI_QUANT = {"awq": ("awq", 4), "gptq": ("gptq", 4), "marlin": ("gptq", 4), "fp8": ("fp8", 8), "eetq": ("int8", 8),
             "bitsandbytes": ("int8", 8), "bitsandbytes-nf4": ("nf4", 4), "bitsandbytes-fp4": ("nf4", 4)}


def _tgi_quant(v: str) -> Any:
    return TGI_QUANT.get(v.lower(), BAD)


def _tgi_kv(v: str) -> Any:
    return "fp8" if v.lower().startswith("fp8") else BAD


# read only (the launch command the serving answer gives for TGI is engine/serving/command.py's)
TGI = Engine("tgi", "tgi", ("text-generation-launcher",), "tgi_serve.sh", (
    Flag(("--model-id",), "model", _model),
    Flag(("--num-shard",), "tensor_parallel", _int_or_one),
    Flag(("--max-total-tokens",), "seq_len", as_int),
    Flag(("--max-concurrent-requests",), "concurrency", as_int),
    Flag(("--max-batch-prefill-tokens",), "max_num_batched_tokens", as_int),
    Flag(("--cuda-memory-fraction",), "gpu_memory_utilization", as_float),
    Flag(("--quantize",), "quantization", _tgi_quant),
    Flag(("--kv-cache-dtype",), "kv_cache_dtype", _tgi_kv),
    Flag(("--dtype",), None), Flag(("--max-input-tokens", "--max-input-length"), None),
    Flag(("--api-key",), "secret"),
), snake=False)
