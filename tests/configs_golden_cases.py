"""The configs golden: every writer over a set of varied jobs, and every reader over configs and command lines as
users write them (and over what the writers wrote). `build()` gives the outputs as one mapping; tests/data/
configs_golden.json holds them as they were when it was written. Rewrite it (only when a change of output is meant):

    .venv/bin/python tests/configs_golden_cases.py --write
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from engine.configs import TARGETS, read_bundle, read_config, write_config
from engine.configs.model import ConfigJob, ReadResult
from engine.configs.writers import SERVING, TRAINING

GOLDEN = Path(__file__).parent / "data" / "configs_golden.json"

J = ConfigJob
JOBS: dict[str, ConfigJob] = {
    # training: full, LoRA, QLoRA on one GPU
    "full_1gpu": J(model="meta-llama/Llama-3.2-1B", method="full", optimizer="adamw", seq_len=1024, batch_size=4),
    "full_8bit_adam": J(model="meta-llama/Llama-3.1-8B", method="full", optimizer="adamw_8bit", gpu_name="H100 SXM",
                        estimate_gib=71.3),
    "lora_default": J(model="Qwen/Qwen2.5-7B"),
    "lora_qv_r8": J(model="Qwen/Qwen2.5-7B", lora_rank=8, lora_targets="qv", gradient_checkpointing=False),
    "lora_qkvo_fused": J(model="mistralai/Mistral-7B-v0.1", lora_targets="qkvo", fused_loss=True, grad_accum=4),
    "lora_custom_lm_head": J(model="Qwen/Qwen2.5-7B", lora_targets="attn_mlp_custom:q,k,v,o,gate,up,down,lm_head",
                             lora_rank=64, flash_attention=False),
    "qlora4_paged": J(model="meta-llama/Llama-3.1-8B", method="qlora", bits=4, optimizer="paged_adamw",
                      fused_loss=True, gpu_name="RTX 4090", estimate_gib=14.2, grad_accum=8),
    "qlora8_pure_bf16": J(model="mistralai/Mistral-7B-v0.1", method="qlora", bits=8, mixed_precision="pure_bf16",
                          gpu_count=2, sharding="ddp", seq_len=4096),
    "qlora_adafactor": J(model="google/gemma-2-9b", method="qlora", bits=4, optimizer="adafactor"),
    "qlora_lion_sgd": J(model="google/gemma-2-9b", method="qlora", bits=4, optimizer="lion", lora_targets="qv"),
    "full_sgd_no_optim": J(model="meta-llama/Llama-3.2-3B", method="full", optimizer="sgd", flash_attention=False),
    "lora_offload_part_mlp": J(model="Qwen/Qwen2.5-7B", offload=True, lora_targets="attn_mlp_custom:q,v,gate"),
    "full_offload_2gpu_ddp": J(model="Qwen/Qwen2.5-7B", method="full", offload=True, gpu_count=2, sharding="ddp"),
    "full_paged8": J(model="meta-llama/Llama-3.2-3B", method="full", optimizer="paged_adamw_8bit"),
    # multi-GPU training
    "full_zero1": J(model="meta-llama/Llama-3.1-8B", method="full", sharding="zero1", gpu_count=8, batch_size=2),
    "full_zero2_offload": J(model="meta-llama/Llama-3.1-8B", method="full", sharding="zero2", offload=True,
                            gpu_count=2),
    "full_zero3_offload": J(model="meta-llama/Llama-3.1-8B", method="full", optimizer="adamw_8bit", sharding="zero3",
                            offload=True, gpu_count=4, gpu_name="H100 SXM", batch_size=2),
    "full_fsdp_ckpt": J(model="meta-llama/Llama-3.1-8B", method="full", sharding="fsdp", gpu_count=4,
                        gpu_name="H100 SXM"),
    "full_fsdp_offload": J(model="meta-llama/Llama-3.1-70B", method="full", sharding="fsdp", offload=True,
                           gpu_count=8, gradient_checkpointing=False),
    "qlora_fsdp_70b": J(model="meta-llama/Llama-3.1-70B", method="qlora", bits=4, sharding="fsdp", gpu_count=2),
    "qlora_zero3": J(model="meta-llama/Llama-3.1-70B", method="qlora", bits=4, sharding="zero3", gpu_count=4),
    "lora_ddp_4": J(model="Qwen/Qwen2.5-14B", sharding="ddp", gpu_count=4, batch_size=2, grad_accum=2),
    # long context
    "lora_long_cp": J(model="Qwen/Qwen2.5-7B", lora_targets="qv", sharding="fsdp", gpu_count=8,
                      gpu_name="A100 80GB", context_parallel=2, seq_len=65536),
    "full_long_cp4": J(model="meta-llama/Llama-3.1-8B", method="full", sharding="fsdp", gpu_count=4,
                       context_parallel=4, seq_len=131072),
    "qlora_long_1gpu": J(model="meta-llama/Llama-3.1-8B", method="qlora", bits=4, seq_len=32768, fused_loss=True),
    # post-training stages
    "dpo_lora_fsdp": J(model="Qwen/Qwen2.5-7B", stage="dpo", lora_targets="qv", sharding="fsdp", gpu_count=8,
                       gpu_name="A100 80GB", context_parallel=2, gradient_checkpointing=False, flash_attention=False),
    "dpo_full_zero3": J(model="meta-llama/Llama-3.1-8B", stage="dpo", method="full", sharding="zero3", gpu_count=8),
    "dpo_qlora": J(model="meta-llama/Llama-3.1-8B", stage="dpo", method="qlora", bits=4),
    "kto_lora": J(model="Qwen/Qwen2.5-7B", stage="kto"),
    "orpo_lora": J(model="Qwen/Qwen2.5-7B", stage="orpo"),
    "rm_full": J(model="Qwen/Qwen2.5-1.5B", stage="rm", method="full"),
    "ppo_lora": J(model="Qwen/Qwen2.5-1.5B", stage="ppo"),
    "grpo_lora": J(model="Qwen/Qwen2.5-7B", stage="grpo", num_generations=8, output_len=512,
                   lora_targets="attn_mlp_custom:q,k,v,o,gate,up,down,lm_head", lora_rank=64),
    "grpo_full_colocate": J(model="Qwen/Qwen2.5-7B", method="full", stage="grpo", num_generations=4, gpu_count=2,
                            sharding="zero3", rollout_mode="colocate", rollout_gpu_memory_utilization=0.3,
                            rollout_sleep=True, batch_size=2),
    "grpo_server_tp2": J(model="Qwen/Qwen2.5-7B", method="full", stage="grpo", gpu_count=4, sharding="fsdp",
                         rollout_mode="server", rollout_tensor_parallel=2),
    "grpo_qlora_default_gen": J(model="Qwen/Qwen2.5-3B", method="qlora", bits=4, stage="grpo"),
    # serving
    "serve_vllm_tp4_awq_fp8kv": J(model="meta-llama/Llama-3.1-70B", method="inference", seq_len=8192,
                                  concurrency=16, gpu_count=4, gpu_name="H100 SXM", kv_cache_dtype="fp8",
                                  quantization="awq", serving_engine="vllm"),
    "serve_gguf_int8kv": J(model="Qwen/Qwen2.5-7B", method="inference", seq_len=4096, kv_cache_dtype="int8",
                           quantization="gguf:q5_k_m", concurrency=4, serving_engine="llama.cpp"),
    "serve_pp2": J(model="Qwen/Qwen2.5-7B", method="inference", seq_len=4096, gpu_count=2, pipeline_parallel=2,
                   gpu_memory_utilization=0.85),
    "serve_tp2_pp2_gptq": J(model="Qwen/Qwen2.5-72B", method="inference", seq_len=16384, gpu_count=4,
                            tensor_parallel=2, pipeline_parallel=2, quantization="gptq", concurrency=32),
    "serve_fp8_weights": J(model="meta-llama/Llama-3.1-8B", method="inference", quantization="fp8", concurrency=8,
                           serving_engine="sglang"),
    "serve_mxfp4_int4kv": J(model="openai/gpt-oss-20b", method="inference", quantization="mxfp4",
                            kv_cache_dtype="int4", seq_len=32768),
    "serve_nf4_bf16kv": J(model="meta-llama/Llama-3.1-8B", method="inference", quantization="nf4",
                          kv_cache_dtype="bf16", flash_attention=False),
    "serve_bits4_plain": J(model="meta-llama/Llama-3.1-8B", method="inference", bits=4, concurrency=2),
    "serve_bits8_int8": J(model="meta-llama/Llama-3.1-8B", method="inference", bits=8, quantization="int8"),
    "serve_gguf_file_multi": J(model="models/qwen2.5-7b-instruct-q4_k_m.gguf", method="inference", gpu_count=3,
                               concurrency=6, seq_len=2048),
    "serve_long_ctx": J(model="meta-llama/Llama-3.1-8B", method="inference", seq_len=131072, concurrency=1,
                        gpu_count=8, gpu_memory_utilization=0.95, estimate_gib=60.0),
}

AXOLOTL = """
base_model: NousResearch/Meta-Llama-3-8B
load_in_4bit: true
adapter: qlora
lora_r: 32
lora_alpha: 16
lora_target_modules: [q_proj, v_proj]
sequence_len: 4096
sample_packing: true
micro_batch_size: 2
gradient_accumulation_steps: 4
optimizer: paged_adamw_8bit
bf16: auto
gradient_checkpointing: true
flash_attention: true
deepspeed: deepspeed_configs/zero2.json
wandb_project: my-run
wandb_api_key: 0123456789abcdef0123456789abcdef01234567
some_new_option: 3
"""

AXOLOTL_FSDP_GRPO = """
base_model: Qwen/Qwen2.5-7B
adapter: lora
lora_target_linear: true
lora_target_modules: [q_proj]
rl: grpo
fp16: false
tf32: maybe
sdp_attention: true
flash_attention: false
gradient_checkpointing: unsloth
liger_fused_linear_cross_entropy: true
cut_cross_entropy: false
fsdp_config:
  offload_params: true
  activation_checkpointing: true
context_parallel_size: 2
vllm:
  gpu_memory_utilization: 0.4
  tensor_parallel_size: 2
  host: 0.0.0.0
trl:
  use_vllm: true
  vllm_mode: server
  num_generations: 16
  max_completion_length: 1024
  vllm_enable_sleep_mode: true
  beta: 0.04
"""

AXOLOTL_ODD = """
base_model: x/y
adapter: prefix
rl: ipo
deepspeed: my_deepspeed.json
optimizer: nadam
lora_target_modules: [q_proj, weird_proj]
sequence_parallel_degree: 4
load_in_8bit: true
"""

LLAMA_FACTORY = """
model_name_or_path: Qwen/Qwen2.5-7B-Instruct
stage: dpo
do_train: true
finetuning_type: lora
lora_rank: 8
lora_target: all
dataset: dpo_en_demo
template: qwen
cutoff_len: 2048
per_device_train_batch_size: 1
gradient_accumulation_steps: 8
learning_rate: 5.0e-6
bf16: true
enable_liger_kernel: true
deepspeed: examples/deepspeed/ds_z3_offload_config.json
hub_token: hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123
"""

LLAMA_FACTORY_QUANT = """
model_name_or_path: meta-llama/Llama-3.1-8B
stage: sft
finetuning_type: lora
quantization_bit: 4
quantization_method: gptq
pure_bf16: true
bf16: true
flash_attn: disabled
disable_gradient_checkpointing: true
lora_target: q_proj,v_proj
cutoff_len: 1024
optim: adamw_8bit
"""

LLAMA_FACTORY_FREEZE = ("\nmodel_name_or_path: meta-llama/Llama-3.1-8B\nstage: pt\nfinetuning_type: freeze\n"
                        "quantization_bit: 8\nfp16: true\nflash_attn: fa2\n")

HF_JSON = """{"model_name_or_path": "mistralai/Mistral-7B-v0.1", "per_device_train_batch_size": 4,
"gradient_checkpointing": true, "bf16": true, "optim": "adamw_torch_fused", "max_length": 1024,
"fsdp": "full_shard auto_wrap offload", "learning_rate": 2e-5}"""

HF_JSON_DS = """{"model_name_or_path": "x/y", "deepspeed": {"zero_optimization": {"stage": 2}},
"per_device_train_batch_size": 1, "fsdp": ["none"], "attn_implementation": "eager", "use_liger_kernel": true,
"padding_free": true, "fp16": false, "optim": "mystery"}"""

TRL_YAML = """
model_name_or_path: Qwen/Qwen2-0.5B
dataset_name: trl-lib/Capybara
learning_rate: 2.0e-5
packing: true
per_device_train_batch_size: 2
eos_token: <|im_end|>
eval_strategy: steps
use_peft: true
lora_r: 32
lora_target_modules: all-linear
push_to_hub: true
hub_model_id: me/x
"""

TRL_GRPO_YAML = """
model_name_or_path: Qwen/Qwen2.5-1.5B
num_generations: 8
max_completion_length: 512
use_vllm: true
vllm_mode: colocate
vllm_gpu_memory_utilization: 0.25
vllm_tensor_parallel_size: 1
vllm_enable_sleep_mode: false
load_in_4bit: true
use_peft: true
deepspeed: ds_zero3.json
"""

DEEPSPEED = """{
  "train_micro_batch_size_per_gpu": "auto",
  "gradient_accumulation_steps": "auto",
  "bf16": {"enabled": "auto"},
  "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "pin_memory": true},
                        "offload_param": {"device": "none"}, "overlap_comm": true, "sub_group_size": 1e9},
  "wall_clock_breakdown": false,
  "made_up_option": 1
}"""

DEEPSPEED_2 = """{
  "train_micro_batch_size_per_gpu": "many",
  "fp16": {"enabled": true, "loss_scale": 0},
  "optimizer": {"type": "AdamW", "params": {"lr": 1e-5}},
  "scheduler": {"type": "WarmupLR"},
  "zero_optimization": {"stage": 1}
}"""

ACCELERATE_FSDP = """
compute_environment: LOCAL_MACHINE
distributed_type: FSDP
mixed_precision: bf16
num_machines: 2
num_processes: 8
fsdp_config:
  fsdp_offload_params: true
  fsdp_activation_checkpointing: true
  fsdp_sharding_strategy: FULL_SHARD
parallelism_config:
  parallelism_config_cp_size: 2
"""

ACCELERATE_DS = """
compute_environment: LOCAL_MACHINE
distributed_type: DEEPSPEED
deepspeed_config:
  zero_stage: 2
  offload_optimizer_device: cpu
  offload_param_device: none
  deepspeed_config_file: ds.json
num_processes: 4
mixed_precision: 'no'
"""

ACCELERATE_DDP = """
compute_environment: LOCAL_MACHINE
distributed_type: MULTI_GPU
num_processes: 2
mixed_precision: fp16
"""

TORCHTUNE_YAML = """
output_dir: /tmp/torchtune/llama3_1_8B/qlora_single_device
model:
  _component_: torchtune.models.llama3_1.qlora_llama3_1_8b
  lora_attn_modules: ['q_proj', 'v_proj', 'output_proj']
  apply_lora_to_mlp: True
  lora_rank: 8
tokenizer:
  _component_: torchtune.models.llama3.llama3_tokenizer
  path: /tmp/Meta-Llama-3.1-8B-Instruct/original/tokenizer.model
  max_seq_len: null
batch_size: 2
optimizer:
  _component_: torch.optim.AdamW
  lr: 3e-4
loss:
  _component_: torchtune.modules.loss.LinearCrossEntropyLoss
gradient_accumulation_steps: 8
dtype: bf16
enable_activation_checkpointing: True
enable_activation_offloading: False
"""

TORCHTUNE_FULL = """
model:
  _component_: torchtune.models.llama3_1.llama3_1_8b
optimizer:
  _component_: some.Other
loss:
  _component_: torch.nn.CrossEntropyLoss
dtype: fp32
fsdp_cpu_offload: true
context_parallel_dim: 2
mystery: 1
"""

PY_TRL = '''
from trl import SFTConfig, SFTTrainer
from peft import LoraConfig
MODEL = "meta-llama/Llama-3.2-1B"
rank = compute_rank()
peft_config = LoraConfig(r=rank, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"])
args = SFTConfig(per_device_train_batch_size=8, max_length=512, optim="adamw_8bit", bf16=True)
model = AutoModelForCausalLM.from_pretrained(MODEL, attn_implementation="sdpa")
'''

PY_UNSLOTH = '''
from unsloth import FastLanguageModel
from trl import GRPOConfig
model, tok = FastLanguageModel.from_pretrained(model_name="unsloth/Qwen2.5-7B", max_seq_length=2048,
                                               load_in_4bit=True, use_gradient_checkpointing="unsloth")
model = FastLanguageModel.get_peft_model(model, r=16, target_modules=["q_proj", "v_proj"],
                                         use_gradient_checkpointing="unsloth")
args = GRPOConfig(num_generations=4, max_completion_length=256, use_vllm=True, hub_token="hf_ZyXwVuTsRqPoNmLkJiHgF")
'''

PY_BNB = '''
from transformers import AutoModelForCausalLM, BitsAndBytesConfig, TrainingArguments
q = BitsAndBytesConfig(load_in_8bit=True)
m = AutoModelForCausalLM.from_pretrained("x/y", load_in_4bit=True, quantization_config=q)
args = TrainingArguments(per_device_train_batch_size=2, gradient_checkpointing=True, fsdp="full_shard")
'''

TOKEN = "hf_ZyXwVuTsRqPoNmLkJiHgFeDcBa987654"

COMMANDS = [
    # training launchers
    "accelerate launch --num_processes 4 --use_fsdp --fsdp_offload_params true --mixed_precision bf16 train.py "
    "--model_name_or_path meta-llama/Llama-3.1-8B --per_device_train_batch_size 2 --max_length 4096",
    "accelerate launch --multi_gpu --num-processes=2 --config_file acc.yaml --use_deepspeed --zero_stage 3 "
    "--offload_optimizer_device cpu --parallelism_config_cp_size 2 --weird x -m trl.scripts.sft --lora_r 8",
    "accelerate launch --use_deepspeed --offload_param_device nvme train.py --bf16",
    "torchrun --nproc-per-node=8 --nnodes 2 train.py --deepspeed ds_zero3.json --per_device_train_batch_size 1",
    "torchrun --standalone --nproc_per_node 4 --nnodes 1:2 --bogus 1 -m mymodule --config cfg.yaml",
    "torchrun --nproc-per-node=8 --nnodes 2 train.py --bf16",
    "deepspeed --num_gpus 4 train.py --deepspeed zero3_bf16_cpuoffload_all.json --optim adamw_bnb_8bit",
    "deepspeed --num_nodes 2 --num_accelerators 8 --no_ssh --bogus x train.py --deepspeed cfg.json",
    "trl dpo --model_name_or_path Qwen/Qwen2.5-0.5B --use_peft --lora_r 8 --load_in_4bit",
    "trl grpo --model_name_or_path Qwen/Qwen2.5-0.5B --num_generations 4 --use_vllm --vllm_mode colocate",
    "trl chat --model_name_or_path x",
    "trl",
    "python -m axolotl.cli.train config.yml",
    "axolotl train config.yml",
    "python train.py --model_name_or_path x/y --gradient_checkpointing --optim paged_adamw_8bit",
    "python -m torch.distributed.run --nproc_per_node 2 train.py --fp16",
    "python -m accelerate.commands.launch --num_processes 2 train.py",
    "tune run --nproc_per_node 2 lora_finetune_distributed --config llama3_1/8B_lora batch_size=4 "
    "model.lora_rank=32 model.apply_lora_to_mlp=False",
    "tune run lora_finetune_single_device --config llama3_1/8B_qlora_single_device model.lora_attn_modules="
    "[q_proj,v_proj] model.apply_lora_to_output=True tokenizer.max_seq_len=4096 ~compile dtype=fp32 "
    "optimizer._component_=bitsandbytes.optim.PagedAdamW8bit loss._component_=torchtune.modules.loss."
    "CEWithChunkedOutputLoss enable_activation_checkpointing=false junk",
    "tune run full_dpo_distributed --config llama3_1/8B_full fsdp_cpu_offload=True context_parallel_dim=2 foo=1",
    "tune run unknown_recipe --config mine.yaml",
    "tune ls",
    # serving
    "vllm serve Qwen/Qwen2.5-72B-Instruct-AWQ --tensor-parallel-size 4 --max-model-len 32768 "
    "--gpu-memory-utilization 0.92 --kv-cache-dtype fp8_e4m3 --quantization awq --max-num-seqs 64",
    "vllm serve org/m -tp 2 -pp 2 --max-model-len 32k -q gptq_marlin --kv-cache-dtype auto --enable-prefix-caching",
    "vllm serve org/m --kv-cache-dtype int8 --quantization bitsandbytes --swap-space 4 --made-up 1",
    "vllm serve --model org/m --quantization fp8 --max-num-seqs lots",
    "vllm serve org/m --quantization mxfp4 --quantization-param-path p",
    "vllm serve org/m --quantization squeezellm",
    "vllm serve org/m -q squeezellm --max-model-len x --max-num-seqs 4 --max-num-seqs 8 -tp 2 --tensor-parallel-size 4",
    "python -m sglang.launch_server --model-path org/m --model other/m --quantization zz --context-length 4k",
    "llama-server -m a.gguf --cache-type-v zz -ctk q8_0 -c 4096 --ctx-size x -np 2 --n-gpu-layers 10 --split-mode row",
    "llama-server -hf org/repo:Q8_0 -c 100 -np 8 --tensor-split 3/1",
    "python -m vllm.entrypoints.openai.api_server --model org/m --pipeline-parallel-size 2",
    "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --tp-size 2 --context-length 8192",
    "python -m sglang.launch_server --model org/m --tensor-parallel-size 4 --pp-size 2 --max-running-requests 32 "
    "--mem-fraction-static 0.8 --kv-cache-dtype fp8_e5m2 --quantization awq_marlin --trust-remote-code --bogus 1",
    "python -m sglang.launch_server --model-path org/m --pipeline-parallel-size 3 --kv-cache-dtype bf16 "
    "--quantization gptq",
    "python -m sglang.launch_server --model-path org/m --kv-cache-dtype int4",
    "llama-server -m models/qwen2.5-7b-instruct-q4_k_m.gguf -c 16384 -np 4 -ngl 99 -ctk q8_0 -ctv q8_0",
    "llama-server -hf bartowski/Qwen2.5-7B-GGUF:Q5_K_M --ctx-size 8192 --parallel 2 -fa off --cache-type-k q4_0 "
    "-ts 1,1,1 -sm layer --port 8080 --mystery 2",
    "llama-server -hfr org/repo -c 2 -np 4 --flash-attn on -ctv iq2 --model-draft d.gguf",
    "llama-server --model m-bf16.gguf --hf-token " + TOKEN + " -c 4096",
    "llama-server -m plain.gguf --alias chat --batch-size 512",
    # secrets, odd programs
    f"HF_TOKEN={TOKEN} FOO=1 vllm serve org/m --api-key {TOKEN}",
    "vllm serve hf_AAAABBBBCCCCDDDDEEEEFFFF1234 --max-model-len 4096",
    "# my launch\nCUDA_VISIBLE_DEVICES=0,1 vllm serve org/m \\\n  --tensor-parallel-size 2 \\\n"
    "  --max-model-len 4096\n",
    "llamafactory-cli train cfg.yaml",
    "python -m unknown.module --x 1",
    "vllm bench --x",
]

FILES: list[tuple[str, str]] = [
    ("config.yml", AXOLOTL), ("grpo.yml", AXOLOTL_FSDP_GRPO), ("odd.yml", AXOLOTL_ODD),
    ("train.yaml", LLAMA_FACTORY), ("quant.yaml", LLAMA_FACTORY_QUANT), ("freeze.yaml", LLAMA_FACTORY_FREEZE),
    ("args.json", HF_JSON), ("args2.json", HF_JSON_DS), ("sft.yaml", TRL_YAML), ("grpo.yaml", TRL_GRPO_YAML),
    ("ds_config.json", DEEPSPEED), ("ds2.json", DEEPSPEED_2), ("acc.yaml", ACCELERATE_FSDP),
    ("acc_ds.yaml", ACCELERATE_DS), ("acc_ddp.yaml", ACCELERATE_DDP), ("8B_qlora.yaml", TORCHTUNE_YAML),
    ("full.yaml", TORCHTUNE_FULL), ("train.py", PY_TRL), ("unsloth.py", PY_UNSLOTH), ("bnb.py", PY_BNB),
    ("secret.yaml", f"base_model: x\nhf_token: {TOKEN}\n"),
    ("secret.json", f'{{"model_name_or_path": "x", "hub_token": "{TOKEN}", "{TOKEN}": 1}}'),
    ("range.yaml", "base_model: x\nsequence_len: 0\nmicro_batch_size: 2\n"),
    ("list.yaml", "- just\n- a list"), ("colour.yaml", "colour: blue\nsize: 3"), ("broken.json", "{not json"),
]
BUNDLES: list[list[tuple[str, str]]] = [
    [("run.sh", COMMANDS[0]), ("acc.yaml", ACCELERATE_FSDP)],
    [("run.sh", COMMANDS[6]), ("ds_config.json", DEEPSPEED), ("args.json", HF_JSON)],
    [("a.yaml", "colour: blue"), ("ds.json", DEEPSPEED_2)],
]


# a training job written for a serving engine and the other way round: a few, to keep what those writers do
CROSS = ("qlora4_paged", "full_zero3_offload", "serve_vllm_tp4_awq_fp8kv", "serve_gguf_int8kv")


def _targets(name: str, job: ConfigJob) -> tuple[str, ...]:
    if name in CROSS:
        return TARGETS
    return SERVING if job.serving else TRAINING


def _read(r: ReadResult) -> dict[str, Any]:
    out = r.model_dump(mode="json", exclude_none=True, exclude={"request"})
    if r.request is not None:
        out["request"] = r.request.model_dump(mode="json", exclude_defaults=True)
    return out


def build() -> dict[str, Any]:
    """{"write/<job>/<target>": output, "read/...": what the readers gave}, every value plain JSON."""
    out: dict[str, Any] = {}
    for name, job in JOBS.items():
        for target in _targets(name, job):
            key = f"{name}/{target}"
            try:
                written = write_config(job, target)
            except Exception as exc:  # the golden records what a writer does, raising included
                out[f"write/{key}"] = {"raises": type(exc).__name__}
                continue
            out[f"write/{key}"] = written.model_dump(mode="json")
            out[f"read-back/{key}"] = _read(read_bundle([(f.name, f.text) for f in written.files]))
            out[f"read-command/{key}"] = _read(read_config(written.command))
    for i, line in enumerate(COMMANDS):
        out[f"read/command/{i:02d}"] = _read(read_config(line))
    for name, text in FILES:
        out[f"read/file/{name}"] = _read(read_config(text, name))
        out[f"read/text/{name}"] = _read(read_config(text))
    for i, files in enumerate(BUNDLES):
        out[f"read/bundle/{i}"] = _read(read_bundle(files))
    return out


def dump(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=True) + "\n"


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        GOLDEN.write_text(dump(build()), encoding="utf-8")
        print(f"wrote {GOLDEN}")
    else:
        sys.stdout.write(dump(build()))
