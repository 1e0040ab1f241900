"""Developer script (not imported by the engine): rebuild the option lists in this folder from the tools' own source.

    python scripts/extract_config_options.py MIRRORS WHEELS

MIRRORS holds bare git repositories as `owner+name/repo` (what the `fetch` tool brings), WHEELS holds unpacked
wheels (transformers, sglang). Each list starts with a header: repository, commit, the files it was read from and how.
Lists for tools whose repository was too large to bring (vLLM, llama.cpp, torchrun) are transcribed by hand from the
file named in their header and are not rewritten here.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parents[1] / "engine" / "configs" / "options"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", f"--git-dir={repo}", *args], check=True, capture_output=True, text=True).stdout


def _files(repo: Path, pattern: str) -> list[str]:
    rx = re.compile(pattern)
    return sorted(p for p in _git(repo, "ls-tree", "-r", "--name-only", "HEAD").splitlines() if rx.search(p))


def _show(repo: Path, path: str) -> str:
    return _git(repo, "show", f"HEAD:{path}")


def class_fields(source: str, classes: Iterable[str] | None = None) -> list[str]:
    """Names of class-level annotated fields (dataclasses, pydantic models), of every class or the named ones."""
    wanted = set(classes) if classes is not None else None
    out: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and (wanted is None or node.name in wanted):
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    name = stmt.target.id
                    if not name.startswith("_") and name != "model_config":
                        out.append(name)
    return out


def pydantic_aliases(source: str) -> list[str]:
    return re.findall(r"alias=\"(\w+)\"", source)


def func_params(source: str, names: set[str]) -> list[str]:
    out: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and node.name in names:
            args = node.args
            for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
                if a.arg not in ("self", "cls"):
                    out.append(a.arg)
    return out


def argparse_flags(source: str) -> list[str]:
    return re.findall(r"[\"'](--?[A-Za-z][\w-]*)[\"']", "\n".join(
        m.group(0) for m in re.finditer(r"add_argument\((?:[^()]|\([^()]*\))*\)", source, re.S)))


def yaml_keys(text: str) -> list[str]:
    """Dotted key paths of a YAML mapping (torchtune recipe configs)."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return []
    out: list[str] = []

    def walk(obj: object, prefix: str) -> None:
        if isinstance(obj, dict):
            for k, v in obj.items():
                key = f"{prefix}{k}"
                out.append(key)
                walk(v, key + ".")

    walk(data, "")
    return out


def write(name: str, repo: str, commit: str, files: list[str], how: str, keys: Iterable[str]) -> None:
    uniq = sorted(set(keys))
    header = [f"# repository: {repo}", f"# commit: {commit}", f"# how: {how}"]
    header += [f"# file: {f}" for f in files]
    (HERE / f"{name}.txt").write_text("\n".join(header + uniq) + "\n", encoding="utf-8")
    print(f"{name}: {len(uniq)} keys")


def main(mirrors: Path, wheels: Path) -> None:
    # transformers TrainingArguments (shared by TRL and LLaMA-Factory)
    ta_files = ["transformers/training_args.py", "transformers/training_args_seq2seq.py"]
    ta = [k for f in ta_files for k in class_fields((wheels / f).read_text())]
    optim = re.search(r"class OptimizerNames\(.*?\n\n\n", (wheels / ta_files[0]).read_text(), re.S)
    ta += [f"optim:{v}" for v in re.findall(r"= \"(\w+)\"", optim.group(0) if optim else "")]
    write("transformers", "github.com/huggingface/transformers (PyPI wheel transformers-5.24.0)", "v5.24.0", ta_files,
          "dataclass fields of TrainingArguments and Seq2SeqTrainingArguments;"
          " `optim:` lines are OptimizerNames values",
          ta)

    qc = (wheels / "transformers/utils/quantization_config.py").read_text()
    bnb = re.search(r"class BitsAndBytesConfig\(.*?\n    def __init__\((.*?)\):", qc, re.S)
    bnb_args = re.findall(r"^\s+(\w+)(?:\s*[:=])", bnb.group(1), re.M) if bnb else []
    peft_src = (wheels / "peft/tuners/lora/config.py").read_text()
    write("peft", "github.com/huggingface/peft (PyPI wheel peft-0.21.2) and transformers 5.24.0", "v0.21.2 / v5.24.0",
          ["peft/tuners/lora/config.py", "transformers/utils/quantization_config.py"],
          "`LoraConfig:` dataclass fields of LoraConfig; `BitsAndBytesConfig:` parameters of its __init__",
          [*(f"LoraConfig:{k}" for k in class_fields(peft_src, {"LoraConfig"})),
           *(f"LoraConfig:{k}" for k in ("task_type", "target_modules", "modules_to_save")),
           *(f"BitsAndBytesConfig:{k}" for k in bnb_args if k not in ("self", "kwargs"))])

    ax = mirrors / "axolotl-ai-cloud+axolotl/repo"
    files = _files(ax, r"^src/axolotl/(utils/schemas/[^/]+\.py|integrations/[^/]+/args\.py)$")
    keys = [k for f in files for k in class_fields(_show(ax, f))]
    keys += [f"fsdp_config.{k}" for k in class_fields(_show(ax, "src/axolotl/utils/schemas/fsdp.py"))]
    keys += [f"trl.{k}" for k in class_fields(_show(ax, "src/axolotl/utils/schemas/trl.py"))]
    keys += [f"vllm.{k}" for k in class_fields(_show(ax, "src/axolotl/utils/schemas/vllm.py"), {"VllmConfig"})]
    keys += [f"file:{f}" for f in _files(ax, r"^deepspeed_configs/.*\.json$")]
    write("axolotl", "github.com/axolotl-ai-cloud/axolotl", _git(ax, "rev-parse", "HEAD").strip(), files,
          "pydantic fields of the config schema and integration args;"
          " `fsdp_config.` / `trl.` / `vllm.` keys from fsdp.py / trl.py / vllm.py; `file:` lines"
          " are the DeepSpeed configs the repository ships", keys)

    lf = mirrors / "hiyouga+LLaMA-Factory/repo"
    files = _files(lf, r"^src/llamafactory/hparams/\w+_args\.py$")
    keys = [k for f in files for k in class_fields(_show(lf, f))]
    keys += [f"file:{f}" for f in _files(lf, r"^examples/deepspeed/.*\.json$")]
    write("llama_factory", "github.com/hiyouga/LLaMA-Factory", _git(lf, "rev-parse", "HEAD").strip(), files,
          "dataclass fields of the hparams (YAML also takes every transformers.txt key); `file:` lines are the"
          " DeepSpeed configs the repository ships", keys)

    trl = mirrors / "huggingface+trl/repo"
    files = _files(trl, r"^trl/(trainer/(\w+_config|model_config)\.py|scripts/utils\.py)$")
    keys = [k for f in files for k in class_fields(_show(trl, f))]
    commands = re.findall(r"TrainingCommand\(\"(\w+)\"\)", _show(trl, "trl/cli/commands/__init__.py"))
    write("trl", "github.com/huggingface/trl", _git(trl, "rev-parse", "HEAD").strip(),
          [*files, "trl/cli/commands/__init__.py"],
          "dataclass fields of the trainer configs, ModelConfig and ScriptArguments (each also a --flag of `trl`;"
          " TrainingArguments keys are in transformers.txt); `command:` lines are the `trl` subcommands",
          [*keys, *(f"command:{c}" for c in commands)])

    tt = mirrors / "pytorch+torchtune/repo"
    reg = _show(tt, "torchtune/_recipe_registry.py")
    recipes = re.findall(r"Recipe\(\s*name=\"([\w/]+)\"", reg)
    configs = re.findall(r"Config\(\s*name=\"([\w/.]+)\"", reg)
    files = _files(tt, r"^recipes/configs/.*\.yaml$")
    keys = []
    for f in files:
        fkeys = yaml_keys(_show(tt, f))
        keys += fkeys
        if "optimizer.fused" in fkeys:
            keys.append(f"optimizer_fused:{f[len('recipes/configs/'):-len('.yaml')]}")
    recipe_files = _files(tt, r"^recipes/[\w]+\.py$")
    for f in recipe_files:
        src = _show(tt, f)
        keys += re.findall(r"cfg\.get\(\s*\"(\w+)\"", src)
        if "context_parallel_dim" in src:
            keys.append(f"cp_recipe:{f[len('recipes/'):-3]}")
    write("torchtune", "github.com/pytorch/torchtune", _git(tt, "rev-parse", "HEAD").strip(),
          ["torchtune/_recipe_registry.py", "recipes/configs/**/*.yaml", "recipes/*.py"],
          "`recipe:` and `config:` lines from the recipe registry; dotted keys of every recipe config and the"
          " cfg.get(...) keys the recipes read; `cp_recipe:` recipes that read context_parallel_dim;"
          " `optimizer_fused:` configs whose optimizer sets fused (torch-only)",
          [*(f"recipe:{r}" for r in recipes), *(f"config:{c}" for c in configs), *keys])

    ds = mirrors / "deepspeedai+DeepSpeed/repo"
    const = _show(ds, "deepspeed/runtime/constants.py")
    top = re.findall(r"^[A-Z_0-9]+ = [\"'](\w+)[\"']$", const, re.M)
    zero_src = _show(ds, "deepspeed/runtime/zero/config.py")
    zero = class_fields(zero_src, {"DeepSpeedZeroConfig"}) + pydantic_aliases(zero_src)
    off_src = _show(ds, "deepspeed/runtime/zero/offload_config.py")
    off_opt = class_fields(off_src, {"DeepSpeedZeroOffloadOptimizerConfig"})
    off_par = class_fields(off_src, {"DeepSpeedZeroOffloadParamConfig"})
    prec = _show(ds, "deepspeed/runtime/precision_config.py")
    prec_keys = re.findall(r"^[A-Z_0-9]+ = [\"'](\w+)[\"']$", prec, re.M)
    launcher = argparse_flags(_show(ds, "deepspeed/launcher/runner.py"))
    keys = [*top, *prec_keys, *(f"zero_optimization.{k}" for k in zero),
            *(f"zero_optimization.offload_optimizer.{k}" for k in off_opt),
            *(f"zero_optimization.offload_param.{k}" for k in off_par),
            *(f"bf16.{k}" for k in ("enabled",)), *(f"fp16.{k}" for k in ("enabled",)),
            *(f"{sec}.{k}" for sec in ("optimizer", "scheduler") for k in ("type", "params")
              if re.search(rf"^{sec.upper()}_PARAMS = ", const, re.M) and re.search(r"^TYPE = ", const, re.M)),
            *(f"flag:{f}" for f in launcher)]
    write("deepspeed", "github.com/deepspeedai/DeepSpeed", _git(ds, "rev-parse", "HEAD").strip(),
          ["deepspeed/runtime/constants.py", "deepspeed/runtime/precision_config.py",
           "deepspeed/runtime/zero/config.py", "deepspeed/runtime/zero/offload_config.py",
           "deepspeed/launcher/runner.py"],
          "JSON keys: string constants, ZeRO and offload pydantic fields (with aliases), `bf16.enabled`/`fp16.enabled`"
          " (precision_config.py reads `enabled` under each), `optimizer.type/params`,"
          " `scheduler.type/params` (TYPE, *_PARAMS); `flag:` lines are `deepspeed` launcher flags", keys)

    ac = mirrors / "huggingface+accelerate/repo"
    launch = argparse_flags(_show(ac, "src/accelerate/commands/launch.py"))
    cargs = class_fields(_show(ac, "src/accelerate/commands/config/config_args.py"), {"BaseConfig", "ClusterConfig"})
    cluster = _show(ac, "src/accelerate/commands/config/cluster.py")
    sub = [f"{m[0]}.{m[1]}" for m in re.findall(r"(fsdp_config|deepspeed_config|fp8_config)\[\"(\w+)\"\]", cluster)]
    sub += [f"parallelism_config.parallelism_config_{m}"
            for m in re.findall(r"parallelism_config\[prefix \+ \"(\w+)\"\]", cluster)]
    write("accelerate", "github.com/huggingface/accelerate", _git(ac, "rev-parse", "HEAD").strip(),
          ["src/accelerate/commands/launch.py", "src/accelerate/commands/config/config_args.py",
           "src/accelerate/commands/config/cluster.py"],
          "`flag:` lines are `accelerate launch` flags; other lines are config-file keys (dotted under"
          " fsdp_config / deepspeed_config / parallelism_config)", [*(f"flag:{f}" for f in launch), *cargs, *sub])

    un = mirrors / "unslothai+unsloth/repo"
    loader = func_params(_show(un, "unsloth/models/loader.py"), {"from_pretrained"})
    peft = func_params(_show(un, "unsloth/models/llama.py"), {"get_peft_model"})
    write("unsloth", "github.com/unslothai/unsloth", _git(un, "rev-parse", "HEAD").strip(),
          ["unsloth/models/loader.py", "unsloth/models/llama.py"],
          "`from_pretrained:` parameters of FastLanguageModel.from_pretrained, `get_peft_model:` parameters of"
          " FastLanguageModel.get_peft_model",
          [*(f"from_pretrained:{p}" for p in loader), *(f"get_peft_model:{p}" for p in peft)])

    sg_dir = wheels / "sglang/srt/arg_groups/fields"
    flags: list[str] = []
    for field_file in sorted(sg_dir.glob("*.py")):
        src = field_file.read_text()
        flags += ["--" + k.replace("_", "-") for k in class_fields(src)]
        flags += re.findall(r"aliases=\[([^\]]*)\]", src) and [
            a for group in re.findall(r"aliases=\[([^\]]*)\]", src) for a in re.findall(r"\"(--?[\w-]+)\"", group)]
    write("sglang", "github.com/sgl-project/sglang (PyPI wheel sglang-0.5.23)", "v0.5.23",
          ["sglang/srt/arg_groups/fields/*.py"], "field names as --flags (underscores to dashes) and their aliases",
          flags)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
