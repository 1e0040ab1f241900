"""A serving question read once: the model's architecture, the engine, the weight and KV formats, the context and
the users (`read_asked`), each default an assumption; the one value (`Asked`) every step of the sizing reads, or
the failed result that says why the question cannot be served.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.catalog import architecture, find_model, reference_of
from engine.catalog.ids import name_format
from engine.schema import Architecture, Assumption, Note, Request
from engine.schema.request import QUESTION_FLAGS
from engine.schema.serving import ServingArrangement, ServingResult

from .engines import tgi_defaults
from .profile import data, runs_on, supports, weight_format

DEFAULT_CONTEXT = 4096  # tokens in + out when the question names no context (shown as an assumption)
DEFAULT_OUTPUT = 512


def _context(request: Request, arch: Architecture, assumptions: list[Assumption]) -> tuple[int, int, int]:
    """(context, prompt, output): prompt + output when said, else seq_len / max_model_len, else the default."""
    from .core import DEFAULT_CONTEXT_UNKNOWN

    opts = request.engine_options
    if request.prompt_len or request.output_len:
        output = request.output_len or DEFAULT_OUTPUT
        if not request.output_len:
            assumptions.append(Assumption(key="output_len", value=output))
        prompt = request.prompt_len or max(1, (request.seq_len or DEFAULT_CONTEXT) - output)
        return prompt + output, prompt, output
    context = request.seq_len or (opts.max_model_len if opts else None)
    if context is None:
        context = DEFAULT_CONTEXT if arch.known else min(DEFAULT_CONTEXT, DEFAULT_CONTEXT_UNKNOWN)
        assumptions.append(Assumption(key="context", value=context))
    output = min(DEFAULT_OUTPUT, max(1, context // 4))
    return context, max(1, context - output), output


def _native_format(request: Request, engine: str) -> str | None:
    """The format the checkpoint ships in (models.toml native_format), when the request names none and the engine
    loads it: gpt-oss serves its MXFP4 experts, DeepSeek-V3 its block FP8, as their config.json says."""
    if request.quantization or request.bits or request.model is None or engine in ("llama.cpp", "ollama"):
        return None
    entry = find_model(request.model.name)
    fmt = entry.native_format if entry else None
    return fmt if fmt and supports(engine, fmt) else None


def _named_format(request: Request, engine: str) -> str | None:
    """The format a repository id says ("…-AWQ", "…-GPTQ-Int4", "…-FP8-Dynamic", "…-bnb-4bit"), when the request
    names none: the engine reads it from the checkpoint's quantization_config, not from a flag."""
    if request.quantization or request.bits or request.model is None:
        return None
    fmt = name_format(request.model.name)
    if fmt is None or (engine in ("llama.cpp", "ollama") and not fmt.startswith("gguf:")):
        return None
    return fmt if supports(engine, fmt) else None


def native_format_of(request: Request) -> str | None:
    """A plain inference question (no engine, no format) about a model that ships quantized: its native format."""
    if request.model is None or request.quantization or request.bits:
        return None
    entry = find_model(request.model.name)
    return entry.native_format if entry else None


def failed(name: str, errors: list[Note], assumptions: list[Assumption]) -> ServingResult:
    return ServingResult(model=name, errors=errors, assumptions=assumptions)


def _too_many(request: Request, arch: Architecture, engine: str, fmt: str, kv_dtype: str, cands: list[Any],
              users: int, context: int, max_model_len: int) -> Note:
    """More users than the largest arrangement serves: say how many the best instance serves, at most."""
    from .capacity import arrange

    most = int(data()["limits"]["max_gpus"])
    one = arrange(request, arch, engine, fmt, kv_dtype, cands, 1, context, max_model_len)
    best = 0
    for a in one:
        gpus_each = a.tensor_parallel * a.pipeline_parallel
        best = max(best, a.users_per_instance * (most // gpus_each))
    return Note(key="serving.error.users_too_many",
                 params={"users": users, "max_users": best, "max_gpus": most, "context": context})


@dataclass(frozen=True)
class Asked:
    """A serving question's settings, decided once (`_asked`): the model, engine, weight and KV formats, context and
    users every step of the sizing reads."""

    request: Request
    arch: Architecture
    engine: str
    fmt: str
    native: str | None  # the format the checkpoint ships in, when that is the one served
    kv_dtype: str
    context: int
    prompt: int
    output: int
    max_model_len: int
    users: int | None
    warnings: list[Note]

    @property
    def local(self) -> bool:
        return self.engine in ("llama.cpp", "ollama")

    def arrange(self, candidates: list[Any]) -> list[ServingArrangement]:
        """Per GPU kind of `candidates`, the arrangement that serves the users asked (engine.serving.capacity)."""
        from .capacity import arrange

        return arrange(self.request, self.arch, self.engine, self.fmt, self.kv_dtype, candidates, self.users or 1,
                       self.context, self.max_model_len, self.prompt, self.output)

    def too_many(self, candidates: list[Any], users: int) -> Note:
        return _too_many(self.request, self.arch, self.engine, self.fmt, self.kv_dtype, candidates, users,
                         self.context, self.max_model_len)

    def size(self, kinds: list[Any]) -> Any:
        """The cheapest arrangement that meets the load's promise (engine.serving.sizing), or None."""
        from .sizing import size

        return size(self.request, self.arch, self.engine, self.fmt, self.kv_dtype, kinds, self.prompt, self.output,
                    self.context, self.max_model_len)


def on_apple(request: Request) -> bool:
    """The GPUs asked are Apple Silicon (unified memory, Metal)."""
    from engine.catalog import find_gpu

    from .core import APPLE

    for ref in request.gpus[:1]:
        gpu = find_gpu(ref.name, ref.memory_gb) if ref.name else None
        if (gpu is not None and gpu.vendor.lower() == "apple") or (gpu is None and ref.name and APPLE.search(ref.name)):
            return True
    return False


def _format_not_on_gpu(request: Request, engine: str, fmt: str) -> Note | None:
    """The weight format asked has no kernels on the GPU asked (AWQ or FP8 on a V100: profile.runs_on): said, with
    the 4-bit and 16-bit formats that run there, not estimated as if it loaded."""
    from engine.catalog import find_gpu

    ref = request.gpus[0] if request.gpus else None
    gpu = find_gpu(ref.name, ref.memory_gb) if ref is not None and ref.name else None
    cc = float(gpu.compute_capability) if gpu is not None and gpu.compute_capability else None
    if gpu is None or cc is None or runs_on(engine, fmt, cc):
        return None
    needs = float(data()["min_capability"][engine][fmt])
    others = [f for f in ("gptq", "awq", "fp16") if f != fmt and supports(engine, f) and runs_on(engine, f, cc)]
    return Note(key="serving.error.format_not_on_gpu",
                params={"engine": engine, "format": fmt, "gpu": gpu.name, "capability": cc, "needs": needs,
                        "formats": others})


def read_asked(request: Request, assumptions: list[Assumption]) -> Asked | ServingResult:
    """The serving question's settings, each default an assumption; a failed result when it cannot be served."""
    from .capacity import valid_tp

    engine = request.serving_engine or "vllm"
    if on_apple(request) and engine not in ("llama.cpp", "ollama", "hf"):
        # vLLM, SGLang and TGI have no Metal backend (vLLM's platforms/: CUDA, ROCm, TPU, XPU, CPU): a Mac serves
        # through llama.cpp (Metal), said as the engine assumed and why
        engine = "llama.cpp"
        request = request.model_copy(update={"serving_engine": engine})
        assumptions.append(Assumption(key="serving_engine_apple", value=engine))
    elif request.serving_engine is None:
        assumptions.append(Assumption(key="serving_engine", value="vllm"))
    elif engine in ("tensorrt-llm", "nim"):
        # sized with vLLM V1's budget rules (no TRT-LLM profile yet)
        assumptions.append(Assumption(key="memory_model", value="vllm-v1"))
    name = request.model.name if request.model and request.model.name else "?"
    try:
        if request.model is None:
            raise ValueError("no model")
        arch = architecture(request.model)
    except ValueError:
        return failed(name, [Note(key="serving.error.unknown_model", params={"model": name})], assumptions)
    name = arch.name
    if not arch.known:
        assumptions.append(Assumption(key="architecture", value=reference_of(arch)))
    native = _native_format(request, engine) or _named_format(request, engine)
    fmt = native or weight_format(request.quantization, request.bits, engine)
    if fmt and fmt.startswith("gguf:") and not (request.quantization or request.bits):
        fmt = _published_gguf(arch.name, fmt)
    if fmt is None:
        return failed(name, [Note(key="serving.error.unknown_format",
                                   params={"quantization": request.quantization})], assumptions)
    if native:
        assumptions.append(Assumption(key="native_format", value=fmt))
    elif not request.quantization or (fmt.startswith("gguf:") and fmt.split(":", 1)[1] not in request.quantization
                                      .lower().replace("gguf:", "")):
        # none said, or "q4" read as its usual mix (Q4_K_M)
        assumptions.append(Assumption(key="weight_format", value=fmt))
    if not supports(engine, fmt):
        engines = [e for e in data()["support"] if e != "source" and supports(e, fmt)]
        return failed(name, [Note(key="serving.error.format_not_supported",
                                   params={"engine": engine, "format": fmt, "engines": engines})], assumptions)
    slow = _format_not_on_gpu(request, engine, fmt)
    if slow is not None:
        return failed(name, [slow], assumptions)
    lengths = _lengths(request, arch, assumptions)
    if isinstance(lengths, ServingResult):
        return lengths
    context, prompt, output, max_model_len, warnings = lengths
    users = request.concurrency or (request.batch_size if request.method == "inference" else None)
    if request.tensor_parallel is not None and request.tensor_parallel not in valid_tp(arch, engine, 1 << 20) \
            and (arch.heads % request.tensor_parallel or
                 (arch.kv_heads % request.tensor_parallel and request.tensor_parallel % arch.kv_heads)):
        return failed(name, [Note(key="serving.error.tp_not_divisor",
                                   params={"tensor_parallel": request.tensor_parallel, "heads": arch.heads,
                                           "kv_heads": arch.kv_heads,
                                           "valid": valid_tp(arch, engine, max(8, request.tensor_parallel))})],
                      assumptions)
    return Asked(request, arch, engine, fmt, native, _kv_dtype(request, engine), context, prompt, output,
                 max_model_len, users, warnings)


def _published_gguf(model: str, fmt: str) -> str:
    """The GGUF type assumed when none was said: the usual Q4_K_M, unless the model's published GGUF repository has
    no such file (gpt-oss ships MXFP4 only: ggml-org/gpt-oss-20b-GGUF), then the type it has."""
    from engine.catalog.checkpoints import checkpoint

    ck = checkpoint(model, "gguf")
    types = [t.lower() for t in ck.types] if ck is not None else []
    return fmt if not types or fmt.split(":", 1)[1] in types else "gguf:" + types[0]


def _kv_dtype(request: Request, engine: str) -> str:
    """The KV cache's dtype: as said (llama.cpp / Ollama name theirs q8_0 / q4_0), else the engine's default."""
    local = engine in ("llama.cpp", "ollama")
    kv_dtype: str = request.kv_cache_dtype or ("f16" if local else "auto")
    if local and kv_dtype in ("int8", "fp8"):
        kv_dtype = "q8_0"
    elif local and kv_dtype == "int4":
        kv_dtype = "q4_0"
    return kv_dtype


def _lengths(request: Request, arch: Architecture,
             assumptions: list[Assumption]) -> tuple[int, int, int, int, list[Note]] | ServingResult:
    """(context, prompt, output, max_model_len, warnings); a failed result for a context beyond the model's own."""
    context, prompt, output = _context(request, arch, assumptions)
    limit = arch.max_position_embeddings if arch.known else None
    opts = request.engine_options
    max_model_len = (opts.max_model_len if opts and opts.max_model_len else None) or context
    said_context = bool(request.seq_len or request.prompt_len or request.output_len)
    whole_config = QUESTION_FLAGS not in request.assumed  # a launch line or config, not a question's few flags
    if opts is not None and whole_config and not opts.max_model_len and not said_context and limit:
        # an engine configuration without max_model_len: vLLM / SGLang take the model's own limit; TGI's launcher
        # before 3.0 caps it (max_total_tokens: 2048 in 1.x, min(model, 4096) in 2.x; serving.toml [tgi] defaults)
        max_model_len = limit
        tgi_total = tgi_defaults(opts.engine_version)[0] if request.serving_engine == "tgi" else 0
        if tgi_total:
            max_model_len = min(limit, tgi_total)
    if not (opts and opts.max_model_len):
        assumptions.append(Assumption(key="max_model_len", value=max_model_len))
    warnings: list[Note] = []
    if limit and max(context, max_model_len) > limit:
        beyond = {"context": max(context, max_model_len), "limit": limit, "model": arch.name}
        if not (opts and opts.max_model_len and opts.max_model_len >= context):
            return failed(arch.name, [Note(key="serving.error.context_beyond_model", params=beyond)],
                          assumptions)
        # a power user set max_model_len past the model's limit (RoPE scaling, VLLM_ALLOW_LONG_MAX_MODEL_LEN)
        warnings.append(Note(key="serving.warning.beyond_model_context", params=beyond))
    return context, prompt, output, max_model_len, warnings


