"""What the job runs on and how it is trained: stage, framework, serving engine, fused loss, and what the
engine cannot model (`unsupported`, short keys)."""

from __future__ import annotations

from engine.parse import parallel
from engine.parse.lexicon import NEG_BEFORE, OFFLOAD_HEADS, RAM_WORDS
from engine.parse.lexicon_stack import (
    ALST_WORDS,
    APPLE_CHIPS,
    CHECKPOINT_NOUNS,
    COLAB_WORDS,
    CONTINUED,
    CPU_ONLY_LEADS,
    CPU_WORDS,
    DISK_CONTEXT,
    DISK_WORDS,
    FRAMEWORK_KEYS,
    FRAMEWORK_WORDS,
    FUSED_PAIRS,
    FUSED_WORDS,
    HF_WORDS,
    NO_GPU,
    PREFERENCE,
    REWARD_NOUNS,
    REWARD_WORDS,
    SCRATCH_PAIRS,
    SERVING_KEYS,
    SERVING_WORDS,
    SIZE_VERBS,
    STAGE_WORDS,
    SUPERVISED,
    TRAINER_STAGES,
    UNSUPPORTED_WORDS,
)
from engine.parse.normalize import PUNCT, WORD
from engine.parse.scan import Phrases, Scan
from engine.parse.serving import GLUE
from engine.schema.request import ALST_RECIPE

TPU_KEYS = frozenset({"v5e", "v5p", "v6e", "v4", "v5litepod", "v3"})
ID_SILENT = frozenset({"distillation"})  # "DeepSeek-R1-Distill-Qwen-7B" is a model to tune, not a distillation
OWNERS = frozenset({"a", "the", "my", "our", "моем", "своем", "обычном", "домашнем", "нашем", "одном"})
APPLE_TIERS = frozenset({"max", "ultra", "pro"})
TUNE_WORDS = frozenset({"finetuning", "tuning", "finetune", "fine", "тюнинг", "файнтюн", "файнтюнинг",
                        "дообучение", "дообучения", "обучение", "learning"})
OPTIMIZATION = frozenset({"optimization", "optimisation", "tuning", "оптимизация", "оптимизации", "alignment"})


NAME_PREFIXES = frozenset(k[:n] for k in (*SERVING_KEYS, *FRAMEWORK_KEYS) for n in range(1, len(k) + 1))
NAME_STARTS = frozenset(p for p in NAME_PREFIXES if len(p) > 1)  # a first word has two letters at least
SCRATCH = Phrases(SCRATCH_PAIRS)
FUSED = Phrases(FUSED_PAIRS)
NO_GPU_P = Phrases(NO_GPU)


def names(s: Scan) -> None:
    """Multi-token names of frameworks and engines ("llama.cpp", "llama-factory", "tensorrt-llm", "lm studio"),
    read before model names so that their "llama" is not a model."""
    if s.words.isdisjoint(NAME_STARTS):
        return
    for i, t in enumerate(s.toks):
        if t.used or t.kind == PUNCT or t.key not in NAME_PREFIXES:
            continue
        key = ""
        for j in range(i, min(i + 5, s.n)):
            tj = s.toks[j]
            if tj.used or (tj.kind == PUNCT and tj.text not in GLUE):
                break
            key += tj.key
            if key not in NAME_PREFIXES:
                break
            if j == i:
                continue
            if key in SERVING_KEYS:
                s.set("serving_engine", SERVING_KEYS[key])
                _engine_said(s, SERVING_KEYS[key])
                s.use(i, j)
                break
            if key in FRAMEWORK_KEYS:
                s.set("framework", FRAMEWORK_KEYS[key])
                s.alst = s.alst or key in ALST_WORDS
                if "qlora" not in key:  # "fsdp_qlora" still says the method
                    s.use(i, j)
                break


def _rm(s: Scan, i: int, w: str) -> bool:
    """"reward model", "ревард-модель", "модель вознаграждения", "RM" (not "-rm" inside a name)."""
    if w in REWARD_WORDS:
        return s.word(s.skip(i + 1, GLUE, 1)) in REWARD_NOUNS
    if w in ("модель", "модели"):
        return s.word(i + 1) in ("вознаграждения", "награды")
    return w == "rm" and not (i > 0 and s.toks[i - 1].text == "-")


def _stage_at(s: Scan, i: int, w: str) -> str | None:
    after = s.word(s.skip(i + 1, GLUE, 1))
    if _rm(s, i, w):
        return "rm"
    if w in SUPERVISED and after in TUNE_WORDS:
        return "sft"
    if w in PREFERENCE and after in OPTIMIZATION:
        return "dpo"
    if SCRATCH.at(s.texts, i) or (w in CONTINUED and STAGE_WORDS.get(after) == "pretrain"):
        return "pretrain"
    return STAGE_WORDS.get(w)


STAGE_TRIGGERS = (frozenset(STAGE_WORDS) | frozenset(TRAINER_STAGES) | REWARD_WORDS | SUPERVISED | PREFERENCE
                  | CONTINUED | {"модель", "модели", "rm"} | SCRATCH.firsts)


def stage(s: Scan) -> None:
    if s.words.isdisjoint(STAGE_TRIGGERS):
        return
    for i, t in enumerate(s.toks):
        if t.kind != WORD or t.used or i in s.ids:
            continue
        if t.text in TRAINER_STAGES:
            s.set("framework", "trl")
            s.set("stage", TRAINER_STAGES[t.text])
            continue
        found = _stage_at(s, i, t.text)
        if found:
            s.set("stage", found)


STACK_TRIGGERS = frozenset(FRAMEWORK_WORDS) | frozenset(SERVING_WORDS) | HF_WORDS


def framework(s: Scan) -> None:
    """The training stack or, for serving, the engine; "transformers"/"HF Trainer" is either, by the method."""
    if s.words.isdisjoint(STACK_TRIGGERS):
        return
    hf = False
    for i, t in enumerate(s.toks):
        if t.kind != WORD or i in s.ids:
            continue
        w = t.text
        if w in FRAMEWORK_WORDS:
            s.set("framework", FRAMEWORK_WORDS[w])
            s.alst = s.alst or w in ALST_WORDS
        elif w in SERVING_WORDS:
            s.set("serving_engine", SERVING_WORDS[w])
            _engine_said(s, SERVING_WORDS[w])
        elif w == "trainer" and i > 0 and s.toks[i - 1].text in STAGE_WORDS:
            s.set("framework", "trl")  # "SFT trainer", "DPO trainer": TRL's
        elif w in HF_WORDS and (w != "hf" or s.word(i + 1) in ("trainer", "transformers", "generate")):
            hf = w != "huggingface" or s.word(i + 1) == "trainer"
    if hf:
        s.set("serving_engine" if s.said.get("method") == "inference" else "framework", "hf")


def _engine_said(s: Scan, engine: str) -> None:
    """Every serving engine named, in order: two of them («vllm или sglang») are a comparison of engines."""
    said = s.said.setdefault("serving_engines_compared", [])
    if engine not in said:
        said.append(engine)


def alst_recipe(s: Scan) -> None:
    """"ALST", "ArcticTraining": what was not said is the recipe's (snowflakedb/ArcticTraining b28638e6
    projects/sequence-parallelism/run-*.yml): full fine-tuning, Ulysses over the GPUs named, activation checkpoints
    offloaded to CPU, TiledMLP, Liger's fused loss (`model.type: liger`) and the optimizer in CPU RAM (cpu_adam). The
    answer says these were assumed (Request.assumed "alst")."""
    if not s.alst:
        return
    if s.said.get("framework") == "deepspeed":  # "DeepSpeed ALST": ArcticTraining runs it, with its own switches
        s.said["framework"] = "arctictraining"
    filled = [s.set(name, value) for name, value in ALST_RECIPE]
    s.cp_no_degree = True
    parallel.cp_from_gpus(s)
    if any(filled):
        s.assumed.append("alst")


def fused_loss(s: Scan) -> None:
    """"с liger", "fused loss", "chunked CE", "cut cross-entropy"; "без liger" is off."""
    if s.words.isdisjoint(FUSED_WORDS) and s.words.isdisjoint(FUSED.firsts):
        return
    for i, t in enumerate(s.toks):
        if t.kind != WORD:
            continue
        if t.text in FUSED_WORDS or FUSED.at(s.texts, i) or (
                t.text == "cut" and s.word(s.skip(i + 1, GLUE, 1)) in ("cross", "crossentropy")):
            s.set("fused_loss", s.near(i, NEG_BEFORE, 2, 0) is None)
            return


def _add(s: Scan, key: str) -> None:
    if key not in s.unsupported:
        s.unsupported.append(key)


def unsupported(s: Scan) -> None:
    """Things named that the engine cannot honour: TPUs, CPU-only, Apple silicon, vision/audio/diffusion
    models, unmodelled serving engines, disk space for checkpoints. Model ids count too ("…-Vision")."""
    toks = s.toks
    if s.words.isdisjoint(TRIGGERS):
        return
    for i, t in enumerate(toks):
        if t.kind == PUNCT or t.text not in TRIGGERS:
            continue
        w = t.text
        if w in UNSUPPORTED_WORDS and not (i in s.ids and UNSUPPORTED_WORDS[w] in ID_SILENT):
            _add(s, UNSUPPORTED_WORDS[w])
        elif w == "v" and any(k in TPU_KEYS for k, _ in _keys(s, i)) and s.near(i, frozenset({"tpu"}), 3, 0):
            _add(s, "tpu")
        elif w in CPU_WORDS:
            nxt = s.skip(i + 1, GLUE, 1)
            if s.word(nxt) in RAM_WORDS or s.near(i, OFFLOAD_HEADS, 4, 4) is not None:  # "CPU RAM", "cpu offload"
                continue
            before = toks[i - 1].text if i > 0 else ""
            after = toks[nxt].text if nxt < s.n else ""
            if before in CPU_ONLY_LEADS or after in ("only", "inference", "инференс") or \
                    (i > 1 and before in OWNERS and toks[i - 2].text in CPU_ONLY_LEADS):
                _add(s, "cpu_only")
        elif w in APPLE_CHIPS and s.word(i + 1) in APPLE_TIERS:
            _add(s, "apple")
        elif (w in DISK_WORDS and s.near(i, DISK_CONTEXT, 4, 4) is not None and
              s.near(i, OFFLOAD_HEADS, 4, 4) is None) or (w in CHECKPOINT_NOUNS and s.near(i, SIZE_VERBS, 3, 3)):
            _add(s, "disk")
        elif NO_GPU_P.at(s.texts, i):
            _add(s, "cpu_only")
        # "m", "2" glued: "M2 Max"
        if t.kind == WORD and w == "m" and i + 2 < s.n and s.glued(i + 1) and toks[i + 1].text in ("1", "2", "3", "4") \
                and s.word(i + 2) in APPLE_TIERS:
            _add(s, "apple")


TRIGGERS = (frozenset(UNSUPPORTED_WORDS) | CHECKPOINT_NOUNS | CPU_WORDS | APPLE_CHIPS | DISK_WORDS | NO_GPU_P.firsts
            | {"v", "m"})


def _keys(s: Scan, i: int) -> list[tuple[str, int]]:
    from engine.parse.serving import glued_key
    return glued_key(s, i, 4)


def colab(s: Scan) -> None:
    """Colab and Kaggle name a GPU without saying it: the free tier's T4 (Kaggle: two), said as assumed.
    "Colab Pro" gets the A100 40GB that Pro's premium GPUs include. A GPU named wins."""
    if s.words.isdisjoint(COLAB_WORDS):
        return
    for i, t in enumerate(s.toks):
        if t.kind != WORD or t.text not in COLAB_WORDS:
            continue
        if s.gpus:
            return
        kaggle = t.text.startswith(("kaggle", "каггл", "кагл"))
        pro = s.word(i + 1) in ("pro", "про", "pro+")
        name, memory, count = ("A100 40GB SXM", 40.0, 1) if pro else ("T4", 16.0, 2 if kaggle else 1)
        s.gpus.append((i, {"name": name, "memory_gb": memory, "count": count}, kaggle))
        s.assumed.append("gpus")
        return


# GRPO/PPO rollouts on vLLM: "server mode", "vllm-serve", "в режиме сервера", "на отдельной карте" put vLLM on GPUs of
# its own (TRL vllm_mode="server"); "colocate(d)" shares the training GPUs; "sleep mode" frees vLLM's memory in the step
SERVER_PAIRS = frozenset({("server", "mode"), ("server", "режим"), ("server", "режиме"), ("серверном", "режиме"),
                          ("серверный", "режим"), ("режиме", "сервера"), ("режим", "сервера"), ("vllm", "server"),
                          ("vllm", "serve"), ("vllm", "сервер"), ("vllm", "сервером")})
SEPARATE_WORDS = frozenset({"separate", "dedicated", "отдельной", "отдельном", "отдельную", "отдельный", "выделенной"})
SEPARATE_NOUNS = frozenset({"gpu", "gpus", "card", "карте", "карту", "гпу", "видеокарте", "сервере", "server", "node",
                            "ноде"})
COLOCATE_WORDS = frozenset({"colocate", "colocated", "colocation", "co", "колокация", "колокации", "колокейт"})


def rollout(s: Scan) -> None:
    """The vLLM rollout's mode of a GRPO/PPO question, when said (Request.rollout); none said is engine.posttrain's
    default (colocated), shown as an assumption."""
    if s.said.get("stage") not in ("grpo", "ppo"):
        return
    texts = [t.text for t in s.toks if t.text not in ("-", "_")]
    mode: str | None = None
    sleep = False
    for i, w in enumerate(texts):
        after = texts[i + 1] if i + 1 < len(texts) else ""
        if (w, after) in SERVER_PAIRS or (w in SEPARATE_WORDS and after in SEPARATE_NOUNS):
            mode = mode or "server"
        elif w in COLOCATE_WORDS and (w != "co" or after in ("located", "locate")):
            mode = mode or "colocate"
        elif w == "sleep" or (w in ("режим", "режиме") and after == "сна"):
            sleep = True
    if mode is None and not sleep:
        return
    said: dict[str, object] = {"engine": "vllm", "mode": mode}
    if sleep and mode != "server":
        said["sleep"] = True
    s.set("rollout", said)


def fsdp_qlora(s: Scan) -> None:
    """"qlora 70b на 2х3090 fsdp": QLoRA sharded with FSDP is the fsdp_qlora recipe (Answer.AI; the 4-bit shards
    stored in bf16 so FSDP can flatten them), with its CPU offload of the frozen weights when a card is short."""
    if s.said.get("method") == "qlora" and s.said.get("sharding") == "fsdp" and s.said.get("framework") is None:
        s.set("framework", "fsdp-qlora")
