"""A config carries exactly what the answer above it assumed: for questions of training, post-training and serving
(Russian and English), the config `config_for` writes is read back (engine.configs.read_bundle, what `check` reads)
and must describe the arrangement the answer shows: method, bits, micro-batch, context, LoRA rank, GPUs, sharding,
the GRPO generations and vLLM rollout, the serving TP x PP, replicas, context and memory share."""

from __future__ import annotations

import re

import pytest

from bot.pipeline import ask_text
from bot.views.posttrain import vllm_share_used
from engine.answer import answer
from engine.configs import check, config_for, read_bundle
from engine.configs.bridge import adapted, default_target
from engine.parse import parse
from engine.schema import Answer, Plan, Request

TRAINING = [
    ("QLoRA Llama-3.1-8B on an RTX 4090, context 4k", "trl"),
    ("лора 8b на 4090 batch 4 rank 64", "trl"),
    ("full fine-tune 8b on 8 h100", "trl"),
    ("фулл файнтюн 70b на 8 h100", "axolotl"),
    ("qlora mistral 7b на 3090 контекст 8к", "llama-factory"),
    ("dpo qwen2.5 7b на 2 a100", "trl"),
    ("qlora 70b on 2 4090 rank 32", "llama-factory"),
    ("full fine-tune 8b on 8 h100 context 8k", "accelerate"),
    ("лора 8b на 4090 batch 4 rank 64", "torchtune"),
]
POSTTRAIN = [
    ("GRPO Qwen2.5-7B on 1 H100 with vLLM", "trl"),
    ("GRPO Qwen2.5-32B on 8xH100 with vLLM server mode", "trl"),
    ("grpo qwen2.5 1.5b на 4090 vllm colocate sleep mode", "trl"),
    ("grpo qwen2.5 7b на 4 h100, vllm в режиме сервера", "trl"),
    ("GRPO Qwen2.5-7B on 4 H100 with vllm", "axolotl"),
]
SERVING = [
    ("vllm llama 3.1 8b на 4090 10 юзеров", "vllm"),
    ("serve llama 3.1 8b on 8xh100 tp 2 64 users", "vllm"),
    ("serve llama 3.1 8b on 8xh100 tp 2 64 users", "sglang"),
    ("инференс qwen2.5 72b awq на 2 a100 vllm 32 пользователя", "vllm"),
    ("serve qwen2.5 32b on 2 l40s, fp8 kv cache, 16 users", "vllm"),
    ("llama 3.1 70b на 4090 llama.cpp q4", "llama.cpp"),
]


def written_and_read(request: Request, target: str) -> Request:
    out = config_for(request, target)  # type: ignore[arg-type]
    read = read_bundle([(f.name, f.text) for f in out.files])  # a serving script: its header names the GPU
    assert read.request is not None, read.error
    return read.request


def asked_plan(a: Answer) -> Plan:
    asked = a.asked
    return next((p for p in a.plans if asked and (p.gpu, p.count) == (asked.gpu, asked.count)), a.plans[0])


@pytest.mark.parametrize(("question", "target"), TRAINING + POSTTRAIN)
def test_a_training_config_reads_back_as_the_answers_arrangement(question: str, target: str) -> None:
    request = parse(question)
    a = answer(adapted(request, target))  # the answer for the framework's own defaults (torchtune: pure bf16)
    assert a.scenario is not None and a.plans, question
    got = written_and_read(request, target)
    s, plan = a.scenario, asked_plan(a)
    assert got.method == s.method and got.bits == s.bits, (question, got)
    assert got.gpus[0].count == plan.count, (question, got.gpus)
    if s.method in ("lora", "qlora"):
        assert got.lora_rank == s.lora_rank
    assert got.offload == (s.offload or "cpu_offload" in plan.techniques)
    assert got.fused_loss == (s.fused_loss or "fused_loss" in plan.techniques), (question, plan.techniques)
    assert got.gradient_checkpointing == (s.gradient_checkpointing or "gradient_checkpointing" in plan.techniques)
    sharded = "zero3" in plan.techniques or s.sharding in ("zero3", "fsdp")
    assert (got.sharding in ("zero3", "fsdp")) == sharded, (question, got.sharding, plan.techniques)
    pt = getattr(a, "posttrain", None)  # a PostTrainAnswer carries one
    if pt is None:
        assert got.seq_len == s.seq_len
        assert got.batch_size == (1 if "micro_batch_1" in plan.techniques else s.batch_size)
        return
    st = pt.settings
    assert got.batch_size == st.per_device_train_batch_size, (question, got.batch_size, st)
    assert got.gradient_checkpointing == st.gradient_checkpointing
    if request.stage == "grpo":
        assert got.num_generations == st.num_generations and got.output_len == st.max_completion_length
        assert got.rollout is not None and got.rollout.mode == st.vllm_mode, (question, got.rollout, st)
        # colocated: the share the headline says the estimate holds (asked, else TRL's default), not a change's
        held = vllm_share_used(a) if st.vllm_mode == "colocate" else st.vllm_gpu_memory_utilization
        assert got.rollout.gpu_memory_utilization == held, (question, got.rollout, held)
        assert f"vllm_gpu_memory_utilization={held!r}" in ask_text(question), question  # the answer's settings
        assert bool(got.rollout.sleep) == bool(st.vllm_enable_sleep_mode)
    else:
        assert got.seq_len == st.max_length


@pytest.mark.parametrize(("question", "target"), SERVING)
def test_a_serving_command_reads_back_as_the_answers_arrangement(question: str, target: str) -> None:
    request = parse(question)
    # another engine's config is that engine's answer (its own memory share, its flags)
    a = answer(request if (request.serving_engine or "vllm") == target
               else request.model_copy(update={"serving_engine": target}))
    r = a.serving  # a ServingAnswer
    assert r is not None and r.settings is not None and r.gpu is not None, question
    st = r.settings
    got = written_and_read(request, target)
    assert got.method == "inference" and got.serving_engine == target
    assert got.seq_len == st.max_model_len
    gpus = 1 if target == "llama.cpp" else st.tensor_parallel * st.pipeline_parallel * r.replicas
    assert got.gpus[0].count == gpus and got.gpus[0].name == r.gpu.name, (question, got.gpus, r.replicas)
    if target != "llama.cpp":
        assert got.tensor_parallel == st.tensor_parallel, (question, got.tensor_parallel, st.tensor_parallel)
        assert got.engine_options is not None
        assert got.engine_options.gpu_memory_utilization == st.gpu_memory_utilization
        assert got.engine_options.max_num_batched_tokens == st.max_num_batched_tokens
        assert (got.kv_cache_dtype == "fp8") == st.kv_cache_dtype.startswith("fp8")
    if st.weight_format in ("awq", "gptq", "fp8") or st.weight_format.startswith("gguf:"):
        assert got.quantization == st.weight_format
    else:
        assert got.quantization is None and (got.bits or 16) == 16
    if target == "vllm":  # the answer's own launch command says the same TP as the config
        said = re.search(r"--tensor-parallel-size (\d+)", " ".join(r.command))
        assert said is not None and int(said.group(1)) == got.tensor_parallel


def test_the_vllm_config_of_the_issue_has_the_answers_tp_not_the_cards() -> None:
    """«vllm llama 3.1 8b на 4090 10 юзеров»: the answer serves it on one 4090 (TP 1); the config did TP 2."""
    request = parse("vllm llama 3.1 8b на 4090 10 юзеров")
    out = config_for(request, default_target(request))
    assert "--tensor-parallel-size 1 " in out.command and "--data-parallel-size" not in out.command


def test_replicas_are_data_parallel_copies_and_check_sizes_them_alike() -> None:
    """TP 2 on 8 GPUs: 4 copies behind one endpoint (vLLM --data-parallel-size), and `check` of the script sizes the
    same instances: the weights per GPU the answer shows, and room for the asked users on the 4 copies (the command
    caps --max-num-seqs at the users, as the answer's own command does, which leaves a little more KV room)."""
    request = parse("serve llama 3.1 8b on 8xh100 tp 2 64 users")
    r = answer(request).serving
    assert r is not None and r.replicas == 4 and r.memory is not None
    out = config_for(request, "vllm")
    assert "--tensor-parallel-size 2" in out.command and "--data-parallel-size 4" in out.command
    checked = check(out.files[0].text, out.files[0].name)  # the script: its header names the GPU
    serving = checked["estimate"]["serving"]
    assert serving["replicas"] == 4 and serving["tensor_parallel"] == 2
    assert serving["weights_gib"] == pytest.approx(r.memory.weights_gib, abs=0.01)
    assert serving["kv_pool_gib"] >= r.memory.kv_pool_gib - 0.05
    assert serving["concurrency_at_context"] * serving["replicas"] >= 64 and serving["fits"]


@pytest.mark.parametrize("question", ["GRPO Qwen2.5-32B on 8xH100 with vLLM server mode",
                                      "grpo qwen2.5 32b на 8 h100, vllm на отдельной карте"])
def test_grpo_in_server_mode_is_answered_and_configured_in_server_mode(question: str) -> None:
    request = parse(question)
    assert request.rollout is not None and request.rollout.mode == "server"
    a = answer(request)
    assert a.posttrain is not None and a.posttrain.settings.vllm_mode == "server"
    assert a.posttrain.rollout_gpus == 1 and a.posttrain.train_gpus == 7
    out = config_for(request, "trl")
    script = next(f.text for f in out.files if f.name == "train.py")
    acc = next(f.text for f in out.files if f.name == "accelerate.yaml")
    assert "vllm_mode='server'" in script and "colocate" not in script
    assert "num_processes: 7" in acc
    # the server starts on the GPU the trainers leave free, with the share the answer assumed
    assert out.command.startswith("CUDA_VISIBLE_DEVICES=7 trl vllm-serve --model Qwen/Qwen2.5-32B")
    assert "--gpu_memory_utilization 0.9" in out.command and "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6 accelerate" in \
        out.command


def test_a_grpo_config_has_the_answers_batch_and_vllm_not_the_sft_defaults() -> None:
    """The issue's GRPO config: batch 1, no vLLM, 24.1 GB where the answer said batch 8, vLLM colocate, 49.5 GB."""
    request = parse("GRPO Qwen2.5-7B on 1 H100 with vLLM")
    a = answer(request)
    out = config_for(request, "trl")
    assert a.posttrain is not None
    assert f"per_device_train_batch_size={a.posttrain.settings.per_device_train_batch_size}," in out.files[0].text
    assert "use_vllm=True" in out.files[0].text and "vllm_mode='colocate'" in out.files[0].text
    assert out.estimate_gib == pytest.approx(a.need_gb, abs=0.05)


@pytest.mark.parametrize("question", ["qlora 70b на 2 4090", "qlora llama 70b on two 3090s", "кулора 70б на 2х3090"])
def test_the_config_carries_the_fsdp_qlora_fix_the_answer_leads_with(question: str) -> None:
    """QLoRA 70B on two 24 GB cards with no stack named: the answer leads with the FSDP-QLoRA recipe and its CPU
    offload on the two cards; the config is that recipe on those two cards (was: DeepSpeed for 4 cards)."""
    request = parse(question)
    a = answer(request)
    assert a.fix is not None and a.fix.update.get("framework") == "fsdp-qlora", (question, a.fix)
    out = config_for(request)
    got = read_bundle([(f.name, f.text) for f in out.files]).request
    assert got is not None and got.gpus[0].count == 2, (question, got)
    assert got.sharding == "fsdp" and got.offload and got.method == "qlora", (question, got)
    assert f"{a.fix.total_gb:.1f} GiB" in out.files[0].text, (question, a.fix.total_gb)


@pytest.mark.parametrize(("question", "tp", "dp"), [
    ("vllm llama 70b на 8 h100 4 реплики", 2, 4),
    ("serve llama 3.1 8b on 8 h100 as 8 replicas", 1, 8),
    ("vllm qwen 32b на 4 a100 2 инстанса", 2, 2),
])
def test_replicas_said_are_served_and_the_answers_own_command_starts_them(question: str, tp: int, dp: int) -> None:
    """«4 реплики» on 8 cards is 4 copies of TP 2 (was TP 8); the command in the answer starts all of them (vLLM
    --data-parallel-size), so that it runs as pasted on the GPUs named, and `check` reads it back the same."""
    r = answer(parse(question)).serving
    assert r is not None and r.settings is not None, question
    assert (r.settings.tensor_parallel, r.replicas) == (tp, dp), (question, r.settings.tensor_parallel, r.replicas)
    line = " ".join(r.command)
    assert f"--tensor-parallel-size {tp} " in line and (f"--data-parallel-size {dp} " in line) == (dp > 1), line
    got = check(line)["request"]
    assert got["gpus"][0]["count"] == tp * dp and got["tensor_parallel"] == tp, got


@pytest.mark.parametrize("question", ["фулл 8б на одной h100 deepspeed", "full fine-tune llama 3.1 8b on one h100"])
def test_one_gpu_full_offload_is_zero_offload_in_the_answer_the_config_and_check(question: str) -> None:
    """Full fine-tuning that fits one GPU only with the optimizer in CPU RAM: the answer's fix, the DeepSpeed file
    (ZeRO stage 2 + offload_optimizer, never stage 0 that cannot offload) and `check` of that file agree."""
    request = parse(question)
    a = answer(request)
    assert a.fix is not None and a.fix.update.get("sharding") == "zero2", a.fix
    out = config_for(request, "deepspeed")
    ds = next(f for f in out.files if f.name.endswith(".json"))
    assert '"stage": 2' in ds.text and '"offload_optimizer"' in ds.text, ds.text
    assert abs((out.estimate_gib or 0) - a.fix.total_gb) < 0.15, (out.estimate_gib, a.fix.total_gb)
    got = check_files_estimate(out)
    assert abs(got - a.fix.total_gb) < 0.15 * a.fix.total_gb, (got, a.fix.total_gb)


def check_files_estimate(out) -> float:  # type: ignore[no-untyped-def]
    from engine.configs import check_files

    est = check_files([(f.name, f.text) for f in out.files])["estimate"]
    return float(est["cluster_total_gib"]) / int(est["gpu_count"])
