"""«какую модель можно запустить на 4090», "what model fits a 3090": the largest model of each precision (or of the
method said) the GPUs asked hold, found by asking the engine's own answer about models of typical sizes."""

from __future__ import annotations

from collections.abc import Callable

from engine.catalog import find_gpu
from engine.schema import Answer, ModelFit, ModelsAnswer, PlannedAnswer, Request, ServingAnswer

# Sizes people run, in billions of parameters (a bare size is answered with a typical architecture of it)
SIZES = (0.5, 1, 1.5, 3, 4, 7, 8, 12, 14, 24, 27, 32, 70, 72, 123, 235, 405)
# inference is answered for each weight precision; training for the method said
INFERENCE_BITS = (16, 8, 4)
# llama.cpp and Ollama run GGUF files: the usual file of each precision (catalog serving.toml [gguf] bpw)
GGUF_OF_BITS = {16: "gguf:f16", 8: "gguf:q8_0", 4: "gguf:q4_k_m"}
GGUF_ENGINES = ("llama.cpp", "ollama")


def asks_for_models(request: Request) -> bool:
    """A question about which model fits, on hardware it names, with no model in it."""
    return request.model is None and "models" in request.asks and bool(request.gpus)


def models_answer(request: Request, answer: Callable[[Request], Answer]) -> ModelsAnswer | None:
    """The largest size that fits for each row, by `answer` (engine.answer.answer) on a bare size; None when it is
    not such a question or the GPU is unknown."""
    if not asks_for_models(request):
        return None
    ref = request.gpus[0]
    gpu = find_gpu(ref.name, ref.memory_gb) if ref.name else None
    memory_gb = ref.memory_gb or (gpu.memory_gb if gpu else None)
    if memory_gb is None:
        return None
    method = request.method or "inference"
    rows: list[tuple[str, int]]
    if method == "inference":  # a precision said («в 4 битах») is its row alone
        said = request.bits if request.bits in INFERENCE_BITS else None
        rows = [(method, said)] if said else [(method, b) for b in INFERENCE_BITS]
    else:
        rows = [(method, request.bits or (4 if method == "qlora" else 16))]
    fits_list = [_largest(request, m, bits, answer) for m, bits in rows]
    name = gpu.name if gpu else None
    return ModelsAnswer(request=request, gpu=name, memory_gb=memory_gb, count=ref.count, rows=fits_list, verdict=None)


def _largest(request: Request, method: str, bits: int, answer: Callable[[Request], Answer]) -> ModelFit:
    """The largest of SIZES the GPUs hold as asked (verdict fits or tight), by bisection: a larger model needs more."""
    gguf = GGUF_OF_BITS[bits] if method == "inference" and request.serving_engine in GGUF_ENGINES else None

    def need(size: float) -> tuple[float, float] | None:
        asked = {**request.model_dump(), "model": {"params_b": size}, "method": method, "bits": bits, "asks": [],
                 "intent": "estimate", **({"quantization": gguf} if gguf else {})}
        a = answer(Request.model_validate(asked))
        if a.verdict not in ("fits", "tight"):
            return None
        if isinstance(a, ServingAnswer):
            memory = a.serving.memory
            return (memory.weights_gib, memory.host_ram_gib) if memory is not None else (0.0, 0.0)
        if isinstance(a, PlannedAnswer):  # the training peak; for inference without an engine, its weights
            return (a.breakdown.weights if method == "inference" else a.need_gb), 0.0
        return 0.0, 0.0

    lo, hi = 0, len(SIZES) - 1
    best: tuple[float, tuple[float, float]] | None = None
    while lo <= hi:
        mid = (lo + hi) // 2
        needed = need(SIZES[mid])
        if needed is None:
            hi = mid - 1
        else:
            best, lo = (SIZES[mid], needed), mid + 1
    if best is None:
        return ModelFit(method=method, bits=bits, params_b=None, need_gb=None)
    return ModelFit(method=method, bits=bits, params_b=best[0], need_gb=round(best[1][0], 1),
                    host_ram_gb=round(best[1][1], 1))
