"""Question text (Russian or English) → `Request`: what the user said, nothing more.

    parse("70B QLoRA на H100?") → Request(language="ru", intent="estimate",
        model={"params_b": 70}, method="qlora", gpus=[{"name": "H100 SXM", "memory_gb": 80, "count": 1}])

How it works: the text is cleaned (NFKC, lower case, invisible characters dropped) and cut into
tokens by one linear regex (numbers, letter runs, single punctuation). Cyrillic letters glued to
digits are read as the Latin look-alikes they stand for ("Н100", "70б", "128к"). Extractors then
walk the token list, each anchored on a word of the lexicon or a catalog name, and mark the tokens
they use so that no number is read twice; the order (catalog model names → optimizer → context,
epochs, data, batch, rank → precision → GPU names → bare sizes → bare memory → method and switches)
lets the more specific reading win ("1B tokens" is data, not a model; "8-bit Adam" is not bits).

Guarantees:
- Pure and synchronous; never raises on any `str` (a last-resort guard returns error "unreadable").
- Fields the text does not mention stay null / []: no defaults here.
- Empty or whitespace-only text → error "empty". Text that is mostly control characters (binary)
  → error "not text". Text with no question in it → intent "help", no error.
- Over 4096 characters: the first 4096 are parsed and error is "too long" (Telegram's own limit).
- A value beyond the Request's bounds (10^100B parameters, a context of 10^12) is dropped, the rest
  of the request is kept, and error names it: "model size out of range", "context length out of
  range", … (joined by "; "). So `error` set means "answer with care", not always "nothing to do".
- Language: "ru" when the text holds any Cyrillic letter, else "en" (names and numbers are Latin
  in both languages, so the Cyrillic words decide).

CONTRACT.md v2 (stage, framework, serving_engine, quantization, kv_cache_dtype, concurrency, prompt/output
lengths, num_generations, TP/PP/CP, currency, budget, deadline_hours, unsupported) come from `serving`,
`stack` and `money`. Before any extractor the tokens are folded: Cyrillic look-alikes ("А100", "4О90"),
letter slang ("аш сотка" = H100) and typos (`fuzzy`: edit distance on the lexicon, "qlroa" = qlora).
The words of the question decide method and stage; the words of a model id never do ("…-pretrain").
A negative number is reported ("negative number"), never read as its absolute value.

Beyond the contract, the Request carries what the answer needs to say:
- `assumed`: fields filled from what the text implied, not said — "model" when a family was named without
  its full name ("llama 70b" → Llama-3.3-70B, "qwen 7b" → Qwen2.5-7B, "мистраль" → Mistral-7B-v0.3;
  engine/catalog/families.toml; an id written glued, "Qwen-7B", stays that model) or a variant with its own
  checkpoint stands on the catalog model of its shape ("Qwen2.5-Coder-32B" → Qwen2.5-32B), "gpus" for
  Colab/Kaggle (a T4), "budget.currency" for a budget said without a currency, "quantization" for a bare
  "q4" (→ gguf:q4_k_m), "context_parallel" for Ulysses / ring attention named without a degree (the GPU count).
- GPUs: "2 ноды по 8 H100" and "2x8 H100" are 16; a GPU known only by its memory is 4–2048 GB and, when a GPU
  was named, needs a GPU word by it ("or a 16 GB card"); identical entries are merged; more than 8 entries
  (pasted logs, noise) are cut with error "too many GPUs".
- `smalltalk`: "greeting" | "thanks" | "capabilities" for a message with no question (intent "help").
- `asks`: "money" / "time" / "latency" / "throughput", in the order asked (intent "cost" for money/time).

Conversation helpers: `read_question` (the Request and what it changes as a follow-up, from one parse),
`followup.read_follow_up` ("а если 8k контекст?"; engine.edits merges it), and `price.read_price_args` for the
`/price` command.
"""

from __future__ import annotations

import re
from typing import Any

from engine.catalog import find_gpu
from engine.parse import (
    completions,
    engine_flags,
    families,
    fuzzy,
    hardware,
    load,
    money,
    parallel,
    serving,
    settings,
    stack,
    talk,
    training,
)
from engine.parse.followup import FollowUp, follow_up_of, read_follow_up
from engine.parse.gpus import gpu_index
from engine.parse.intent import intent, rank_by
from engine.parse.models import catalog_names, model_index, sizes
from engine.parse.normalize import MAX_CHARS, clean, clean_cased, has_cyrillic, tokenize
from engine.parse.price import PriceArgs, read_price_args
from engine.parse.scan import Scan
from engine.schema import PARSE_FIELDS, Request

__all__ = ["PARSE_FIELDS", "FollowUp", "PriceArgs", "parse", "read_follow_up", "read_price_args", "read_question",
           "warm"]

V2_FIELDS = ("stage", "framework", "framework_version", "serving_engine", "quantization", "kv_cache_dtype",
             "concurrency", "prompt_len", "output_len", "num_generations", "tensor_parallel", "pipeline_parallel",
             "context_parallel", "currency", "budget", "deadline_hours")


def warm() -> None:
    """Build the name indexes now (they are cached) rather than on the first question."""
    model_index()
    gpu_index()
    fuzzy.warm()
    families.families()


def parse(text: str) -> Request:
    try:
        return _parse(text)
    except Exception:  # a bug must not take the bot down; the tests keep this path unused
        return Request(error="unreadable")


def _parse(text: str) -> Request:
    return parse_scan(text)[0]


def read_question(text: str) -> tuple[Request, FollowUp]:
    """`parse(text)` and what the text changes as a follow-up of the previous question, from one parse; never
    raises (the parser's own guard, as parse() has)."""
    try:
        request, s = parse_scan(text)
    except Exception:
        request, s = Request(error="unreadable"), None
    return request, follow_up_of(request, s)


def parse_scan(text: str) -> tuple[Request, Scan | None]:
    """The Request and the token scan behind it (None for unusable text): for the follow-up reader."""
    if not isinstance(text, str):
        return Request(error="not text"), None
    errors: list[str] = []
    if len(text) > MAX_CHARS:
        text = text[:MAX_CHARS]
        errors.append("too long")
    if not text.strip():
        return Request(error="empty"), None
    if "\x00" in text or _control_share(text) > 0.3:
        return Request(error="not text"), None
    cleaned = clean(text)
    s = Scan(cleaned, tokenize(cleaned), cased=clean_cased(text, cleaned))
    s.language = "ru" if has_cyrillic(text) else "en"
    _negatives(s)
    engine_flags.engine_flags(s)  # first: "--max-model-len 32768" is the engine's, its number no one else's
    engine_flags.engine_version(s)  # «vllm 0.7.3»: a release, no one else's number
    engine_flags.framework_version(s)  # «trl 1.16»: the training stack's release
    stack.names(s)
    catalog_names(s)
    families.family_models(s)
    training.optimizer(s)
    training.native(s)  # CONTRACT v2.1 (before bits: "float8" is Float8 training, not an 8-bit base)
    parallel.parallelism(s)  # before context: "context parallel 8", "sequence parallel"
    completions.generations(s)  # before data: "8 samples per prompt"
    serving.lengths(s)  # before context: "prompt length 2k"
    load.load(s)  # before context and concurrency: "TTFT p95 под 500 мс", "20 rps", "100 LoRA-адаптеров"
    money.budget(s)  # before sizes: "1 млн рублей" is no model
    money.deadline(s)
    money.rental(s)
    settings.context(s)
    settings.epochs(s)
    settings.data(s)
    serving.concurrency(s)
    settings.batch(s)
    settings.rank(s)
    serving.kv_cache(s)
    serving.quantization(s)
    serving.other_formats(s)  # after the named formats, before bits: "exl2 4.0bpw", "mlx 4bit"
    training.bits(s)
    hardware.named(s)
    # sizes after GPU names ("8 H100" is a count), before bare memory ("70B 24GB")
    sizes(s)
    hardware.bare_memory(s)
    hardware.generic_count(s)
    parallel.cp_from_gpus(s)
    parallel.tp_from_replicas(s)
    _mixed_set(s)
    stack.colab(s)
    _leftover_context(s)
    stack.stage(s)
    stack.framework(s)
    training.method(s)
    stack.framework(s)  # "transformers" is the serving engine once the method is inference
    training.checkpointing(s)
    training.alst(s)  # before offload: "offload activations" is ALST's, not the optimizer's
    training.offload(s)
    training.flash_attention(s)
    training.sharding(s)
    stack.fsdp_qlora(s)
    stack.fused_loss(s)
    stack.alst_recipe(s)  # after the switches said: the ALST recipe fills only the rest
    stack.rollout(s)
    training.inference_by_default(s)
    money.period(s)
    stack.unsupported(s)
    money.currency(s)
    errors += s.errors
    return _request(s, errors), s


def _negatives(s: Scan) -> None:
    """"-7B", "on -2 H100": a negative number is reported, never read as its absolute value."""
    index = None
    for i, t in enumerate(s.toks):
        if t.kind == "n" and t.val < 0:
            s.errors.append("negative number")
            if s.unit_after(i)[0] >= 1e6:
                s.errors.append("model size out of range")  # "-7b": a size was written, not none
                s.said["model"] = None
            else:
                index = index or gpu_index()
                k = i + 1 + (s.word(i + 1) in ("x", "×"))
                if k < s.n and index.match(s.toks, k) is not None:
                    s.errors.append("GPU count out of range")  # "на -2 4090"
            t.used = True


_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufffd]")


def _control_share(text: str) -> float:
    return len(_CONTROL.findall(text)) / len(text)


def _leftover_context(s: Scan) -> None:
    """A lone "8k" / "128к" with no keyword is a context length (data amounts were taken before)."""
    for i, t in enumerate(s.toks):
        if t.kind == "n" and not t.used and s.word(i + 1) in ("k", "к") and s.glued(i + 1) \
                and t.val in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024):
            settings.put_seq_len(s, t.val * 1024)
            s.use(i, i + 1)


TOGETHER = frozenset({"вместе", "together", "mixed", "смешанные", "одновременно", "combined", "совместно", "плюс",
                      "plus", "+"})


def _mixed_set(s: Scan) -> None:
    """"4090 и 3090 вместе": one job on a mixed set, not a comparison. Each card holds the same share and waits for
    the slowest, so the set is counted as the weaker card times all of them, said as unsupported ("mixed_gpus")."""
    named = [g for g in s.gpus if g[1].get("name")]
    if len(named) < 2 or s.words.isdisjoint(TOGETHER) or len({g[1]["name"] for g in named}) < 2:
        return

    def strength(entry: dict[str, Any]) -> tuple[float, float]:
        gpu = find_gpu(entry["name"], entry.get("memory_gb"))
        return (float(entry.get("memory_gb") or 0), gpu.bf16_tflops if gpu is not None else 0.0)

    weakest = min(named, key=lambda g: strength(g[1]))
    total = sum(int(g[1].get("count") or 1) for g in named)
    s.gpus = [(weakest[0], {**weakest[1], "count": total}, True)]
    s.unsupported.append("mixed_gpus")


def _apple(name: str | None) -> bool:
    gpu = find_gpu(name)
    return gpu is not None and gpu.vendor == "Apple"


CHINCHILLA_WORDS = frozenset({"chinchilla", "шиншилла", "шиншиллы", "шиншилле", "chinchilla-optimal"})


def _chinchilla_tokens(s: Scan, fields: dict[str, Any]) -> None:
    """«chinchilla optimal» with no amount of data: the compute-optimal tokens of the model's size (speed.toml
    [chinchilla]), pretraining, said as assumed (Request.assumed "chinchilla")."""
    model = fields.get("model")
    params = getattr(model, "params_b", None) if not isinstance(model, dict) else model.get("params_b")
    if fields.get("tokens") is not None or s.words.isdisjoint(CHINCHILLA_WORDS) or not params:
        return
    from engine.catalog import data_file

    per = float(data_file("speed.toml")["chinchilla"]["tokens_per_parameter"])
    fields["tokens"] = per * float(params) * 1e9
    fields["stage"] = fields.get("stage") or "pretrain"
    s.assumed.append("chinchilla")


def _request(s: Scan, errors: list[str]) -> Request:
    said = s.said
    kept: list[tuple[int, dict[str, Any], bool]] = []
    for g in sorted(s.gpus, key=lambda g: g[0]):
        if all(g[1] != k[1] for k in kept):  # "H100 or H100?", a name repeated in pasted text: one entry
            kept.append(g)
    if len(kept) > hardware.MAX_READ_GPUS:
        errors.append("too many GPUs")
        kept = kept[:hardware.MAX_READ_GPUS]
    s.gpus = kept  # the follow-up reader pairs these with Request.gpus
    gpus = [g[1] for g in kept]
    fields: dict[str, Any] = {k: said.get(k) for k in (
        "model", "method", "seq_len", "batch_size", "lora_rank", "bits", "optimizer",
        "gradient_checkpointing", "offload", "tokens", "epochs", "sharding", "fused_loss", "flash_attention",
        "rent_hours", "rent_monthly", "engine_options", "examples", "serving_engines_compared",
        "tensor_parallel_compared",
        *V2_FIELDS, "activation_offload", "tiled_mlp", "expert_parallel", "rollout",
        "selective_checkpointing", "float8", "async_tp", "torch_compile")}
    fields.update({k: said.get(k) for k in load.FIELDS})
    for compared in ("serving_engines_compared", "tensor_parallel_compared"):
        if len(fields[compared] or []) < 2:  # one engine (or one TP) named is the setting, not a comparison
            fields[compared] = []
    _chinchilla_tokens(s, fields)
    if fields.get("expert_parallel") is None and said.get("expert_parallel_on"):
        fields["expert_parallel"] = 1  # on, degree not said: the serving engine's (vLLM: TP x DP)
    if fields.get("method") is None and any(fields.get(k) is not None for k in load.SERVING_ONLY):
        fields["method"] = "inference"  # a request rate, a latency promise, speculative decoding: serving
    if said.get("serves_adapters") and fields.get("method") in (None, "lora", "qlora"):
        fields["method"] = "inference"  # LoRA adapters served by an engine, not a LoRA fine-tune
        if fields.get("lora_rank") and not fields.get("max_lora_rank"):
            fields["max_lora_rank"] = fields["lora_rank"]
        fields["lora_rank"] = None
    asked = (money.asks(s) + talk.serving_asks(s) + (["users"] if said.get("asks_users") else [])
             + (["adapters"] if said.get("asks_adapters") else []))
    if said.get("asks_rate"):  # «сколько rps выдержит h100»: the rate it holds leads, not its tokens/s
        asked = ["rate", *[a for a in asked if a != "throughput"]]
    if said.get("method") == "inference" and said.get("tokens") and "money" in asked and "throughput" not in asked:
        asked.append("throughput")  # «сколько стоит инфер 70б на 1 млрд токенов»: the GPUs at full load, priced
    if said.get("stage") == "pretrain" and said.get("tokens") and not {"time", "money"} & set(asked):
        asked.append("time")  # «претрейн 7б на 1T токенов на 64 h100»: how long is the question
    kind = intent(s)
    if kind == "estimate" and any(a in ("money", "time") for a in asked):
        kind = "cost"
    chat = talk.smalltalk(s) if kind == "help" else None
    unsupported = s.unsupported
    if any(_apple(g.get("name")) for g in gpus):  # "MacBook M2 Max 32GB": a catalog chip, modelled (unified memory)
        unsupported = [u for u in unsupported if u != "apple"]
    return Request(language=s.language, intent=kind, gpus=gpus, rank_by=rank_by(s),
                   error="; ".join(dict.fromkeys(errors)) or None, unsupported=unsupported[:32],
                   assumed=list(dict.fromkeys(s.assumed)), smalltalk=chat, asks=list(dict.fromkeys(asked))[:5],
                   **fields)
