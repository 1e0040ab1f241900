"""Conversation: a message that changes one thing of the previous question ("а если 8k контекст?", "and on two
of them?", "а с QLoRA?", "в рублях", "а на H200?").

    fu = read_follow_up("а с QLoRA?")  → FollowUp(is_follow_up=True, said=["method"], changes=Request(method="qlora"))
    engine.edits.merge_follow_up(previous, fu) → the previous Request with that change (and what it implies reset)

Whether a message IS a follow-up is decided from the text alone (the bot decides whether it is a reply to
one of its answers): it changes at least one field, and it either starts with a change word ("а", "и",
"а если", "and", "what about", "instead", ...) or is short and names no model.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from engine.parse import lexicon as lx
from engine.parse.normalize import NUM, WORD
from engine.parse.numbers import is_count
from engine.parse.scan import Phrases, Scan
from engine.schema import MAX_GPUS, GpuRef, Request

# Request fields a follow-up can change (language, intent, error and the parser's signals are handled apart)
CHANGEABLE = ("model", "method", "seq_len", "batch_size", "lora_rank", "bits", "optimizer",
              "gradient_checkpointing", "offload", "tokens", "epochs", "sharding", "fused_loss", "flash_attention",
              "stage", "framework", "framework_version", "serving_engine", "quantization", "kv_cache_dtype",
              "concurrency", "prompt_len", "output_len", "num_generations", "tensor_parallel", "pipeline_parallel",
              "context_parallel", "currency", "budget", "deadline_hours", "gpus", "unsupported", "rank_by", "asks")
SHORT = 6  # words and numbers: "а на двух H100?" is short, a new question rarely is
LEADS = Phrases([("а",), ("и",), ("and",), ("what", "if"), ("what", "about"), ("how", "about"), ("instead",),
                 ("вместо",), ("теперь",), ("now",), ("then",), ("тогда",), ("same",), ("то", "же"),
                 ("а", "если"), ("а", "что", "если"), ("or",), ("или",), ("but",), ("но",), ("also",),
                 ("давай",), ("let's",), ("try",), ("попробуй",), ("ok",), ("ок",), ("с",), ("with",),
                 ("на",), ("on",), ("в",), ("in",), ("без",), ("without",), ("если",), ("if",)])
THEM = frozenset({"them", "those", "these", "such", "них", "таких", "таких же", "штук", "штуки", "штуках",
                  "of", "из"})
COUNT_LEADS = frozenset({"on", "на", "with", "с", "со", "using", "across", "x", "×", "х", "по", "for", "для",
                         "and", "и", "а"})
METHOD_WORDS = (lx.QLORA_WORDS | lx.LORA_WORDS | lx.FULL_WORDS | lx.INFERENCE_WORDS | lx.FULL_SLANG
                | lx.INFER_SLANG | frozenset({"scratch", "нуля"}))
HARDWARE_KEYS = frozenset({"tpu", "cpu_only", "apple"})
NOT_LANGUAGE_MODELS = frozenset({"diffusion", "audio"})  # unsupported keys that name a model (SDXL, Whisper)
SETTLED = frozenset({"context length out of range", "GPU count out of range", "GPU count not read"})


class FollowUp(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # the bot's follow-ups only: not built by `ask`

    is_follow_up: bool
    changes: Request  # only the fields in `said` are meaningful
    said: list[str] = Field(default_factory=list)  # field names; "gpu_count": only a count, for the same GPUs
    gpu_count_said: list[bool] = Field(default_factory=list)  # per entry of changes.gpus: was its count said
    language_said: bool = False  # the text holds words of its language, not only names and numbers ("H200?")


def read_follow_up(text: str) -> FollowUp:
    """What a follow-up message changes; never raises (bad text is simply not a follow-up)."""
    from engine.parse import read_question

    return read_question(text)[1]


def follow_up_of(request: Request, s: Scan | None) -> FollowUp:
    """What the parsed `request` (and the token scan behind it) changes when it is a follow-up."""
    if s is None:
        return FollowUp(is_follow_up=False, changes=request)
    said = [k for k in CHANGEABLE if getattr(request, k) not in (None, []) and k != "asks"]
    if not said and request.asks:
        said = ["asks"]  # "а сколько это будет стоить?": only what the answer leads with changes
    if "method" in said and not (s.words & METHOD_WORDS):
        # "а с AWQ?" after a LoRA question: the weight format alone must not switch the method
        said.remove("method")
    counts = [g[2] for g in sorted(s.gpus, key=lambda g: g[0])][:len(request.gpus)]
    data = request.model_dump()
    if request.gpus and all(g.name is None and g.memory_gb is None for g in request.gpus):
        said = [k for k in said if k != "gpus"] + ["gpu_count"]  # "what about 4 GPUs": the same GPUs, 4 of them
    elif not request.gpus:
        n = _bare_count(s)
        if n is not None:
            data["gpus"] = [GpuRef(count=n).model_dump()]
            counts = [True]
            said.append("gpu_count")
    words = sum(1 for t in s.toks if t.kind in (NUM, WORD))
    lead = LEADS.at(s.texts, 0) is not None if s.n else False
    # a model we do not size (SDXL, Whisper) is named too: «sdxl дообучение на 3090» is a new question
    named_model = request.model is not None or bool(NOT_LANGUAGE_MODELS & set(request.unsupported))
    if "models" in request.asks:  # «какую модель можно запустить на 4090»: a question of its own, never a change
        named_model, lead = True, False
    follow = bool(said) and (lead or (words <= SHORT and not named_model)) and request.smalltalk is None
    language_said = request.language == "ru" or any(
        t.kind == WORD and not t.used and len(t.text) > 1 and t.text.isascii() for t in s.toks)
    return FollowUp(is_follow_up=follow, changes=Request.model_validate(data), said=said, gpu_count_said=counts,
                    language_said=language_said)


def _bare_count(s: Scan) -> int | None:
    """"and on two of them?", "на двух?", "а на 4?", "x2": a GPU count with no GPU named."""
    toks = s.toks
    for i, t in enumerate(toks):
        if t.used:
            continue
        if t.kind == NUM:
            if not is_count(t.val, MAX_GPUS) or (i > 0 and s.glued(i) and toks[i - 1].kind == WORD
                                                 and toks[i - 1].text not in ("x", "×", "х")):
                continue
            value = int(t.val)
        elif t.text in lx.COUNT_WORDS:
            value = lx.COUNT_WORDS[t.text]
        else:
            continue
        before = s.word(i - 1)
        after = s.word(i + 1)
        ends = i + 1 >= s.n or toks[i + 1].kind == "p" or after in THEM or after in lx.GPU_NOUNS
        if (before in COUNT_LEADS or i == 0) and ends and not (i + 1 < s.n and toks[i + 1].kind == WORD
                                                                and after not in THEM | lx.GPU_NOUNS):
            return value
    return None
