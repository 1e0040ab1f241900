"""Serving-engine flags written into a question («gpt-oss-20b на 16 гб --gpu-memory-utilization 0.95»,
"llama 70b on 2 h100, max_num_seqs=64"): read through the engines' own flag tables, as the flags of a pasted launch
line are (engine/configs/readers/serving.py), so one flag means one thing at every door. The engine options they set
(gpu_memory_utilization, max_num_seqs, max_num_batched_tokens, max_model_len) go into the request; a flag the
tables do not use is named in the reply as not modelled, never dropped in silence.

`engine_version` reads the engine's release written by its name («vllm 0.7.3», "on vLLM v0.6.6", «sglang==0.4.1»,
"tgi 3.3") and vLLM's V0/V1 switch ("VLLM_USE_V1=1", «движок V1») into the same engine options (engine_version,
vllm_use_v1), as `check` reads them from a pasted log."""

from __future__ import annotations

import re

from engine.parse.lexicon_stack import FRAMEWORK_KEYS, FRAMEWORK_WORDS
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
        _read(s, m.start(), m.end())


def _read(s: Scan, start: int, end: int) -> None:
    """The tokens inside text[start:end] are read: no extractor after this one reads them again."""
    for t in s.toks:
        if start <= t.start and t.end <= end:
            t.used = True


_ENGINES = r"vllm|sglang|tgi|text-generation-inference|llama\.cpp|llama-cpp-python|ollama|tensorrt-llm|trt-llm"
_MARK = r"(?:(?:версии|версия|version|ver\.?)[ \t]*|==|=|:|@|-)"
_RELEASE = r"\d+\.\d+(?:\.\d+)?(?:\.post\d+|rc\d+)?"
_VERSION = re.compile(rf"(?<![\w.-])({_ENGINES})[ \t]*({_MARK})?[ \t]*(v)?({_RELEASE})(?![\w.])")
_V1_FLAG = re.compile(r"(?<![\w-])vllm_use_v1[ \t]*=[ \t]*([01])(?![\w.])")
_ENGINE_WORD = r"(?:engine|движк\w*|движок)"
_V1_WORDS = re.compile(rf"(?<![\w.])(?:(v[01])[ \t]+{_ENGINE_WORD}|{_ENGINE_WORD}[ \t]+(v[01]))(?![\w.])")


_STACKS = r"trl|unsloth|axolotl|llama-factory|llamafactory|torchtune|ms-swift|swift|litgpt|deepspeed|verl|openrlhf"
_STACK_VERSION = re.compile(rf"(?<![\w.-])({_STACKS})[ \t]*({_MARK})?[ \t]*(v)?({_RELEASE})(?![\w.])")


def framework_version(s: Scan) -> None:
    """The release a training stack is named with («trl 1.16», "TRL v1.15", "trl==1.14.0") into framework_version,
    and the stack into framework (first said wins). Its numbers are a release, no one else's."""
    m = _STACK_VERSION.search(s.text)
    if m is None:
        return
    name = m.group(1).replace("-", "")
    stack = FRAMEWORK_WORDS.get(name) or FRAMEWORK_KEYS.get(name)
    if stack is None:
        return
    s.set("framework", stack)
    if s.said.get("framework") != stack:
        return
    s.set("framework_version", re.sub(r"(\.post\d+|rc\d+)$", "", m.group(4)))
    _read(s, m.start(2 if m.group(2) else 3 if m.group(3) else 4), m.end())


def engine_version(s: Scan) -> None:
    """The release an engine is named with and vLLM's V0/V1 switch, into `engine_options`. A bare two-part number
    after vllm / sglang («vllm 0.9») may be a memory share, so it needs a mark ("v0.9", «версии 0.9», "==0.9");
    three parts («vllm 0.7.3») or another engine ("tgi 2.2") need none."""
    options: dict[str, object] = {}
    spans: list[tuple[int, int]] = []
    for m in _VERSION.finditer(s.text):
        engine, mark, v, release = m.group(1), m.group(2), m.group(3), m.group(4)
        if engine in ("vllm", "sglang") and release.count(".") == 1 and not (mark or v):
            continue
        options["engine_version"] = release
        spans.append((m.start(4) - (1 if v else 0), m.end()))
        break
    if (flag := _V1_FLAG.search(s.text)) is not None:
        options["vllm_use_v1"] = flag.group(1) == "1"
        spans.append(flag.span())
    elif (words := _V1_WORDS.search(s.text)) is not None:
        options["vllm_use_v1"] = (words.group(1) or words.group(2)) == "v1"
        spans.append(words.span())
    if not options:
        return
    merged = dict(s.said.get("engine_options") or {})
    for key, value in options.items():
        merged.setdefault(key, value)
    s.said["engine_options"] = merged
    for a, b in spans:  # "0.7.3" is a release, not a size, a share or a context
        _read(s, a, b)
