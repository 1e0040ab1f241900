#!/usr/bin/env python3
"""Measure training peaks and step times on a real GPU, with models built from a config (random weights).

Run on a machine with a CUDA GPU, PyTorch, transformers and peft (TRL and liger-kernel for the cases that name
them). Each case runs in a forked child (CUDA is not initialised in the parent), so every peak starts from a
clean allocator; one case failing (out of memory included) does not stop the others. Each result is one line of
JSON appended to OUT (default results.jsonl), written as soon as the case ends.

    python3 bench/device/train_peaks.py OUT.jsonl [--only NAME,...] [--tiny]

--tiny shrinks every model and sequence so the whole list runs on a CPU in a minute: it checks the script, not
the figures. bench/device_rows.py turns the results into rows in the shape of shared/data/measured-memory.jsonl.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import sys
import time
import traceback

# Hugging Face configs of the catalog's models (config.json of each repo, the fields that set memory).
MODELS = {
    "Qwen2.5-0.5B": dict(arch="qwen2", num_hidden_layers=24, hidden_size=896, intermediate_size=4864,
                         num_attention_heads=14, num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=True),
    "Qwen2.5-1.5B": dict(arch="qwen2", num_hidden_layers=28, hidden_size=1536, intermediate_size=8960,
                         num_attention_heads=12, num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=True),
    "Qwen2.5-7B": dict(arch="qwen2", num_hidden_layers=28, hidden_size=3584, intermediate_size=18944,
                       num_attention_heads=28, num_key_value_heads=4, vocab_size=152064, tie_word_embeddings=False),
    "Llama-3.2-1B": dict(arch="llama", num_hidden_layers=16, hidden_size=2048, intermediate_size=8192,
                         num_attention_heads=32, num_key_value_heads=8, head_dim=64, vocab_size=128256,
                         tie_word_embeddings=True),
    "Llama-3.2-3B": dict(arch="llama", num_hidden_layers=28, hidden_size=3072, intermediate_size=8192,
                         num_attention_heads=24, num_key_value_heads=8, head_dim=128, vocab_size=128256,
                         tie_word_embeddings=True),
    "Llama-3.1-8B": dict(arch="llama", num_hidden_layers=32, hidden_size=4096, intermediate_size=14336,
                         num_attention_heads=32, num_key_value_heads=8, head_dim=128, vocab_size=128256,
                         tie_word_embeddings=False),
    "SmolLM2-1.7B": dict(arch="llama", num_hidden_layers=24, hidden_size=2048, intermediate_size=8192,
                         num_attention_heads=32, num_key_value_heads=32, head_dim=64, vocab_size=49152,
                         tie_word_embeddings=True),
}

def _case(name: str, model: str, method: str, mp: str, seq: int, batch: int, ckpt: bool,
          **extra: object) -> dict:
    return dict(name=name, model=model, method=method, mp=mp, seq=seq, batch=batch, ckpt=ckpt, **extra)


EXPANDABLE = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
# where the command installs trl 1.14.0, the last release before the fused LM head
TRL_1_14 = os.environ.get("TRL_1_14", "/tmp/site14")
# name, model, method (full / lora), mp (amp = fp32 weights under bf16 autocast; pure_bf16 = bf16 weights),
# seq, batch, ckpt, and optional loss ("liger"), trainer ("dpo", or "sft" for TRL's SFTTrainer), lora (rank,
# targets "all-linear" / "qv"), env, optim, trl_path.
# The order is the order of priority: the list may be cut off by the time limit.
CASES = [
    _case("llama8b-lora-s2048-b4-ckpt", "Llama-3.1-8B", "lora", "pure_bf16", 2048, 4, True),
    _case("qwen7b-lora-s8192-b2-ckpt", "Qwen2.5-7B", "lora", "pure_bf16", 8192, 2, True),
    _case("qwen7b-lora-s8192-b2-ckpt-liger", "Qwen2.5-7B", "lora", "pure_bf16", 8192, 2, True, loss="liger"),
    _case("llama1b-full-s8192-b1-ckpt", "Llama-3.2-1B", "full", "amp", 8192, 1, True),
    _case("smollm-full-s16384-b1-nockpt", "SmolLM2-1.7B", "full", "amp", 16384, 1, False),
    _case("llama8b-lora-s32768-b1-ckpt", "Llama-3.1-8B", "lora", "pure_bf16", 32768, 1, True),
    _case("llama1b-full-s4096-b4-nockpt", "Llama-3.2-1B", "full", "amp", 4096, 4, False),
    _case("qwen05b-dpo-full-l2048-b2-ckpt", "Qwen2.5-0.5B", "full", "amp", 2048, 2, True, trainer="dpo"),
    _case("llama1b-dpo-lora-l4096-b2-ckpt", "Llama-3.2-1B", "lora", "pure_bf16", 4096, 2, True, trainer="dpo"),
    _case("qwen15b-full-s32768-b1-ckpt", "Qwen2.5-1.5B", "full", "amp", 32768, 1, True),
    _case("llama3b-full-bf16-s4096-b2-ckpt", "Llama-3.2-3B", "full", "pure_bf16", 4096, 2, True),
    _case("qwen15b-lora-s4096-b8-nockpt", "Qwen2.5-1.5B", "lora", "pure_bf16", 4096, 8, False),
    _case("llama8b-lora-qv-r8-s1024-b8-nockpt", "Llama-3.1-8B", "lora", "pure_bf16", 1024, 8, False, lora=(8, "qv")),
    _case("smollm-full-s16384-b1-ckpt", "SmolLM2-1.7B", "full", "amp", 16384, 1, True),
    _case("qwen05b-full-s32768-b1-ckpt-liger", "Qwen2.5-0.5B", "full", "amp", 32768, 1, True, loss="liger"),
    _case("llama8b-full-bf16-s2048-b1-ckpt", "Llama-3.1-8B", "full", "pure_bf16", 2048, 1, True),
    _case("qwen7b-lora-s8192-b2-ckpt-expandable", "Qwen2.5-7B", "lora", "pure_bf16", 8192, 2, True, env=EXPANDABLE),
    _case("llama1b-full-s65536-b1-ckpt", "Llama-3.2-1B", "full", "amp", 65536, 1, True),
    # the second run (2026-12-04): foreach AdamW against the fused default, TRL before and after its fused LM head
    _case("llama8b-full-bf16-s2048-b1-ckpt-foreach", "Llama-3.1-8B", "full", "pure_bf16", 2048, 1, True,
          optim="adamw_torch"),
    _case("llama1b-full-s8192-b1-ckpt-foreach", "Llama-3.2-1B", "full", "amp", 8192, 1, True, optim="adamw_torch"),
    _case("qwen05b-dpo-full-l2048-b2-ckpt-trl114", "Qwen2.5-0.5B", "full", "amp", 2048, 2, True, trainer="dpo",
          trl_path=TRL_1_14),
    _case("llama1b-dpo-lora-l4096-b2-ckpt-trl114", "Llama-3.2-1B", "lora", "pure_bf16", 4096, 2, True, trainer="dpo",
          trl_path=TRL_1_14),
    _case("qwen7b-lora-s8192-b2-ckpt-trlsft", "Qwen2.5-7B", "lora", "pure_bf16", 8192, 2, True, trainer="sft"),
    _case("qwen7b-lora-s8192-b2-ckpt-trlsft114", "Qwen2.5-7B", "lora", "pure_bf16", 8192, 2, True, trainer="sft",
          trl_path=TRL_1_14),
    # the third run: GRPO generating with transformers, 8 completions a prompt, prompt and completion `seq` each
    _case("qwen15b-grpo-full-p256-b8-ckpt", "Qwen2.5-1.5B", "full", "amp", 256, 8, True, trainer="grpo", steps=2),
    _case("qwen15b-grpo-full-p256-b8-ckpt-trl114", "Qwen2.5-1.5B", "full", "amp", 256, 8, True, trainer="grpo",
          steps=2, trl_path=TRL_1_14),
    _case("llama1b-grpo-lora-p512-b16-ckpt", "Llama-3.2-1B", "lora", "pure_bf16", 512, 16, True, trainer="grpo",
          steps=2),
]

STEPS = 4
TINY = dict(num_hidden_layers=2, hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
            head_dim=16, vocab_size=512)


def build_model(case: dict, tiny: bool):
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config

    spec = dict(MODELS[case["model"]])
    arch = spec.pop("arch")
    if tiny:
        spec.update(TINY)
    if arch == "qwen2":
        spec.pop("head_dim", None)
    cls = Qwen2Config if arch == "qwen2" else LlamaConfig
    config = cls(**spec, max_position_embeddings=max(131072, case["seq"]), use_cache=False)
    dtype = torch.float32 if case["mp"] == "amp" else torch.bfloat16
    device = "cuda" if torch.cuda.is_available() else "cpu"
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype, attn_implementation="sdpa")
    return model, config


def lora_config(case: dict):
    """The case's LoRA (r 16, alpha 2r, dropout 0.05, all linear layers unless it says), None for full training."""
    if case["method"] != "lora":
        return None
    from peft import LoraConfig

    rank, targets = case.get("lora", (16, "all-linear"))
    modules = ["q_proj", "v_proj"] if targets == "qv" else "all-linear"
    return LoraConfig(r=rank, lora_alpha=2 * rank, lora_dropout=0.05, target_modules=modules, task_type="CAUSAL_LM")


def lora_model(model, case: dict):
    from peft import get_peft_model

    return get_peft_model(model, lora_config(case))


def weights_gib():
    """What the model just built holds on the GPU (None on a CPU)."""
    import torch

    return torch.cuda.memory_allocated() / 2**30 if torch.cuda.is_available() else None


class Timer:
    """A TrainerCallback that takes each optimizer step's wall time and the peak after it."""

    def __init__(self):
        import torch
        from transformers import TrainerCallback

        cuda = torch.cuda.is_available()
        outer = self
        self.steps: list[float] = []
        self.peaks: list[float] = []

        class _Cb(TrainerCallback):
            def on_step_begin(self, args, state, control, **kw):
                if cuda:
                    torch.cuda.synchronize()
                outer._t = time.perf_counter()

            def on_step_end(self, args, state, control, **kw):
                if cuda:
                    torch.cuda.synchronize()
                    outer.peaks.append(torch.cuda.max_memory_allocated() / 2**30)
                outer.steps.append(time.perf_counter() - outer._t)

        self.callback = _Cb()


def random_rows(n: int, seq: int, vocab: int):
    import torch

    g = torch.Generator().manual_seed(0)
    ids = torch.randint(3, vocab, (n, seq), generator=g)
    return [{"input_ids": r, "labels": r.clone(), "attention_mask": torch.ones_like(r)} for r in ids]


def run_sft(case: dict, tiny: bool, res: dict):
    import torch
    from transformers import Trainer, TrainingArguments

    model, config = build_model(case, tiny)
    res["weights_gib"] = weights_gib()
    if case["method"] == "lora":
        if case["ckpt"]:
            model.enable_input_require_grads()
        model = lora_model(model, case)
    seq = 64 if tiny else case["seq"]
    rows = random_rows(case["batch"] * STEPS, seq, config.vocab_size)
    timer = Timer()
    args = TrainingArguments(
        output_dir="/tmp/train_peaks", per_device_train_batch_size=case["batch"], max_steps=STEPS, learning_rate=1e-5,
        bf16=torch.cuda.is_available(), use_cpu=not torch.cuda.is_available(),
        gradient_checkpointing=case["ckpt"], report_to="none", save_strategy="no", logging_strategy="no",
        disable_tqdm=True, dataloader_pin_memory=False, remove_unused_columns=False,
        use_liger_kernel=case.get("loss") == "liger", **_optim(case),
    )
    trainer = Trainer(model=model, args=args, train_dataset=rows, callbacks=[timer.callback])
    res["settings"] = settings_of(args, trainer)
    trainer.train()
    return timer


def _optim(case: dict) -> dict:
    return {"optim": case["optim"]} if case.get("optim") else {}


def word_tokenizer(vocab: int):
    """A tokenizer whose words are w0 … w{vocab-1} (no download): TRL's trainers tokenize text themselves."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import WhitespaceSplit
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(WordLevel(vocab={f"w{i}": i for i in range(vocab)}, unk_token="w0"))
    tok.pre_tokenizer = WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="w1", pad_token="w2", unk_token="w0")


def run_trl_sft(case: dict, tiny: bool, res: dict):
    import torch
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    model, config = build_model(case, tiny)
    res["weights_gib"] = weights_gib()
    seq = 64 if tiny else case["seq"]
    g = torch.Generator().manual_seed(0)
    n = case["batch"] * STEPS
    data = Dataset.from_dict({"input_ids": torch.randint(3, config.vocab_size, (n, seq), generator=g).tolist()})
    peft_config = lora_config(case)
    timer = Timer()
    args = SFTConfig(
        output_dir="/tmp/train_peaks", per_device_train_batch_size=case["batch"], max_steps=STEPS, learning_rate=1e-5,
        bf16=torch.cuda.is_available(), use_cpu=not torch.cuda.is_available(), max_length=seq,
        gradient_checkpointing=case["ckpt"], report_to="none", save_strategy="no", logging_strategy="no",
        disable_tqdm=True, dataloader_pin_memory=False, **_optim(case),
    )
    trainer = SFTTrainer(model=model, args=args, train_dataset=data, processing_class=word_tokenizer(config.vocab_size),
                         peft_config=peft_config, callbacks=[timer.callback])
    res["settings"] = settings_of(args, trainer)
    trainer.train()
    return timer


def run_grpo(case: dict, tiny: bool, res: dict):
    """TRL's GRPOTrainer generating with transformers (use_vllm=False, its default): `seq` is the prompt length and
    the completion length each; a random model rarely says its EOS, so completions run to their length."""
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    model, config = build_model(case, tiny)
    res["weights_gib"] = weights_gib()
    seq = 16 if tiny else case["seq"]
    g = torch.Generator().manual_seed(0)
    generations = case.get("generations", 8)
    steps = case.get("steps", STEPS)
    n = case["batch"] * steps
    prompts = [" ".join(f"w{int(t)}" for t in torch.randint(3, config.vocab_size, (seq,), generator=g))
               for _ in range(n)]
    peft_config = lora_config(case)

    def reward(completions, **_kw):
        return [float(len(c)) for c in completions]

    timer = Timer()
    args = GRPOConfig(
        output_dir="/tmp/train_peaks", per_device_train_batch_size=case["batch"], max_steps=steps, learning_rate=1e-6,
        bf16=torch.cuda.is_available(), use_cpu=not torch.cuda.is_available(), num_generations=generations,
        max_completion_length=seq, gradient_checkpointing=case["ckpt"], report_to="none", save_strategy="no",
        logging_strategy="no", disable_tqdm=True, dataloader_pin_memory=False, **_optim(case),
    )
    data = Dataset.from_dict({"prompt": prompts})
    trainer = GRPOTrainer(model=model, reward_funcs=reward, args=args, train_dataset=data,
                          processing_class=word_tokenizer(config.vocab_size), peft_config=peft_config,
                          callbacks=[timer.callback])
    res["settings"] = settings_of(args, trainer) | {"num_generations": generations}
    trainer.train()
    return timer


def run_dpo(case: dict, tiny: bool, res: dict):
    import torch
    from datasets import Dataset
    from trl import DPOConfig, DPOTrainer

    model, config = build_model(case, tiny)
    res["weights_gib"] = weights_gib()
    vocab = config.vocab_size
    tokenizer = word_tokenizer(vocab)
    seq = 64 if tiny else case["seq"]
    half = seq // 2  # prompt + each completion = max_length, the longest row TRL's collator builds
    g = torch.Generator().manual_seed(0)

    def text(n):
        return " ".join(f"w{int(t)}" for t in torch.randint(3, vocab, (n,), generator=g))

    n = case["batch"] * STEPS
    data = Dataset.from_dict({
        "prompt": [text(half) + " " for _ in range(n)],
        "chosen": [text(half - 1) + " w1" for _ in range(n)],
        "rejected": [text(half - 1) + " w1" for _ in range(n)],
    })
    peft_config = lora_config(case)
    ref = None if peft_config is not None else build_model(case, tiny)[0]  # LoRA's reference: the adapter disabled
    timer = Timer()
    args = DPOConfig(
        output_dir="/tmp/train_peaks", per_device_train_batch_size=case["batch"], max_steps=STEPS, learning_rate=1e-6,
        bf16=torch.cuda.is_available(), use_cpu=not torch.cuda.is_available(), max_length=seq,
        gradient_checkpointing=case["ckpt"], report_to="none", save_strategy="no", logging_strategy="no",
        disable_tqdm=True, dataloader_pin_memory=False, **_optim(case),
    )
    trainer = DPOTrainer(model=model, ref_model=ref, args=args, train_dataset=data, processing_class=tokenizer,
                         peft_config=peft_config, callbacks=[timer.callback])
    res["settings"] = settings_of(args, trainer)
    trainer.train()
    return timer


def settings_of(args, trainer) -> dict:
    import torch
    import transformers

    out = {
        "optim": str(args.optim), "gradient_checkpointing_kwargs": args.gradient_checkpointing_kwargs,
        "torch": torch.__version__, "transformers": transformers.__version__,
        "expandable_segments": "expandable_segments:True" in os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
    }
    from importlib.metadata import PackageNotFoundError, version

    for name in ("peft", "trl", "liger-kernel"):
        try:
            out[name.replace("-", "_")] = version(name)
        except PackageNotFoundError:
            out[name.replace("-", "_")] = None
    model = trainer.model
    out["trainable_params"] = sum(p.numel() for p in model.parameters() if p.requires_grad)
    out["trainable_dtype"] = sorted({str(p.dtype) for p in model.parameters() if p.requires_grad})
    out["total_params"] = sum(p.numel() for p in model.parameters())
    return out


def child(case: dict, tiny: bool, out: str):
    os.environ.update(case.get("env", {}))  # read by the CUDA allocator at its first use, in this child
    if case.get("trl_path"):
        sys.path.insert(0, case["trl_path"])  # another TRL release, before anything imports trl
    import torch

    res: dict = {"case": case, "ok": False}
    t0 = time.time()
    try:
        run = {"dpo": run_dpo, "sft": run_trl_sft, "grpo": run_grpo}.get(case.get("trainer", ""), run_sft)
        timer = run(case, tiny, res)
        res["ok"] = True
        res["step_s"] = timer.steps
        res["peak_after_step_gib"] = timer.peaks
    except torch.OutOfMemoryError as e:
        res["error"] = "oom: " + str(e)[:400]
    except Exception as e:  # every failure is recorded, the next case runs
        res["error"] = f"{type(e).__name__}: {e}"[:600]
        res["trace"] = traceback.format_exc()[-2500:]
    if torch.cuda.is_available():
        res["peak_allocated_gib"] = torch.cuda.max_memory_allocated() / 2**30
        res["peak_reserved_gib"] = torch.cuda.max_memory_reserved() / 2**30
        res["gpu"] = torch.cuda.get_device_name()
        res["gpu_total_gib"] = torch.cuda.get_device_properties(0).total_memory / 2**30
    res["wall_s"] = time.time() - t0
    with open(out, "a", encoding="utf-8") as f:
        f.write(json.dumps(res) + "\n")


def main() -> int:
    out = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("--") else "results.jsonl"
    tiny = "--tiny" in sys.argv
    only = None
    if "--only" in sys.argv:
        only = set(sys.argv[sys.argv.index("--only") + 1].split(","))
    budget = float(os.environ.get("TRAIN_PEAKS_BUDGET_S", "1e9"))
    start = time.time()
    import transformers  # noqa: F401 - imported once here, inherited by every forked child

    ctx = mp.get_context("fork")
    for case in CASES:
        if only and case["name"] not in only:
            continue
        left = budget - (time.time() - start)
        if left < 20:
            print(f"skip {case['name']}: {left:.0f} s left", flush=True)
            continue
        p = ctx.Process(target=child, args=(case, tiny, out))
        p.start()
        p.join(timeout=min(left, 150))
        if p.is_alive():
            p.kill()
            p.join()
            with open(out, "a", encoding="utf-8") as f:
                f.write(json.dumps({"case": case, "ok": False, "error": "timeout"}) + "\n")
        print(f"{case['name']}: done at {time.time() - start:.0f} s (exit {p.exitcode})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
