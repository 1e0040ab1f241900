"""Command lines: `accelerate launch`, `torchrun`, `deepspeed`, `trl`, `tune run`, `vllm serve`, SGLang, `llama-server`
(flags: options/*.txt). Parsed with shlex, never executed."""

from __future__ import annotations

import re
import shlex
from typing import Any

from engine.configs.common import as_float, as_int, target_tokens, targets_from_tokens
from engine.configs.options import known
from engine.configs.readers.collect import Collector, as_bool
from engine.configs.readers.flags import flags
from engine.configs.readers.mappings import hf_args
from engine.configs.readers.serving import _engine_options, _llama_server, _ollama, _sglang, _tgi, _vllm
from engine.configs.writers.torchtune import ATTN, FUSED_LOSS, OPTIMIZERS

PROGRAMS = ("accelerate", "torchrun", "deepspeed", "trl", "tune", "vllm", "llama-server", "sglang", "python",
            "python3", "llamafactory-cli", "axolotl", "text-generation-launcher", "ollama")
ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
TRL_STAGE = {"sft": "sft", "dpo": "dpo", "grpo": "grpo", "kto": "kto", "reward": "rm"}

def _int_or_one(value: Any) -> int:
    return as_int(value) or 1


# the launchers' flags that take no value (options/accelerate.txt, torchrun.txt, deepspeed.txt)
ACCELERATE_SWITCHES = ("--multi_gpu", "--use_fsdp", "--use_deepspeed", "--cpu", "--debug", "--quiet",
                       "--same_network", "--no_python", "--use_megatron_lm", "--use_parallelism_config",
                       "--downcast_bf16", "--enable_cpu_affinity", "--tpu")
TORCHRUN_SWITCHES = ("--standalone", "--no-python", "--no_python", "--run-path", "--run_path")
DEEPSPEED_SWITCHES = ("--no_ssh", "--no_python", "--module", "--force_multi", "--no_local_rank",
                      "--enable_each_rank_log", "--no_ssh_check", "--save_pid", "--bind_cores_to_rank", "--autotuning")
# the flags that say how many GPUs: per node or nodes, and the value's converter (torchrun's --nnodes may be MIN:MAX)
TORCHRUN_GPUS: dict[str, tuple[str, Any]] = {"--nproc-per-node": ("per", _int_or_one),
                                             "--nproc_per_node": ("per", _int_or_one),
                                             "--nnodes": ("nodes", lambda v: _int_or_one(str(v).split(":")[-1]))}
DEEPSPEED_GPUS: dict[str, tuple[str, Any]] = {"--num_gpus": ("per", _int_or_one),
                                              "--num_accelerators": ("per", _int_or_one),
                                              "--num_nodes": ("nodes", _int_or_one)}


def split(text: str) -> list[str] | None:
    """argv of the first command in the text (comments and line continuations handled); None when not shell."""
    lines: list[str] = []
    for ln in text.splitlines():
        if not ln.strip() or (ln.lstrip().startswith("#") and not lines):
            continue
        lines.append(ln)
        if not ln.rstrip().endswith("\\"):
            break  # the first command (a script may hold more)
    joined = " ".join(ln.rstrip().rstrip("\\") for ln in lines)
    try:
        argv = shlex.split(joined, comments=True)
    except ValueError:
        return None
    return argv or None


def program(argv: list[str]) -> tuple[list[str], list[str]]:
    """(env assignments, argv without them); `docker run … IMAGE ARGS` is the image's own command with its `-e`s."""
    i = 0
    while i < len(argv) and ENV.match(argv[i]):
        i += 1
    if argv[i:i + 2] == ["docker", "run"]:
        env, inner = _docker_run(argv[i + 2:])
        return [*argv[:i], *env], inner
    return argv[:i], argv[i:]


# `docker run` options that take a value (docker CLI reference, `docker run --help`); the others are switches
DOCKER_VALUE_OPTIONS = frozenset({
    "-e", "--env", "--env-file", "-p", "--publish", "-v", "--volume", "--mount", "--gpus", "--name", "--ipc",
    "--shm-size", "--runtime", "-w", "--workdir", "--network", "--net", "--entrypoint", "--ulimit", "--device",
    "-u", "--user", "--cpus", "-m", "--memory", "--label", "-l", "--restart", "--platform", "--hostname", "-h",
    "--add-host", "--cap-add", "--cap-drop", "--security-opt", "--pull", "--log-driver", "--log-opt"})
# the engines' images and the command each one's ENTRYPOINT runs (the arguments after the image are its flags);
# an image not listed runs the command written after it (`lmsysorg/sglang … python3 -m sglang.launch_server …`)
DOCKER_ENTRYPOINTS: tuple[tuple[str, list[str]], ...] = (
    ("vllm/vllm-openai", ["vllm", "serve"]), ("rocm/vllm", ["vllm", "serve"]),
    ("text-generation-inference", ["text-generation-launcher"]), ("llama.cpp:server", ["llama-server"]),
    ("llama.cpp:full", []))


def _docker_run(args: list[str]) -> tuple[list[str], list[str]]:
    env: list[str] = []
    i = 0
    while i < len(args) and args[i].startswith("-"):
        name, eq, value = args[i].partition("=")
        if name in DOCKER_VALUE_OPTIONS and not eq:
            value, i = (args[i + 1] if i + 1 < len(args) else ""), i + 1
        if name in ("-e", "--env") and ENV.match(value):
            env.append(value)
        i += 1
    if i >= len(args):
        return env, ["docker"]
    image, rest = args[i], args[i + 1:]
    base = image.split("@", 1)[0]
    for name, entry in DOCKER_ENTRYPOINTS:
        if name in base and not (rest and rest[0].rsplit("/", 1)[-1] in PROGRAMS):
            return env, [*entry, *rest] if entry else rest
    return env, rest or ["docker"]


FLAG = re.compile(r"^--?[A-Za-z]")
CYRILLIC = re.compile("[а-яё]", re.I)
FILE = re.compile(r"\.(py|ya?ml|json|gguf|sh|toml|safetensors)$", re.I)


OLLAMA_TAG = re.compile(r"[a-z0-9][a-z0-9._-]*(:[a-z0-9._-]+)?")  # a library model and its tag
SUBCOMMAND = re.compile(r"[a-z][a-z_-]{0,30}")  # a bare tool or subcommand word: no size, no model, no Russian


def looks_like_command(text: str) -> bool:
    argv = split(text)
    if not argv:
        return False
    _, rest = program(argv)
    if not rest or rest[0].rsplit("/", 1)[-1] not in PROGRAMS:
        return False
    # a launch line carries flags or a model path; "vllm qwen2.5-32b на l40s 16 пользователей" is a question
    args = rest[1:]
    if rest[0] == "ollama" and len(args) == 2 and args[0] in ("run", "pull") and OLLAMA_TAG.fullmatch(args[1]):
        return True  # "ollama run qwen2.5:32b"
    if any(FLAG.match(a) or FILE.search(a) for a in args):
        return True
    if len(args) <= 2 and all(SUBCOMMAND.fullmatch(a) for a in args):  # "trl", "tune ls", "accelerate launch"
        return True
    return any("/" in a for a in args) and not any(CYRILLIC.search(a) and "/" not in a for a in args)


def _secrets(env: list[str], c: Collector) -> None:
    for e in env:
        name, _, value = e.partition("=")
        if not c.secret(name, value):
            c.unknown(f"env:{name}", value)


SEPARATORS = ("&", "&&", ";")


def _job_argv(argv: list[str], c: Collector) -> list[str]:
    """One line of several commands: `trl vllm-serve … & accelerate launch … train.py` (GRPO with vLLM in server
    mode, as `config` writes it) is the trainer's job, its rollout a vLLM server on GPUs of its own."""
    parts: list[list[str]] = [[]]
    for a in argv:
        if a in SEPARATORS:
            parts.append([])
        else:
            parts[-1].append(a)
    parts = [p for p in parts if p]
    if len(parts) < 2:
        return argv
    job = parts[-1]
    for part in parts[:-1]:
        _, cmd = program(part)
        if cmd[:2] == ["trl", "vllm-serve"]:
            fl, _ = flags(cmd[2:])
            get = {k.lstrip("-").replace("-", "_"): v for k, v in fl.items()}
            c.fields["rollout"] = {"engine": "vllm", "mode": "server", "on": True,
                                   "tensor_parallel": as_int(get.get("tensor_parallel_size")),
                                   "gpu_memory_utilization": as_float(get.get("gpu_memory_utilization"))}
    return job


def read(text: str, c: Collector) -> None:
    argv = _job_argv(split(text) or [], c)
    env, argv = program(argv)
    _secrets(env, c)
    prog = argv[0].rsplit("/", 1)[-1]
    rest = argv[1:]
    if prog in ("python", "python3") and len(rest) >= 2 and rest[0] == "-m":
        module, rest = rest[1], rest[2:]
        prog = {"sglang.launch_server": "sglang", "vllm.entrypoints.openai.api_server": "vllm-api",
                "torch.distributed.run": "torchrun", "accelerate.commands.launch": "accelerate-launch"}.get(module,
                                                                                                          module)
    elif prog in ("python", "python3") and rest:
        _script(rest, c)
        return
    if prog == "accelerate" and rest[:1] == ["launch"]:
        prog, rest = "accelerate-launch", rest[1:]
    if prog == "vllm" and rest[:1] == ["serve"]:
        prog, rest = "vllm-serve", rest[1:]
    if prog == "ollama":
        _ollama(rest, c, dict(e.split("=", 1) for e in env))
        return
    if prog in ("vllm-serve", "vllm-api"):
        _vllm_env(dict(e.split("=", 1) for e in env), c)
    handler = {"accelerate-launch": _accelerate, "torchrun": _torchrun, "deepspeed": _deepspeed, "trl": _trl,
               "tune": _tune, "vllm-serve": _vllm, "vllm-api": _vllm, "sglang": _sglang,
               "llama-server": _llama_server, "text-generation-launcher": _tgi}.get(prog)
    if handler is None:
        c.ignore(f"command:{prog}")
        return
    handler(rest, c)


def _vllm_env(env: dict[str, str], c: Collector) -> None:
    """`VLLM_USE_V1=1 vllm serve …`: the engine switch of 0.7-0.10 (vllm/envs.py VLLM_USE_V1), as the log's engine
    line says it; the profile and the defaults follow it (serving.toml [vllm.v1])."""
    value = env.get("VLLM_USE_V1", "").strip()
    if value in ("0", "1"):
        _engine_options(c, vllm_use_v1=value == "1")
        c.ignored[:] = [k for k in c.ignored if k != "env:VLLM_USE_V1"]
        c.no_effect[:] = [k for k in c.no_effect if k != "env:VLLM_USE_V1"]


def _script(args: list[str], c: Collector) -> None:
    """A training script and its arguments: HF/TRL flags; a tool entry point names a config file not sent."""
    if not args:
        return
    if args[0] == "-m" and len(args) > 1:
        module, args = args[1], args[2:]
        if module.startswith("axolotl"):
            c.fields.setdefault("framework", "axolotl")
            c.ignore("axolotl config file (send the YAML itself)")
            return
    elif args[0].rsplit("/", 1)[-1] in ("llamafactory-cli", "axolotl"):
        c.ignore(f"{args[0]} config file (send the YAML itself)")
        return
    else:
        args = args[1:]
    fl, _ = flags(args)
    data = {k.lstrip("-").replace("-", "_"): (v if v is not True else "true") for k, v in fl.items()}
    hf_args({k: v for k, v in data.items() if k != "config"}, c)
    if "config" in data:
        c.ignore("--config (the file it names was not sent)")


def _accelerate(args: list[str], c: Collector) -> None:
    names = {f[5:] for f in known("accelerate") if f.startswith("flag:")}
    own, i = _launcher_args(args, ACCELERATE_SWITCHES, ("-m",))
    fl, _ = flags(own)
    for key, value in fl.items():
        k = "--" + key[2:].replace("-", "_") if key.startswith("--") else key
        if k == "--num_processes":
            c.gpu_count = as_int(value)
        elif k == "--use_fsdp":
            c.set("sharding", "fsdp")
        elif k == "--fsdp_offload_params":
            c.set("offload", as_bool(value))
        elif k == "--use_deepspeed":
            c.fields.setdefault("sharding", "zero2")
        elif k == "--zero_stage":
            c.set("sharding", {0: "ddp", 1: "zero1", 2: "zero2", 3: "zero3"}.get(as_int(value) or -1))
        elif k in ("--offload_optimizer_device", "--offload_param_device"):
            if str(value).lower() in ("cpu", "nvme"):
                c.set("offload", True)
        elif k == "--mixed_precision":
            if str(value).lower() in ("bf16", "fp16", "fp8"):
                c.set("mixed_precision", "amp")
        elif k == "--multi_gpu":
            c.fields.setdefault("sharding", "ddp")
        elif k == "--parallelism_config_cp_size":
            c.set("context_parallel", as_int(value))
        elif k == "--config_file":
            c.ignore("--config_file (the file it names was not sent)")
        elif k not in names:
            c.other(k, value)
    _script(args[i:], c)


def _launcher_args(args: list[str], switches: tuple[str, ...], stop: tuple[str, ...] = ()) -> tuple[list[str], int]:
    """A launcher's own flags (each with its value unless it is a switch) and where the script's argv starts."""
    i = 0
    own: list[str] = []
    while i < len(args) and args[i].startswith("-") and args[i] not in stop:
        own.append(args[i])
        if "=" not in args[i] and args[i] not in switches and i + 1 < len(args):
            i += 1
            own.append(args[i])
        i += 1
    return own, i


def _gpu_count(args: list[str], table: dict[str, tuple[str, Any]], names: set[str] | frozenset[str],
               c: Collector) -> int:
    """GPUs per node x nodes from a launcher's flags (`table`: flag → "per" or "nodes" and its converter); its other
    flags are listed when the launcher does not define them."""
    fl, _ = flags(args)
    said = {"per": 1, "nodes": 1}
    for key, value in fl.items():
        if key in table:
            what, convert = table[key]
            said[what] = convert(value)
        elif key not in names:
            c.ignore(key)
    c.gpu_count = said["per"] * said["nodes"]
    return c.gpu_count


def _torchrun(args: list[str], c: Collector) -> None:
    own, i = _launcher_args(args, TORCHRUN_SWITCHES, ("-m", "--module"))
    if _gpu_count(own, TORCHRUN_GPUS, known("torchrun"), c) > 1:
        c.fields.setdefault("sharding", "ddp")
    _script(["-m", *args[i + 1:]] if i < len(args) and args[i] in ("-m", "--module") else args[i:], c)


def _deepspeed(args: list[str], c: Collector) -> None:
    own, i = _launcher_args(args, DEEPSPEED_SWITCHES)
    _gpu_count(own, DEEPSPEED_GPUS, {f[5:] for f in known("deepspeed") if f.startswith("flag:")}, c)
    c.fields.setdefault("framework", "deepspeed")
    _script(args[i:], c)


def _trl(args: list[str], c: Collector) -> None:
    if not args:
        return
    stage = TRL_STAGE.get(args[0])
    if stage is None:
        c.ignore(f"trl {args[0]}")
        return
    c.fields.setdefault("framework", "trl")
    c.set("stage", stage)
    _script(["trl", *args[1:]], c)


def _tune(args: list[str], c: Collector) -> None:
    c.fields.setdefault("framework", "torchtune")
    if args[:1] != ["run"]:
        c.ignore("tune (only `tune run` is read)")
        return
    args = args[1:]
    per = 1
    if args[:1] in (["--nproc_per_node"], ["--nproc-per-node"]) and len(args) > 1:
        per = as_int(args[1]) or 1
        args = args[2:]
    names = known("torchtune")
    recipe = args[0] if args else ""
    if f"recipe:{recipe}" not in names:
        c.ignore(f"recipe {recipe}")
    rest = args[1:]
    config = ""
    if rest[:1] == ["--config"] and len(rest) > 1:
        config, rest = rest[1], rest[2:]
        if f"config:{config}" not in names:
            c.ignore("--config (the file it names was not sent)")
    c.gpu_count = per
    if config and not c.model:
        c.model = tune_model(config)
    kind = config.rsplit("/", 1)[-1]
    peft = "lora" in recipe
    c.set("method", ("qlora" if "qlora" in kind else "lora") if peft else "full")
    c.set("bits", 4 if peft and "qlora" in kind else 16)
    if peft and "qlora" in kind:
        c.set("quantization", "nf4")
    c.set("stage", "dpo" if "dpo" in recipe else "grpo" if "grpo" in recipe else "ppo" if "ppo" in recipe else "sft")
    c.set("sharding", "fsdp" if "distributed" in recipe and per > 1 else "none")
    c.set("mixed_precision", "pure_bf16")
    items = []
    for item in rest:
        key, eq, value = item.partition("=")
        if eq:
            items.append((key, value))
        elif key.startswith("~") and key[1:] in known("torchtune"):
            continue  # removes a key from the config (torchtune/config/_utils.py): nothing to estimate
        else:
            c.ignore(key)
    tune_overrides(items, c, peft)


# torchtune config folders (recipes/configs/<folder>/) → the model family's catalog name prefix
TUNE_FAMILIES = {"llama3_3": "Llama-3.3", "llama3_2": "Llama-3.2", "llama3_1": "Llama-3.1", "llama3": "Llama-3",
                 "llama2": "Llama-2", "qwen2_5": "Qwen2.5", "qwen3": "Qwen3", "qwen2": "Qwen2", "gemma2": "Gemma-2",
                 "gemma": "Gemma", "mistral": "Mistral-7B-v0.1", "phi4": "Phi-4", "phi3": "Phi-3-mini-4k"}


def tune_model(config: str) -> str | None:
    """The model a built-in config trains: `llama3_1/8B_lora` is Llama-3.1-8B (its folder and size)."""
    folder, _, name = config.partition("/")
    family = TUNE_FAMILIES.get(folder)
    size = re.match(r"(\d+(?:\.\d+)?B)_", name)
    if family is None:
        return None
    if family.startswith(("Mistral", "Phi")):
        return family
    return f"{family}-{size.group(1)}" if size else None


def tune_overrides(items: list[tuple[str, str]], c: Collector, peft: bool) -> None:
    """torchtune config keys (dotted) and their values as text, from `tune run` overrides or a config YAML."""
    names = known("torchtune")
    tokens: set[str] = set(target_tokens("all_linear")) if peft else set()
    # torch.optim.AdamW is "adamw" and "adamw_fused" written: read back as the first ("adamw"), its `fused` flag being
    # the recipe's (torchtune's profile counts the foreach step)
    back_opt = {v: k for k, v in reversed(OPTIMIZERS.items())}
    for key, value in items:
        if key == "batch_size":
            c.set("batch_size", as_int(value))
        elif key == "tokenizer.max_seq_len":
            c.set("seq_len", as_int(value))
        elif key == "enable_activation_checkpointing":
            c.set("gradient_checkpointing", as_bool(value))
        elif key == "dtype":
            c.set("mixed_precision", "pure_bf16" if value == "bf16" else None)
            if value != "bf16":
                c.ignore("dtype")
        elif key == "loss._component_":
            c.set("fused_loss", value == FUSED_LOSS)  # CEWithChunkedOutputLoss: the recipes' default (chunked)
        elif key == "optimizer._component_":
            if value in back_opt:
                c.set("optimizer", back_opt[value])
            else:
                c.ignore(key)
        elif key == "model.lora_rank":
            c.set("lora_rank", as_int(value))
        elif key == "model.lora_attn_modules":
            names_ = [v.strip() for v in value.strip("[]").split(",") if v.strip()]
            back = {m: t for t, m in ATTN.items()}
            tokens -= set(ATTN)
            tokens |= {back[m] for m in names_ if m in back}
        elif key == "model.apply_lora_to_mlp":
            tokens = (tokens | {"gate", "up", "down"}) if as_bool(value) else tokens - {"gate", "up", "down"}
        elif key == "model.apply_lora_to_output":
            tokens = (tokens | {"lm_head"}) if as_bool(value) else tokens - {"lm_head"}
        elif key == "fsdp_cpu_offload":
            c.set("offload", as_bool(value))
        elif key == "context_parallel_dim":
            c.set("context_parallel", as_int(value))
        elif key in names:
            c.unknown(key, value)
        else:
            c.other(key, value)
    if peft and tokens:
        c.set("lora_targets", targets_from_tokens(tokens))
    c.default("offload", False)
