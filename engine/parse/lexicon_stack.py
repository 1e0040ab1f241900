"""Words of how a job runs, already folded (lower case, ё → е), both languages: its training objective (stage),
training stack (framework), serving engine, weight and KV formats, serving load, parallelism, fused loss, and what
cannot be modelled.

Same rules as `lexicon.py`: each set is one meaning; inflected Russian forms are listed where people type
them, and typos are left to `fuzzy.py` (edit distance on these words), not listed here.
"""

from __future__ import annotations

# ── training objective (stage) ──────────────────────────────────────────────────────────
STAGE_WORDS: dict[str, str] = {
    "sft": "sft", "сфт": "sft",
    "dpo": "dpo", "дпо": "dpo", "orpo": "orpo", "kto": "kto", "simpo": "simpo", "ipo": "dpo",
    "ppo": "ppo", "ппо": "ppo", "rlhf": "ppo",
    "grpo": "grpo", "грпо": "grpo", "dapo": "grpo", "gspo": "grpo", "rloo": "grpo",
    "pretrain": "pretrain", "pretraining": "pretrain", "претрейн": "pretrain", "претрейна": "pretrain",
    "претрейне": "pretrain", "претрейном": "pretrain", "предобучение": "pretrain", "предобучения": "pretrain",
    "предобучить": "pretrain", "предобучении": "pretrain", "предобучением": "pretrain",
}
# trl's trainers: "GRPOTrainer", "DPOConfig" name the stage and the framework at once
TRAINER_STAGES: dict[str, str] = {
    f"{k}{suffix}": v for k, v in {"sft": "sft", "dpo": "dpo", "orpo": "orpo", "kto": "kto", "ppo": "ppo",
                                   "grpo": "grpo", "reward": "rm", "cpo": "simpo", "rloo": "grpo"}.items()
    for suffix in ("trainer", "config")
}
REWARD_WORDS = frozenset({"reward", "ревард", "ревард-модель", "вознаграждения", "награды", "наград"})
REWARD_NOUNS = frozenset({"model", "models", "modeling", "modelling", "модель", "модели", "модельку", "rm"})
SUPERVISED = frozenset({"supervised", "instruction", "инструктивное", "инструктивный", "инструкционное"})
PREFERENCE = frozenset({"preference", "preferences", "предпочтениям", "предпочтений", "предпочтения"})
SCRATCH_PAIRS = (("from", "scratch"), ("с", "нуля"), ("со", "нуля"))
CONTINUED = frozenset({"continued", "continual", "продолженное", "продолженный", "дальнейшее"})

# ── training stack (framework) ──────────────────────────────────────────────────────────
FRAMEWORK_WORDS: dict[str, str] = {
    "trl": "trl", "sfttrainer": "trl", "unsloth": "unsloth", "анслот": "unsloth", "анслоф": "unsloth",
    "axolotl": "axolotl", "аксолотль": "axolotl", "аксолотл": "axolotl",
    "llamafactory": "llama-factory", "torchtune": "torchtune", "swift": "ms-swift", "litgpt": "litgpt",
    "deepspeed": "deepspeed", "дипспид": "deepspeed", "verl": "verl", "openrlhf": "openrlhf",
    "nemo": "nemo", "немо": "nemo", "megatron": "nemo", "мегатрон": "nemo",
    "torchtitan": "torchtitan", "титан": "torchtitan", "торчтитан": "torchtitan",
    "alst": "arctictraining", "arctictraining": "arctictraining",
}
# Arctic Long Sequence Training (DeepSpeed's ALST) and its trainer, ArcticTraining: its own stack (DeepSpeed with the
# ALST switches, engine/frameworks/arctictraining.toml)
ALST_WORDS = frozenset({"alst", "arctictraining"})
HF_WORDS = frozenset({"transformers", "huggingface", "hf", "trainer"})
# multi-token names, matched on the glued key of their tokens ("llama-factory", "ms swift", "fsdp_qlora")
FRAMEWORK_KEYS: dict[str, str] = {"llamafactory": "llama-factory", "msswift": "ms-swift", "fsdpqlora": "fsdp-qlora",
                                  "nemorl": "nemo", "nemoaligner": "nemo", "hftrainer": "hf",
                                  "huggingfacetrainer": "hf", "лламафактори": "llama-factory",
                                  "llamafactori": "llama-factory", "arctictraining": "arctictraining"}

# ── serving engines ─────────────────────────────────────────────────────────────────────
SERVING_WORDS: dict[str, str] = {
    "vllm": "vllm", "влм": "vllm", "sglang": "sglang", "tgi": "tgi", "ollama": "ollama", "оллама": "ollama",
    "llamacpp": "llama.cpp", "lmstudio": "llama.cpp", "koboldcpp": "llama.cpp", "tensorrt": "tensorrt-llm",
    "trtllm": "tensorrt-llm", "trt": "tensorrt-llm", "triton": "tensorrt-llm",
}
SERVING_KEYS: dict[str, str] = {"llamacpp": "llama.cpp", "llamaserver": "llama.cpp", "tensorrtllm": "tensorrt-llm",
                                "trtllm": "tensorrt-llm", "textgenerationinference": "tgi", "lmstudio": "llama.cpp",
                                "тртллм": "tensorrt-llm", "ламацпп": "llama.cpp", "ламасрр": "llama.cpp"}
UNMODELLED_SERVING = {"lmdeploy": "lmdeploy", "exllama": "exllama", "exllamav2": "exllama", "exl2": "exllama",
                      "mlc": "mlc"}
# disaggregated prefill/decode is a request field now (engine/parse/load.py DISAGG: CONTRACT v2.1 disaggregated)

# ── weight formats and KV cache ─────────────────────────────────────────────────────────
QUANT_WORDS: dict[str, str] = {"awq": "awq", "gptq": "gptq", "nf4": "nf4", "bnb4": "nf4", "mxfp4": "mxfp4",
                               "nvfp4": "nvfp4", "fp8": "fp8", "int8": "int8", "w8a8": "int8", "fp4": "nvfp4",
                               "e4m3": "fp8"}
QUANT_BITS = {"awq": 4, "gptq": 4, "nf4": 4, "mxfp4": 4, "nvfp4": 4, "fp8": 8, "int8": 8}
GGUF = frozenset({"gguf", "ггуф"})
KV_WORDS = frozenset({"kv", "kvcache", "кв"})
CACHE_WORDS = frozenset({"cache", "кэш", "кеш", "кэша", "кеша", "кэше", "кеше", "кэшу", "кэшем"})
KV_DTYPES: dict[str, str] = {"fp8": "fp8", "int8": "int8", "int4": "int4", "bf16": "bf16", "fp16": "bf16",
                             "e4m3": "fp8", "fp8e4m3": "fp8", "fp8e5m2": "fp8"}

# ── serving load ────────────────────────────────────────────────────────────────────────
CONCURRENCY_HEADS = frozenset({"concurrency", "конкурентность", "параллельность", "одновременность"})
USER_NOUNS = frozenset({"users", "user", "пользователей", "пользователя", "пользователям", "пользователях",
                        "юзеров", "юзера", "юзерам", "юзерах", "клиентов", "клиента", "человек", "people",
                        "requests", "запросов", "запроса", "сессий", "sessions", "чатов", "chats", "clients",
                        "streams", "потоков", "concurrent", "одновременных", "параллельных", "одновременно",
                        "параллельно", "simultaneous"})
PROMPT_WORDS = frozenset({"prompt", "prompts", "промпт", "промпта", "промпты", "промптом", "промпте", "input",
                          "inputs", "вход", "входа", "входе", "входной", "входных", "isl", "инпут", "входы"})
OUTPUT_WORDS = frozenset({"output", "outputs", "выход", "выхода", "выходе", "выходной", "выходных", "ответ",
                          "ответа", "ответы", "completion", "completions", "генерация", "osl", "аутпут",
                          "max_tokens", "maxtokens", "response", "responses", "answer", "answers", "выходы",
                          "ответами", "ответах"})
# plural nouns a number before counts rather than measures: "1000 промптов" is no prompt length
COUNTED = frozenset({"prompts", "промптов", "промпты", "inputs", "outputs", "completions", "responses", "ответов",
                     "ответы", "входов", "выходов", "answer", "answers", "входы", "выходы", "ответами", "ответах"})
GENERATION_WORDS = frozenset({"генераций", "генерации", "генерациями", "generations", "completions", "rollouts",
                              "роллаутов", "роллаута", "роллауты", "samples", "сэмплов", "семплов", "ответов",
                              "responses", "комплишенов"})
GENERATION_HEADS = frozenset({"numgenerations", "numgeneration", "groupsize", "nsamples", "n_samples",
                              "rolloutn", "numsamples"})

# ── parallelism ─────────────────────────────────────────────────────────────────────────
TP_WORDS = frozenset({"tp", "tensor", "тензорный", "тензорного", "тензорным", "тензорном", "тензорная"})
PP_WORDS = frozenset({"pp", "pipeline", "конвейерный", "конвейерного", "пайплайн", "пайплайновый",
                      "пайплайнового", "конвейерным"})
CP_WORDS = frozenset({"cp", "context", "sequence", "ulysses", "ring", "sp", "контекстный", "контекстного",
                      "последовательностей", "улисс"})
EP_WORDS = frozenset({"ep", "expert", "экспертный", "экспертного", "экспертным"})  # CONTRACT v2.1 expert_parallel
PARALLEL_NOUNS = frozenset({"parallel", "parallelism", "параллелизм", "параллелизма", "параллелизмом",
                            "параллельность", "size", "degree", "параллель", "way", "attention"})

# ── what cannot be modelled (short keys) ────────────────────────────────────────────────
UNSUPPORTED_WORDS: dict[str, str] = {
    "tpu": "tpu", "tpus": "tpu", "тпу": "tpu", "v5e": "tpu", "v5p": "tpu", "v6e": "tpu", "trillium": "tpu",
    "vision": "vision", "картинки": "vision", "картинками": "vision", "картинок": "vision", "картинках": "vision",
    "картинкам": "vision", "картинку": "vision", "картинка": "vision", "изображениям": "vision", "фоткам": "vision",
    "фотках": "vision", "фотки": "vision", "vl": "vision",
    "изображения": "vision", "изображений": "vision", "изображениях": "vision", "изображениями": "vision",
    "images": "vision", "image": "vision", "multimodal": "vision", "мультимодальная": "vision",
    "мультимодальную": "vision", "мультимодальной": "vision", "мультимодальные": "vision", "vlm": "vision",
    "llava": "vision", "pixtral": "vision", "фото": "vision", "фотографиях": "vision", "скриншоты": "vision",
    "ocr": "vision",
    "diffusion": "diffusion", "sdxl": "diffusion", "flux": "diffusion", "диффузия": "diffusion",
    "диффузионную": "diffusion", "диффузионной": "diffusion",
    "whisper": "audio", "audio": "audio", "speech": "audio", "аудио": "audio", "речь": "audio", "tts": "audio",
    "asr": "audio", "голос": "audio",
    "mac": "apple", "macbook": "apple", "макбук": "apple", "макбуке": "apple", "мак": "apple", "маке": "apple",
    "mps": "apple",
    "distillation": "distillation", "distill": "distillation", "distilling": "distillation",
    "дистилляция": "distillation", "дистилляции": "distillation", "дистилляцию": "distillation",
    "дистиллировать": "distillation", "дистиллят": "distillation",
    **UNMODELLED_SERVING,
}
CPU_WORDS = frozenset({"cpu", "цпу", "процессоре", "проце", "процессорах", "cpus", "цп"})
CPU_ONLY_LEADS = frozenset({"на", "on", "only", "just", "чисто", "только", "pure"})
NO_GPU = (("без", "gpu"), ("без", "видеокарты"), ("без", "видеокарт"), ("без", "гпу"), ("without", "gpu"),
          ("without", "a", "gpu"), ("no", "gpu"), ("без", "видюхи"), ("without", "gpus"))
DISK_WORDS = frozenset({"диске", "диска", "диск", "disk", "storage", "хранилище", "ssd", "nvme"})
CHECKPOINT_NOUNS = frozenset({"чекпоинты", "чекпоинтов", "чекпоинт", "checkpoints", "checkpoint", "чекпойнты",
                              "чекпойнтов"})
SIZE_VERBS = frozenset({"весят", "весит", "весить", "займут", "занимают", "займет", "size", "weigh", "weighs",
                        "big", "размер", "объем", "много", "места"})
DISK_CONTEXT = frozenset({"место", "места", "space", "чекпоинты", "чекпоинтов", "checkpoints", "checkpoint",
                          "сохранить", "save", "saving", "хранить", "store", "займут", "занимают", "take"})
TTFT_PHRASES = (("time", "to", "first", "token"), ("ttft",), ("время", "до", "первого", "токена"),
                ("time", "-", "to", "-", "first", "-", "token"))
COLAB_WORDS = frozenset({"colab", "колаб", "колабе", "колабу", "колаба", "коллаб", "коллабе", "kaggle", "каггл",
                         "каггле", "кагле"})
APPLE_CHIPS = frozenset({"m1", "m2", "m3", "m4"})

# ── fused loss ──────────────────────────────────────────────────────────────────────────
FUSED_WORDS = frozenset({"liger", "лайгер", "лигер", "лайгером", "лайгера", "лигером", "лигера", "лайгеру",
                         "cce", "fusedce", "fusedloss", "cutcrossentropy",
                         "chunkedce", "chunked_ce"})
FUSED_PAIRS = (("fused", "loss"), ("fused", "cross"), ("fused", "ce"), ("chunked", "cross"), ("chunked", "ce"),
               ("chunked", "loss"), ("cut", "cross"), ("фьюзед", "лосс"), ("fused", "crossentropy"),
               ("слитый", "лосс"), ("fused", "лосс"))

ASKING = frozenset({"сколько", "скока", "скоко", "скок", "many", "how"})
MEMORY_UNITS = frozenset({"gb", "гб", "гиг", "gib", "g", "г"})
# one stream: «сколько ток/с на одного», "single user speed" (a number of users said in words)
SINGLE_USER = (("single", "user"), ("single", "stream"), ("one", "user"), ("a", "single", "request"),
               ("на", "одного"), ("одного", "пользователя"), ("одного", "юзера"), ("один", "пользователь"),
               ("один", "юзер"), ("одному", "пользователю"), ("одним", "пользователем"), ("в", "один", "поток"),
               ("в", "одного"), ("в", "одно", "лицо"), ("для", "одного"), ("одного", "человека"),
               ("one", "stream"), ("one", "request"))
GENERATE_VERBS = frozenset({"generate", "generates", "generating", "generated", "генерировать", "сгенерировать",
                            "генерирует", "генерит", "генерим", "генерировал"})
