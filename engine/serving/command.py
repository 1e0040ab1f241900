"""The launch command (argv) with the flags that give the computed capacity: a configuration, not prose."""

from __future__ import annotations

from .types import Settings


def _fmt(x: float) -> str:
    return f"{x:g}"


def command(model_id: str, s: Settings, users: int | None, prompt: int | None, native: bool = False) -> list[str]:
    """`native`: the checkpoint ships in the format (config.json quantization_config): no --quantization flag."""
    tp, pp = s.tensor_parallel, s.pipeline_parallel
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
        argv += ["--max-model-len", str(s.max_model_len), "--gpu-memory-utilization", _fmt(s.gpu_memory_utilization),
                 "--max-num-seqs", str(min(s.max_num_seqs, users) if users else s.max_num_seqs),
                 "--max-num-batched-tokens", str(s.max_num_batched_tokens)]
        if s.weight_format == "fp8" and not native and "fp8" not in model_id.lower():
            argv += ["--quantization", "fp8"]
        if s.kv_cache_dtype == "fp8":
            argv += ["--kv-cache-dtype", "fp8"]
        return argv
    if s.engine == "sglang":
        argv = ["python", "-m", "sglang.launch_server", "--model-path", model_id, "--tp", str(tp)]
        if pp > 1:
            argv += ["--pp-size", str(pp)]
        argv += ["--context-length", str(s.max_model_len), "--mem-fraction-static", _fmt(s.gpu_memory_utilization),
                 "--chunked-prefill-size", str(s.max_num_batched_tokens)]
        if users:
            argv += ["--max-running-requests", str(users)]
        if s.weight_format == "fp8" and not native and "fp8" not in model_id.lower():
            argv += ["--quantization", "fp8"]
        if s.kv_cache_dtype == "fp8":
            argv += ["--kv-cache-dtype", "fp8_e4m3"]
        return argv
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
        argv = ["llama-server", "-m", f"{model_id.split('/')[-1]}-{gguf_type}.gguf",
                "-c", str(s.max_model_len * slots), "-np", str(slots),
                "-ngl", str(s.gpu_layers if s.gpu_layers is not None else 999)]
        if s.kv_cache_dtype in ("q8_0", "q4_0"):
            argv += ["-fa", "on", "-ctk", s.kv_cache_dtype, "-ctv", s.kv_cache_dtype]
        return argv
    return []
