"""Serving-engine flags written into a question («gpt-oss-20b на 16 гб --gpu-memory-utilization 0.95»,
"llama 70b on 2 h100, max_num_seqs=64"): read through the engines' own flag tables, as the flags of a pasted launch
line are (engine/configs/readers/serving.py), so one flag means one thing at every door. The engine options they set
(gpu_memory_utilization, max_num_seqs, max_num_batched_tokens, max_model_len) go into the request; a flag the
tables do not use is named in the reply as not modelled, never dropped in silence."""

from __future__ import annotations

import re

from engine.parse.scan import Scan
from engine.schema.request import QUESTION_FLAGS

# `--flag value`, `--flag=value`, or a Python-style name with two or more underscores (`max_num_seqs=64`)
_FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9]*(?:-[a-z0-9]+)+|[a-z]+(?:_[a-z0-9]+){2,})"
                   r"(?:[ \t]*[=:]?[ \t]*(\d+(?:[.,]\d+)?[kк]?%?))?(?![\w.])")
OPTION_KEYS = ("gpu_memory_utilization", "max_num_seqs", "max_num_batched_tokens", "max_model_len")
# the flag tables' fields that set those options (engine/configs/readers/serving.py _apply)
OPTION_FIELDS = ("gpu_memory_utilization", "concurrency", "max_num_batched_tokens", "seq_len")


def _value(raw: str) -> str:
    v = raw.replace(",", ".")
    if v.endswith("%"):
        return str(float(v[:-1]) / 100)
    if v[-1:] in ("k", "к"):
        return str(int(float(v[:-1]) * 1024))
    return v


def engine_flags(s: Scan) -> None:
    found = [m for m in _FLAG.finditer(s.text) if m.group(1).startswith("--") or m.group(2)]
    if not found:
        return
    from engine.configs.options import known
    from engine.configs.readers.collect import Collector
    from engine.configs.readers.serving import read_flags
    from engine.configs.serving_flags import SGLANG, VLLM

    engine = SGLANG if "sglang" in s.words or any("mem-fraction" in m.group(1) or "mem_fraction" in m.group(1)
                                                  for m in found) else VLLM
    table = engine.by_name()
    names = set(known(engine.tool))
    args: list[str] = []
    read = []
    for m in found:  # the engine's own flags only: `max_seq_length=2048`, `--num-train-epochs` are the trainer's
        flag = "--" + m.group(1).lstrip("-").replace("_", "-")
        mapped = table.get(flag)
        if mapped is not None and mapped.field not in OPTION_FIELDS:
            continue  # "--tensor-parallel-size 2", "--kv-cache-dtype fp8": the question's own extractors read them
        if mapped is None and flag not in names:
            continue
        read.append(m)
        args.append(flag)
        if m.group(2):
            args.append(_value(m.group(2)))
    if not read:
        return
    c = Collector("question", None)
    read_flags(engine, args, c)
    options = {k: v for k, v in dict(c.fields.get("engine_options") or {}).items() if k in OPTION_KEYS}
    if options:
        s.set("engine_options", options)
        s.assumed.append(QUESTION_FLAGS)  # a few flags, not a whole launch line: the question's defaults stand
        if engine is SGLANG and s.words.isdisjoint(("vllm", "tgi", "trtllm", "ollama")):
            s.set("serving_engine", "sglang")  # "--mem-fraction-static 0.8" alone: SGLang's flag, SGLang's engine
        if "max_model_len" in options:
            s.set("seq_len", options["max_model_len"])
    for name in (*c.ignored, *c.no_effect):
        s.unsupported.append(name if name.startswith("-") else "--" + name.replace("_", "-"))
    for m in read:  # the flags' names and numbers are read: no extractor after this one reads them again
        for t in s.toks:
            if m.start() <= t.start and t.end <= m.end():
                t.used = True
