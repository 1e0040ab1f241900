"""Python training scripts (TRL, Unsloth, plain Transformers): the literal keyword arguments of the calls that set
memory (trainer configs, LoraConfig, BitsAndBytesConfig, from_pretrained, get_peft_model). Parsed with `ast`, never
executed; a value that is not a literal (a variable, an expression) is listed as not understood."""

from __future__ import annotations

import ast
from typing import Any

from engine.configs.common import as_int
from engine.configs.readers.collect import Collector, as_bool, set_method
from engine.configs.readers.mappings import _hf_key
from engine.configs.safety import ConfigInputError

CONFIGS = {"SFTConfig": "sft", "DPOConfig": "dpo", "GRPOConfig": "grpo", "KTOConfig": "kto", "RewardConfig": "rm",
           "ORPOConfig": "orpo", "CPOConfig": "simpo", "TrainingArguments": None, "Seq2SeqTrainingArguments": None}
# CPOConfig is read as SimPO: both are reference-free preference pairs (TRL f2cd57710ae3 cpo_trainer.md), one memory


def looks_like_python(text: str) -> bool:
    lines = [ln.strip() for ln in text.splitlines()]
    return any(ln.startswith(("import ", "from ")) and (" import " in ln or ln.startswith("import ")) for ln in lines)


def _name(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return f"{_name(func.value)}.{func.attr}"
    if isinstance(func, ast.Name):
        return func.id
    return ""


def _constants(tree: ast.Module) -> dict[str, Any]:
    """Module-level NAME = literal assignments (MODEL = 'org/name')."""
    out: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
                continue
    return out


def _value(node: ast.expr, consts: dict[str, Any]) -> tuple[bool, Any]:
    if isinstance(node, ast.Name) and node.id in consts:
        return True, consts[node.id]
    try:
        return True, ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
        return False, None


def _lora(kwargs: dict[str, Any], c: Collector) -> None:
    """LoraConfig(...) and Unsloth's get_peft_model(...) name the rank and the target modules alike."""
    c.set("lora_rank", as_int(kwargs.get("r")))
    if "target_modules" in kwargs:
        c.targets("target_modules", kwargs["target_modules"])


def _unsloth_checkpointing(kwargs: dict[str, Any], c: Collector) -> None:
    """Unsloth's from_pretrained and get_peft_model both take use_gradient_checkpointing."""
    if "use_gradient_checkpointing" in kwargs:
        c.set("gradient_checkpointing", kwargs["use_gradient_checkpointing"] not in (False, "false"))
        if kwargs["use_gradient_checkpointing"] == "unsloth":  # its checkpointer offloads layer inputs
            c.set("offload", True)


def read(text: str, c: Collector) -> None:
    try:
        tree = ast.parse(text)
    except RecursionError:
        raise ConfigInputError("too_deep") from None
    except (SyntaxError, ValueError, MemoryError):
        raise ConfigInputError("invalid_python") from None
    consts = _constants(tree)
    peft = False
    quant: int | None = None
    unsloth = False
    full = False
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _name(node.func)
        short = name.rsplit(".", 1)[-1]
        kwargs: dict[str, Any] = {}
        for kw in node.keywords:
            if kw.arg is None:
                continue
            ok, val = _value(kw.value, consts)
            if ok:
                kwargs[kw.arg] = val
            elif (short in CONFIGS or short in ("LoraConfig", "BitsAndBytesConfig", "get_peft_model")) \
                    and not c.secret(kw.arg, None):
                c.ignore(f"{short}.{kw.arg} (not a literal)")
        first = _value(node.args[0], consts)[1] if node.args else None
        if short in CONFIGS:
            c.fields.setdefault("framework", "trl" if CONFIGS[short] or short.endswith("Config") else "hf")
            if CONFIGS[short]:
                c.set("stage", CONFIGS[short])
            for key, value in kwargs.items():
                _hf_key(key, value, c)
        elif short == "LoraConfig":
            peft = True
            _lora(kwargs, c)
        elif short == "BitsAndBytesConfig":
            quant = 4 if as_bool(kwargs.get("load_in_4bit")) else 8 if as_bool(kwargs.get("load_in_8bit")) else quant
        elif name.endswith("FastLanguageModel.from_pretrained") or name.endswith("FastModel.from_pretrained"):
            unsloth = True
            c.model = str(kwargs.get("model_name") or first or "") or None
            c.set("seq_len", as_int(kwargs.get("max_seq_length")))
            if as_bool(kwargs.get("load_in_4bit")):
                quant = 4
            elif as_bool(kwargs.get("load_in_8bit")):
                quant = 8
            full = bool(as_bool(kwargs.get("full_finetuning")))
            _unsloth_checkpointing(kwargs, c)
        elif name.endswith("get_peft_model") and unsloth:
            peft = True
            _lora(kwargs, c)
            _unsloth_checkpointing(kwargs, c)
        elif short == "from_pretrained" and "AutoModel" in name:
            if isinstance(first, str) and c.model is None:
                c.model = first
            if "attn_implementation" in kwargs:
                c.set("flash_attention", str(kwargs["attn_implementation"]).lower() != "eager")
            for key in ("load_in_4bit", "load_in_8bit"):
                if as_bool(kwargs.get(key)):
                    quant = 4 if key == "load_in_4bit" else 8
        elif short.endswith("Trainer") and short != "Trainer":
            # TRL's trainers load a model given by its Hub id (SFTTrainer(model="Qwen/...")); the old SFTTrainer took
            # max_seq_length itself (huggingface/trl v0.7 trl/trainer/sft_trainer.py SFTTrainer.__init__)
            model_id = kwargs.get("model", first)
            if isinstance(model_id, str) and c.model is None:
                c.model = model_id
            if "max_seq_length" in kwargs:
                c.set("seq_len", as_int(kwargs["max_seq_length"]))
            for key, value in kwargs.items():
                c.secret(key, value)
        elif kwargs:
            for key, value in kwargs.items():
                c.secret(key, value)
    from engine.configs.readers.mappings import finish_rollout

    finish_rollout(c)
    if unsloth:
        c.fields["framework"] = "unsloth"
        c.set("fused_loss", True)  # Unsloth always fuses the cross-entropy (its own kernel)
        c.default("flash_attention", True)
        peft = peft and not full
    set_method(c, peft, quant)
    framework = c.fields.get("framework")
    c.default("gradient_checkpointing", framework in ("trl", "unsloth"))
    c.default("fused_loss", False)
    c.default("offload", False)
    if framework == "trl":
        c.default("mixed_precision", "amp")
        c.default("stage", "sft")
