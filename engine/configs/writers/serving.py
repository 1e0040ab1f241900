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
    cmd = shlex.join(argv)
    text = "\n".join(header(job, engine.name)) + "\n" + cmd + "\n"
    return ConfigOutput(framework=engine.name, files=[ConfigFile(name=engine.file, text=text)], command=cmd,
                        estimate_gib=job.estimate_gib, notes=notes)


def vllm(job: ConfigJob) -> ConfigOutput:
    out = _write(VLLM, job, [])
    if (job.quantization or "").startswith("gguf:"):
        out.notes.append("not_expressible:gguf in vllm (serve the GGUF file with llama-server)")
    return out


def sglang(job: ConfigJob) -> ConfigOutput:
    return _write(SGLANG, job, [])


def llama_cpp(job: ConfigJob) -> ConfigOutput:
    notes = [] if gguf_file(job) or (job.quantization or "").startswith("gguf:") else [
        f"gguf_type_assumed:{gguf_tag(job)}"]
    return _write(LLAMA_SERVER, job, notes)
