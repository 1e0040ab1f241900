"""`check`: configuration text → the Request it describes, the keys not understood, or an error key.

read_config(text) recognises the format (command line, Python script, JSON, YAML flavour) and reads it;
read_bundle(files) reads several files of one job (a script with its accelerate.yaml and ds_config.json).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from engine.configs.model import ReadResult
from engine.configs.options import known
from engine.configs.readers import cmdline, mappings, python
from engine.configs.readers.collect import Collector
from engine.configs.safety import ConfigInputError, check_text, load_json, load_yaml
from engine.schema import ModelConfig

DS_KEYS = ("zero_optimization", "train_micro_batch_size_per_gpu", "train_batch_size", "zero_allow_untested_optimizer")


ARCTIC_KEYS = frozenset({"sequence_parallel_size", "activation_checkpoint_cpu_offload", "tiled_mlp_compute"})


def _yaml_flavour(data: dict[str, Any]) -> str | None:
    keys = set(data)
    model = data.get("model")
    if keys & ARCTIC_KEYS or (isinstance(model, dict) and "name_or_path" in model and isinstance(data.get("data"), dict)
                              and "type" in keys):
        return "arctictraining"  # before Axolotl: both say micro_batch_size
    if keys & {"distributed_type", "compute_environment"}:
        return "accelerate"
    if any(isinstance(v, dict) and "_component_" in v for v in data.values()):
        return "torchtune"
    if keys & {"base_model", "adapter", "micro_batch_size", "sequence_len", "lora_target_linear"}:
        return "axolotl"
    if "model_name_or_path" in keys and keys & {"stage", "finetuning_type", "cutoff_len", "template",
                                                "quantization_bit", "lora_target"}:
        return "llama-factory"
    if keys & set(DS_KEYS):
        return "deepspeed"
    hf = known("transformers") | known("trl")
    if keys & hf:
        return "hf-args"
    return None


ARCHITECTURE_KEYS = ("num_hidden_layers", "hidden_size", "num_attention_heads", "vocab_size", "intermediate_size")


def _absurd_model_config(data: dict[str, Any]) -> bool:
    """A model's config.json (its architecture keys) with sizes no real model has (hidden_size 10^15): the
    absurd-size answer, as for "10^100B" in words, not a TrainingArguments file with keys not understood."""
    if not {"num_hidden_layers", "hidden_size"} <= set(data):
        return False
    try:
        ModelConfig.model_validate({k: data[k] for k in ARCHITECTURE_KEYS if k in data})
    except ValidationError as exc:
        return any(e["type"] in ("less_than_equal", "greater_than", "int_from_float", "int_parsing_size")
                   for e in exc.errors())
    return False


def _read_mapping(data: dict[str, Any], flavour: str, c: Collector) -> None:
    {"accelerate": mappings.accelerate_config, "axolotl": mappings.axolotl, "llama-factory": mappings.llama_factory,
     "deepspeed": mappings.deepspeed, "hf-args": mappings.hf_args, "torchtune": mappings.torchtune_config,
     "arctictraining": mappings.arctictraining}[flavour](data, c)


FRAMEWORK = {"axolotl": "axolotl", "llama-factory": "llama-factory", "deepspeed": "deepspeed", "accelerate": None,
             "hf-args": "hf", "torchtune": "torchtune", "arctictraining": "arctictraining"}


def read_config(data: str | bytes, name: str | None = None) -> ReadResult:
    """Read one configuration (file content or a pasted command line). Never raises for bad input."""
    try:
        text = check_text(data)
        return _read(text, name or "")
    except ConfigInputError as exc:
        return ReadResult(error=exc.key)
    except RecursionError:
        return ReadResult(error="too_deep")


def _read(text: str, name: str) -> ReadResult:
    stripped = text.lstrip()
    lower = name.lower()
    if lower.endswith(".py") or (not lower.endswith((".yaml", ".yml", ".json")) and python.looks_like_python(text)
                                 and not cmdline.looks_like_command(text)):
        c = Collector("python", None)
        c.header(text)
        python.read(text, c)
        return c.result()
    if stripped.startswith(("{", "[")) or lower.endswith(".json"):
        data = load_json(text)
        if not isinstance(data, dict):
            raise ConfigInputError("not_a_mapping")
        flavour = "deepspeed" if set(data) & set(DS_KEYS) else (_yaml_flavour(data) or "hf-args")
        if flavour == "hf-args" and _absurd_model_config(data):
            return ReadResult(format="model-config", error="model_out_of_range")
        c = Collector(flavour, FRAMEWORK[flavour])
        _read_mapping(data, flavour, c)
        return c.result()
    if cmdline.looks_like_command(text):
        c = Collector("command", None)
        c.header(text)
        cmdline.read(text, c)
        return c.result()
    data = load_yaml(text)
    if not isinstance(data, dict):
        raise ConfigInputError("not_a_mapping" if data is not None else "empty")
    found = _yaml_flavour(data)
    if found is None:
        raise ConfigInputError("unknown_format")
    c = Collector(found, FRAMEWORK[found])
    c.header(text)
    _read_mapping(data, found, c)
    return c.result()


def read_bundle(files: list[tuple[str, str | bytes]]) -> ReadResult:
    """Several files of one job: each read alone, then merged (the first file that says a field wins; the GPU count
    is the largest said). Errors of single files are listed under `ignored` as `<name>: <error>`."""
    results = [(name, read_config(text, name)) for name, text in files]
    rank = {"deepspeed": 0, "accelerate": 1}
    results.sort(key=lambda nr: rank.get(nr[1].format or "", 2))
    merged: dict[str, Any] = {}
    ignored: list[str] = []
    no_effect: list[str] = []
    secrets = 0
    formats = []
    for name, r in results:
        secrets += r.secrets
        ignored += [i for i in r.ignored if i not in ignored and "was not sent" not in i]
        no_effect += [k for k in r.no_effect if k not in no_effect]
        if r.error or r.request is None:
            ignored.append(f"{name}: {r.error}")
            continue
        formats.append(r.format or "")
        for key, value in r.request.model_dump(exclude_defaults=True).items():
            if key == "gpus":
                old = merged.get("gpus") or [{}]
                new = value[0]
                merged["gpus"] = [{"name": old[0].get("name") or new.get("name"),
                                   "count": max(old[0].get("count", 1), new.get("count", 1))}]
            elif key == "engine_options" and "engine_options" in merged:
                merged[key] = {**value, **merged[key]}
            else:
                merged.setdefault(key, value)
    if not formats:
        return ReadResult(ignored=ignored, no_effect=no_effect, secrets=secrets,
                          error=results[0][1].error if results else "empty")
    from engine.schema import Request

    return ReadResult(request=Request.model_validate(merged), format="+".join(formats), ignored=ignored,
                      no_effect=no_effect, secrets=secrets)
