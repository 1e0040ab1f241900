"""The launch command (argv) with the flags that give the computed capacity: a configuration, not prose."""

from __future__ import annotations

from engine.catalog.checkpoints import gguf_weights, long_context_flags, serving_weights
from engine.schema.serving import Settings

# the serving format → the checkpoint format that holds it (engine/catalog/checkpoints.toml)
CHECKPOINT_FORMAT = {"awq": "awq", "gptq": "gptq", "fp8": "fp8", "bitsandbytes": "bnb-4bit"}


def _fmt(x: float) -> str:
    return f"{x:g}"


def command(model_id: str, s: Settings, users: int | None, prompt: int | None, native: bool = False,
            layers: int = 0, bf16: bool = True, replicas: int = 1, attention_dp: int = 1) -> list[str]:
    """`native`: the checkpoint ships in the format (config.json quantization_config): no --quantization flag.
    The repository is one that holds the weight format (a catalog checkpoint, or a your-org/… placeholder when none
    is known); `layers`: the model's blocks (llama.cpp -ngl offloads all with 999); `bf16`: the GPU computes in bf16
    (T4, V100 do not: --dtype half); `replicas`: copies of the TP × PP instance on the GPUs asked, one endpoint
    (vLLM --data-parallel-size, SGLang --dp-size, as engine/configs/serving_flags.py declares them), each capped at
    its share of the users; `attention_dp`: DP attention over each instance's TP ranks (engine/serving/dpattn.py):
    one launch over all the GPUs, attention data-parallel and the experts over all of them (vLLM: TP 1 with
    --data-parallel-size and --enable-expert-parallel, a --max-num-seqs per engine core; SGLang: --tp and --dp-size
    over the whole with --enable-dp-attention, which splits --max-running-requests over the DP ranks itself)."""
    tp, pp = s.tensor_parallel, s.pipeline_parallel
    dp = max(1, replicas) if s.engine in ("vllm", "sglang") else 1
    adp = max(1, attention_dp) if s.engine in ("vllm", "sglang") else 1
    if adp > 1:
        dp *= adp
        tp = tp // adp if s.engine == "vllm" else tp * max(1, replicas)
    if users and dp > 1 and not (adp > 1 and s.engine == "sglang"):
        users = -(-users // dp)
    quant_flag = False
    if s.engine in ("vllm", "sglang") and not native:
        weights = serving_weights(model_id, CHECKPOINT_FORMAT.get(s.weight_format))
        model_id, quant_flag = weights.repo, weights.flag
    dtype = [] if bf16 or s.engine not in ("vllm", "sglang") else ["--dtype", "half"]
    # past the chat checkpoint's window its card's YaRN (vLLM --hf-overrides, SGLang --json-model-override-args)
    override = long_context_flags(s.engine, model_id, s.max_model_len)
    if s.engine == "tensorrt-llm":
        return ["trtllm-serve", model_id, "--tp_size", str(tp), "--pp_size", str(pp),
                "--max_seq_len", str(s.max_model_len),
                "--max_batch_size", str(min(s.max_num_seqs, users) if users else s.max_num_seqs),
                "--max_num_tokens", str(s.max_num_batched_tokens),
                "--kv_cache_free_gpu_memory_fraction", _fmt(s.gpu_memory_utilization)]
    if s.engine == "vllm":
        argv = ["vllm", "serve", model_id, "--tensor-parallel-size", str(tp)]
        if pp > 1:
            argv += ["--pipeline-parallel-size", str(pp)]
        if dp > 1:
            argv += ["--data-parallel-size", str(dp)]
        argv += ["--max-model-len", str(s.max_model_len), "--gpu-memory-utilization", _fmt(s.gpu_memory_utilization),
                 "--max-num-seqs", str(min(s.max_num_seqs, users) if users else s.max_num_seqs),
                 "--max-num-batched-tokens", str(s.max_num_batched_tokens)]
        if quant_flag:
            argv += ["--quantization", "fp8" if s.weight_format == "fp8" else "bitsandbytes"]
        if s.kv_cache_dtype == "fp8":
            argv += ["--kv-cache-dtype", "fp8"]
        if adp > 1:
            argv.append("--enable-expert-parallel")
        return argv + override + dtype
    if s.engine == "sglang":
        argv = ["python", "-m", "sglang.launch_server", "--model-path", model_id, "--tp", str(tp)]
        if pp > 1:
            argv += ["--pp-size", str(pp)]
        if dp > 1:  # DP attention in the form SGLang's docs give it (--tp N --dp N --enable-dp-attention)
            argv += ["--dp" if adp > 1 else "--dp-size", str(dp)]
        argv += ["--context-length", str(s.max_model_len), "--mem-fraction-static", _fmt(s.gpu_memory_utilization),
                 "--chunked-prefill-size", str(s.max_num_batched_tokens)]
        if users:
            argv += ["--max-running-requests", str(users)]
        if quant_flag:
            argv += ["--quantization", "fp8" if s.weight_format == "fp8" else "bitsandbytes"]
        if s.kv_cache_dtype == "fp8":
            argv += ["--kv-cache-dtype", "fp8_e4m3"]
        if adp > 1:
            argv.append("--enable-dp-attention")
        return argv + override + dtype
    if s.engine == "tgi":
        argv = ["text-generation-launcher", "--model-id", model_id, "--num-shard", str(tp),
                "--max-total-tokens", str(s.max_model_len),
                "--max-input-tokens", str(min(prompt or s.max_model_len - 1, s.max_model_len - 1)),
                "--max-batch-prefill-tokens", str(s.max_num_batched_tokens),
                "--cuda-memory-fraction", _fmt(s.gpu_memory_utilization)]
        if s.weight_format in ("awq", "gptq", "fp8", "bitsandbytes"):
            argv += ["--quantize", "bitsandbytes-nf4" if s.weight_format == "bitsandbytes" else s.weight_format]
        return argv
    gguf_type = s.weight_format.split(":", 1)[1].upper() if s.weight_format.startswith("gguf:") else "Q4_K_M"
    slots = max(1, s.max_num_seqs)
    if s.engine == "ollama":
        return [f"OLLAMA_NUM_PARALLEL={slots}", f"OLLAMA_CONTEXT_LENGTH={s.max_model_len}",
                *([f"OLLAMA_KV_CACHE_TYPE={s.kv_cache_dtype}"] if s.kv_cache_dtype in ("q8_0", "q4_0") else []),
                "ollama", "serve"]
    if s.engine == "llama.cpp":
        gguf = model_id.lower().endswith(".gguf")
        model = ["-m", model_id] if gguf else ["-hf", gguf_weights(model_id, gguf_type)[0]]
        # -ngl counts the output layer too (n_layer + 1 offloads everything): 999 = all, a smaller number only
        # when the answer put some blocks in host RAM
        all_on_gpu = s.gpu_layers is None or s.gpu_layers >= layers
        argv = ["llama-server", *model, "-c", str(s.max_model_len * slots), "-np", str(slots),
                "-ngl", "999" if all_on_gpu else str(s.gpu_layers)]
        if s.kv_cache_dtype in ("q8_0", "q4_0"):
            argv += ["-fa", "on", "-ctk", s.kv_cache_dtype, "-ctv", s.kv_cache_dtype]
        return argv
    return []
