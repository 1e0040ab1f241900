"""Serving command lines: `vllm serve`, SGLang `launch_server`, `llama-server`, written through the engines' flag
tables (engine/configs/serving_flags.py, shared with the readers)."""

from __future__ import annotations

import shlex

from engine.configs.common import header
from engine.configs.model import ConfigFile, ConfigJob, ConfigOutput
from engine.configs.serving_flags import LLAMA_SERVER, SGLANG, UNSAID, VLLM, Engine, gguf_file, gguf_tag


def _write(engine: Engine, job: ConfigJob, notes: list[str]) -> ConfigOutput:
    argv = list(engine.program)
    for flag in engine.flags:
        text = flag.write(job)
        if text is UNSAID:
            note = f"not_expressible:{flag.field}={getattr(job, flag.field or '')}"
            if note not in notes:  # llama-server's -ctk and -ctv carry the one kv_cache_dtype
                notes.append(note)
        elif text is not None:
            argv += [text] if flag.positional else [flag.names[0], text]
    if job.seq_len:  # past the chat checkpoint's window, its card's YaRN, as the answer's command has it
        from engine.catalog.checkpoints import long_context_flags

        argv += long_context_flags(engine.name, job.model, job.seq_len)
    cmd = shlex.join(argv)
    text = "\n".join(header(job, engine.name)) + "\n" + cmd + "\n"
    return ConfigOutput(framework=engine.name, files=[ConfigFile(name=engine.file, text=text)], command=cmd,
                        estimate_gib=job.estimate_gib, notes=notes)


def loaded(job: ConfigJob) -> tuple[ConfigJob, list[str]]:
    """The job with the repository vLLM/SGLang load for its weight format (engine/catalog/checkpoints.toml), and the
    notes that name it (or say to pick one). The same choice `check` of the written file reads back."""
    from engine.catalog.checkpoints import FORMAT_OF_QUANT, serving_weights

    q = (job.quantization or "").lower()
    fmt = FORMAT_OF_QUANT.get(q) if q != "mxfp4" else None
    if fmt is None and not q and job.bits == 4:
        fmt = "bnb-4bit"
    weights = serving_weights(job.model, fmt)
    return job.model_copy(update={"model": weights.repo}), [weights.note] if weights.note else []


def _fp8_notes(job: ConfigJob) -> list[str]:
    from engine.catalog import find_gpu

    gpu = find_gpu(job.gpu_name) if job.gpu_name else None
    if (job.quantization or "").lower() == "fp8" and gpu is not None and not gpu.bf16:
        return [f"not_expressible:fp8 weights on {gpu.name} (vLLM's FP8 kernels need compute capability 8.0+)"]
    return []


def vllm(job: ConfigJob) -> ConfigOutput:
    job, notes = loaded(job)
    out = _write(VLLM, job, notes + _fp8_notes(job))
    if (job.quantization or "").startswith("gguf:"):
        out.notes.append("not_expressible:gguf in vllm (serve the GGUF file with llama-server)")
    return out


def sglang(job: ConfigJob) -> ConfigOutput:
    job, notes = loaded(job)
    return _write(SGLANG, job, notes + _fp8_notes(job))


def llama_cpp(job: ConfigJob) -> ConfigOutput:
    notes = [] if gguf_file(job) or (job.quantization or "").startswith("gguf:") else [
        f"gguf_type_assumed:{gguf_tag(job)}"]
    if not gguf_file(job):
        from engine.catalog.checkpoints import gguf_weights

        repo, note = gguf_weights(job.model, gguf_tag(job))
        notes += [note] if note else []
        job = job.model_copy(update={"model": repo})
    return _write(LLAMA_SERVER, job, notes)
