"""Words of both languages, already folded (lower case, ё → е, Cyrillic look-alikes → Latin).

Each set is one meaning; the parser asks "is this token in X", never matches raw strings.
Russian entries list the inflected forms people actually type (case endings), not a stemmer:
a stemmer would be slower and would over-match short words.
"""

from __future__ import annotations

# Cyrillic letters that stand for Latin ones when glued to digits: "Н100", "а6000", "Т4", "70б",
# "128к", "2х4090", "24гб". Visual look-alikes, plus б (billion), г (giga) and в (V100, DeepSeek в3).
LOOKALIKE_TABLE = str.maketrans({
    "а": "a", "в": "v", "е": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "с": "c",
    "т": "t", "у": "y", "х": "x", "б": "b", "г": "g",
})
LOOKALIKE_LETTERS = frozenset("авекмнорстухбг")

# Cyrillic spellings of model families and vendors → the Latin word the catalogs use.
CYRILLIC_WORDS = {
    "ллама": "llama", "лама": "llama", "лламы": "llama", "ламы": "llama", "лламу": "llama", "ламу": "llama",
    "лламе": "llama", "ламе": "llama",
    "квен": "qwen", "квена": "qwen", "квене": "qwen", "кьювен": "qwen",
    "мистраль": "mistral", "мистрал": "mistral", "мистраля": "mistral", "мистрале": "mistral",
    "микстраль": "mixtral", "микстрал": "mixtral", "микстраля": "mixtral",
    "гемма": "gemma", "гемму": "gemma", "геммы": "gemma", "гемме": "gemma", "джемма": "gemma", "джемму": "gemma",
    "джеммы": "gemma", "джемме": "gemma",
    "фи": "phi",
    "дипсик": "deepseek", "дипсика": "deepseek", "дипсике": "deepseek", "дипсик-в3": "deepseek",
    "фалкон": "falcon", "фалькон": "falcon",
    "кими": "kimi", "ртх": "rtx", "нвидиа": "nvidia", "нвидия": "nvidia", "тесла": "tesla",
}

# ── numbers ──────────────────────────────────────────────────────────────────────────────
THOUSAND = frozenset({"k", "к", "тыс", "тысяч", "тысячи", "тысяча", "тысячу", "тыщ", "тыщи", "тыща", "тыщу", "тыш",
                      "thousand", "thousands", "kilo"})
MILLION = frozenset({"m", "м", "млн", "миллион", "миллиона", "миллионов", "million", "millions", "mln", "mn",
                     "mil", "mio"})
BILLION = frozenset({"b", "б", "млрд", "миллиард", "миллиарда", "миллиардов", "миллиардах", "billion",
                     "billions", "bn", "bln", "bil"})
TRILLION = frozenset({"t", "т", "трлн", "триллион", "триллиона", "триллионов", "trillion", "trillions", "tn"})
MULTIPLIER: dict[str, float] = {
    **dict.fromkeys(THOUSAND, 1e3), **dict.fromkeys(MILLION, 1e6),
    **dict.fromkeys(BILLION, 1e9), **dict.fromkeys(TRILLION, 1e12),
}

COUNT_WORDS: dict[str, int] = {
    "one": 1, "single": 1, "two": 2, "dual": 2, "pair": 2, "double": 2, "three": 3, "four": 4, "quad": 4,
    "five": 5, "six": 6, "seven": 7, "eight": 8, "ten": 10, "sixteen": 16,
    "один": 1, "одна": 1, "одну": 1, "одной": 1, "одном": 1, "одного": 1,
    "два": 2, "две": 2, "двух": 2, "двумя": 2, "двум": 2, "пара": 2, "пару": 2, "паре": 2, "пары": 2,
    "три": 3, "трех": 3, "тремя": 3, "трем": 3, "четыре": 4, "четырех": 4, "четырьмя": 4, "четырем": 4,
    "пять": 5, "пяти": 5, "шесть": 6, "шести": 6, "семь": 7, "семи": 7, "восемь": 8, "восьми": 8,
    "восьмью": 8, "десять": 10, "десяти": 10, "шестнадцать": 16, "шестнадцати": 16,
    "двое": 2, "трое": 3, "четверо": 4,  # «двое суток», «трое суток»
}

# ── GPUs and memory ──────────────────────────────────────────────────────────────────────
MEMORY_UNITS = frozenset({"gb", "гб", "g", "gib", "гиб", "gig", "gigs", "gigabyte", "gigabytes", "гиг", "гига",
                          "гигов", "гигах", "гигами", "гигабайт", "гигабайта", "гигабайтов", "гигабайтах",
                          "гигабайтами", "гигабайтной", "гиговой", "гиговую", "гиговая", "gbs"})
RAM_WORDS = frozenset({"ram", "озу", "оперативки", "оперативной", "оперативная", "оперативку", "оперативы",
                       "оперативка", "cpu", "system", "host", "dram", "ddr4", "ddr5", "ddr", "disk", "ssd",
                       "nvme", "диска", "диск", "хоста", "swap"})
GPU_NOUNS = frozenset({"gpu", "gpus", "card", "cards", "карта", "карты", "карте", "картах", "карт", "картами",
                       "картой", "карточка", "карточке", "карточки", "карточек", "карточках", "видеокарта",
                       "видеокарте", "видеокарты", "видеокарт", "видеокартах", "видеокартой", "видеокартами",
                       "видюха", "видюхе", "видюхи", "видюх", "видюхах", "гпу", "ускоритель", "ускорителе",
                       "ускорителя", "ускорителей", "ускорителях", "accelerator", "accelerators", "шт",
                       "штук", "штуки", "штуках", "pcs", "гпу-шки", "nodes"})
GPU_VENDOR_WORDS = frozenset({"nvidia", "geforce", "tesla", "amd", "radeon", "instinct", "quadro", "intel"})
# "rtx 9090", "gtx 2080": a GPU-looking name the catalogs lack is still a GPU, of unknown memory.
GPU_SERIES_WORDS = {"rtx": "RTX", "gtx": "GTX", "rx": "RX", "quadro": "Quadro"}
TIMES = frozenset({"x", "х", "×", "*"})

# ── settings ─────────────────────────────────────────────────────────────────────────────
CONTEXT_WORDS = frozenset({"context", "ctx", "контекст", "контекста", "контексте", "контекстом", "контекстная",
                           "контекстное", "контекстного", "контекстным", "контекстной", "seq", "seqlen",
                           "sequence", "сиквенс", "длина", "длиной", "длину", "длины", "window", "окно",
                           "окном", "maxlen", "msl", "length", "len", "контексту", "последовательности",
                           "последовательностей"})
BATCH_WORDS = frozenset({"batch", "bs", "батч", "батча", "батчем", "батче", "батчи", "батчсайз", "mbs",
                         "microbatch", "batchsize", "concurrency", "батчу"})
CONCURRENCY_ADJ = frozenset({"параллельными", "параллельных", "одновременных", "одновременными", "concurrent",
                             "parallel", "simultaneous", "параллельно", "одновременно", "параллельные",
                             "одновременные"})
CONCURRENCY_NOUNS = frozenset({"запросов", "запросами", "запроса", "запросы", "requests", "request", "users",
                               "пользователей", "пользователями", "пользователя", "sessions", "сессий", "streams",
                               "потоков", "sequences", "последовательностей", "чатов", "chats", "clients",
                               "клиентов", "юзеров"})
RANK_WORDS = frozenset({"r", "rank", "ранг", "ранга", "рангом", "ранге"})
EPOCH_WORDS = frozenset({"epoch", "epochs", "эпоха", "эпохи", "эпох", "эпоху", "эпохах", "эпохами", "эпохой",
                         "ep", "eps", "эпохе"})
TOKEN_WORDS = frozenset({"tokens", "token", "токенов", "токена", "токен", "токены", "токенах", "tok", "toks",
                         "токенами", "tkn"})
EXAMPLE_WORDS = frozenset({"examples", "example", "samples", "sample", "примеров", "пример", "примера",
                           "примерах", "сэмплов", "семплов", "сэмпла", "диалогов", "dialogs", "dialogues",
                           "conversations", "rows", "строк", "строки", "instructions", "инструкций", "pairs",
                           "documents", "документов", "docs", "текстов", "texts", "records", "записей",
                           "сообщений", "messages", "вопросов", "questions", "пар", "промптов", "prompts"})
FILLERS = frozenset({"=", ":", "-", "_", "of", "size", "до", "в", "на", "is", "up", "to", "~", "≈", "около",
                     "примерно", "about", "max", "максимум", "length", "len", "window", "окно", "a",
                     "the", "размер", "размером", "with", "с", "со", "per", "device", "train",
                     "micro", "training", "ограничение", "limit", "сайз", "сайзом"})
PER_WORDS = frozenset({"по", "each", "per", "x", "×", "*", "of", "with", "avg", "average", "averaging", "around",
                       "about", "~", "≈", "approximately", "approx", "среднем", "в", "около", "примерно",
                       "длиной", "length", "каждый", "каждом", "каждого", "at"})

BIT_WORDS = frozenset({"bit", "bits", "бит", "бита", "битах", "битный", "битная", "битное", "битной", "битным",
                       "битном", "битного", "битные", "битных", "битами", "битовый", "битовая", "битовое",
                       "битовой", "битовом", "битовым", "bitовый", "битную", "битовую", "b1t"})
# glued letter + digits: fp16, bf16, int8, nf4, q4 (GGUF), mxfp4
PRECISION_PREFIX = frozenset({"fp", "bf", "float", "bfloat", "int", "nf", "q", "mxfp", "uint", "e"})
PRECISION_WORDS: dict[str, int] = {"half": 16, "awq": 4, "gptq": 4, "bnb4": 4, "nf4": 4, "fp16": 16, "bf16": 16}
PRECISION_NOUNS = frozenset({"precision", "точность", "точности", "точностью"})

OPTIMIZER_HEADS = {
    "adam": "adamw", "adamw": "adamw", "адам": "adamw", "адамв": "adamw", "адамом": "adamw", "адама": "adamw",
    "adafactor": "adafactor", "адафактор": "adafactor", "адафактором": "adafactor", "адафактора": "adafactor",
    "sgd": "sgd", "сгд": "sgd", "lion": "lion", "лион": "lion", "лайон": "lion",
}
OPTIMIZER_GENERIC = frozenset({"optimizer", "optimiser", "optim", "optimizers", "оптимизатор", "оптимизатора",
                               "оптимизатором", "оптимизаторе", "оптимайзер", "оптимайзером", "оптимайзера",
                               "states"})
PAGED = frozenset({"paged", "пейджд", "пейджинговый", "paging"})
FUSED_OPTIMIZER = frozenset({"fused", "фьюзд", "фьюзед", "фьюзнутый", "фьюзнутым"})
FUSED_LOSS_NOUNS = frozenset({"cross", "ce", "crossentropy", "loss", "кросс", "лосс", "linear", "lm", "кросс-энтропия"})
BNB = frozenset({"bnb", "bitsandbytes"})

NEG_BEFORE = frozenset({"без", "without", "no", "not", "не", "disable", "disabled", "отключить", "отключив",
                        "выключить", "выключив", "отключенный", "отключенным", "отключенном", "выключенным",
                        "нет", "dont", "don't", "never", "w/o", "wo", "off"})
NEG_AFTER = frozenset({"off", "false", "disabled", "выкл", "выключен", "выключено", "отключен", "отключено",
                       "нет", "no", "0", "none", "выключенным", "выключенный", "выключена", "выключенном",
                       "отключенным", "отключенный", "отключена", "отключенном", "выключить", "отключить",
                       "disable"})
GC_HEADS = frozenset({"checkpointing", "чекпоинтинг", "чекпоинтинга", "чекпоинтингом", "чекпоинтинге",
                      "чекпойнтинг", "чекпойнтинга", "чекпойнтингом", "чекпойнтинге", "recompute",
                      "recomputation", "рекомпьют", "рекомпьюта", "recomputing", "checkpointed"})
GC_WEAK_HEADS = frozenset({"ckpt", "checkpoint", "checkpoints", "чекпоинт", "чекпоинты", "чекпоинтами", "gc"})
GC_QUALIFIERS = frozenset({"grad", "gradient", "gradients", "activation", "activations", "градиентов",
                           "градиентный", "градиентного", "градиентным", "градиент", "активаций"})
OFFLOAD_HEADS = frozenset({"offload", "offloading", "offloaded", "оффлоад", "оффлоадом", "оффлоада", "офлоад",
                           "офлоадом", "офлоада", "оффлоадинг", "оффлоадингом", "выгрузка", "выгрузкой",
                           "выгрузку", "выгрузки", "выгрузить", "выгружать", "выгрузкою", "offloads"})

# ── methods ──────────────────────────────────────────────────────────────────────────────
QLORA_WORDS = frozenset({"qlora", "кулора", "кулору", "кулорой", "кулоры", "кулоре", "кьюлора", "кьюлору",
                         "кьюлорой", "qlor"})
LORA_WORDS = frozenset({"lora", "лора", "лору", "лорой", "лоры", "лоре", "лорка", "лорку", "лоркой", "dora",
                        "loras", "peft"})
FULL_WORDS = frozenset({"fft", "полный", "полное", "полного", "полным", "полном", "полной", "полную",
                        "pretrain", "pretraining", "претрейн", "претрейна", "претрейне", "предобучение",
                        "предобучения", "предобучить", "предобучении", "full", "fullft", "fullfinetune"})
ALL_WORDS = frozenset({"all", "все", "всех", "всеми"})
WEIGHT_WORDS = frozenset({"weights", "parameters", "params", "веса", "весов", "параметров", "параметры", "layers"})
INFERENCE_WORDS = frozenset({"inference", "inferencing", "infer", "инференс", "инференса", "инференсе",
                             "инференсом", "инферить", "serve", "serving", "served", "сервинг", "сервить",
                             "deploy", "deployment", "деплой", "деплоить", "задеплоить", "развернуть",
                             "развертывание", "развертывания", "генерация",
                            "генерации", "generation", "host", "hosting", "хостить", "захостить", "запустить",
                             "запуск", "запуска", "вывод", "predict", "prediction", "инференсить"})
WEAK_INFERENCE_WORDS = frozenset({"run", "running", "запущу", "запускать", "крутить", "гонять", "chat", "прогнать",
                                  "прогонять", "прогоню",
                                  "поднять", "use", "gguf", "cpp", "exllama", "exl2", "exl", "lmstudio"})
# A yes/no "can it" about a bare size on a GPU («70б на одной h100 можно?», "is 70b possible on an h100"): what
# people ask this about is running the model (engine/parse/training.py inference_by_default), said as the guess.
CAN_IT_WORDS = frozenset({"можно", "реально", "возможно", "влезет", "влезает", "поместится", "запустится",
                          "заведётся", "заведется", "possible", "feasible"})
TRAIN_WORDS = frozenset({"train", "training", "trained", "обучение", "обучения", "обучить", "дообучение",
                         "дообучения", "дообучить", "дообучении", "finetune", "finetuning", "fine", "tune",
                         "tuning", "файнтюн", "файнтюна", "файнтюнинг", "файнтюнить", "тюнинг", "sft", "ft",
                         "зафайнтюнить", "тренировка", "тренировки", "обучать", "дообучать", "finetuned",
                         "tuned"})

# Words that glue to a size without naming a model: "qlora70b", "70b-instruct", "13b-model".
NOT_NAME_WORDS = QLORA_WORDS | LORA_WORDS | FULL_WORDS | INFERENCE_WORDS | TRAIN_WORDS | frozenset({
    "vllm", "tgi", "ollama", "sglang", "dpo", "sft", "grpo", "orpo", "kto", "ppo", "simpo", "rm", "awq", "gptq",
    "fp", "nf", "int", "mxfp", "nvfp", "fused", "liger", "unsloth", "axolotl", "kv",
    "instruct", "chat", "base", "it", "hf", "model", "models", "модель", "модели", "моделька", "param", "params",
    "parameters", "параметров", "x", "q", "bf", "bit", "a", "the", "llm", "ллм", "v", "gguf",
    "в", "на", "size", "class", "scale", "dense", "moe",
})

# ── intent ───────────────────────────────────────────────────────────────────────────────
COMPARE_STRONG = frozenset({"vs", "versus", "сравни", "сравнить", "сравнение", "сравните", "compare",
                            "comparison", "против", "сравнения", "compared"})
COMPARE_WEAK = frozenset({"или", "or", "либо", "лучше", "better", "выгоднее", "faster", "быстрее"})
COST_WORDS = frozenset({
    "cost", "costs", "costing", "price", "prices", "pricing", "priced", "cheap", "cheaper", "cheapest",
    "expensive", "budget", "usd", "dollars", "dollar", "eur", "euro", "euros", "стоит", "стоить", "стоимость",
    "стоимости", "цена", "цене", "цену", "цены", "ценник", "денег", "деньги", "рублей", "рубля", "руб",
    "рубли", "дорого", "дешевле", "дешево", "бюджет", "бюджета", "часов", "hours", "hourly", "почасово",
    "почасовая", "почасовой", "почасовую", "почасовка", "почасовке", "помесячно", "помесячная", "помесячной",
    "помесячную", "monthly", "месяц", "месяца", "месячная", "долго", "days", "дней", "суток", "почем",
    "$", "₽", "€", "спот", "spot", "тариф", "тарифы", "заплачу", "заплатить", "платить", "затраты",
    "обойдется", "обойдутся", "стоят", "стоило", "расходы",
})
TIME_NOUNS = frozenset({"времени", "время", "time"})
MEMORY_WORDS = frozenset({"memory", "vram", "ram", "gpu", "gpus", "space", "видеопамяти", "памяти", "gb",
                          "гб", "gigs", "cards"})

# ── GPU slang ──
# "аш сотка" = H100, "эйч двухсотка" = H200, "аш100": the letter said as a word.
LETTER_WORDS = {"аш": "h", "эйч": "h", "эич": "h", "ash": "h"}
HUNDREDS = {**dict.fromkeys(("сотка", "сотку", "сотке", "сотки", "соток", "сотках", "сотками", "соточка",
                              "соточку", "соточке", "соточки", "сотой", "сотая", "сотую"), "100"),
             **dict.fromkeys(("двухсотка", "двухсотку", "двухсотке", "двухсотки", "двухсоток", "двухсотках",
                              "двухсотая", "двухсотой", "двухсотую"), "200")}

# ── method slang ────────────────────────────────────────────────────────────────────────
FULL_SLANG = frozenset({"полнопараметрическое", "полнопараметрический", "полнопараметрического",
                        "полнопараметрическом", "полнопараметрическим", "полнопараметрическую", "fullparam",
                        "фулл", "фул", "фуллом", "фулом", "фуллфт", "фулфт", "fullft", "фулл-файнтюн"})
INFER_SLANG = frozenset({"инфер", "инфера", "инфере", "инферим", "инферить", "инфернуть", "инферю", "инферс",
                         "сервить", "серв", "задеплоить", "поднять", "поднимать", "подниму", "развернуть",
                         "разверну", "хостинг", "serve", "served", "serving", "inference"})

# ── conversation ────────────────────────────────────────────────────────────────────────
GREETINGS = frozenset({"привет", "приветик", "приветствую", "здравствуйте", "здравствуй", "здрасте", "хай",
                       "хелло", "hi", "hello", "hey", "hola", "yo", "start", "старт", "добрый", "доброе",
                       "салют", "ку", "good", "morning", "evening", "день", "вечер", "утро", "greetings",
                       "howdy", "sup"})
THANKS = frozenset({"спасибо", "спс", "благодарю", "пасиб", "пасибо", "спасибочки", "thanks", "thank", "thx",
                    "ty", "cheers", "мерси", "сенкс", "сяп", "класс", "супер", "отлично", "great", "awesome",
                    "perfect", "cool", "круто"})
CAPABILITY = (("что", "ты", "умеешь"), ("что", "умеешь"), ("что", "ты", "можешь"), ("что", "можешь"),
              ("what", "can", "you", "do"), ("what", "do", "you", "do"), ("who", "are", "you"),
              ("кто", "ты"), ("как", "тобой", "пользоваться"), ("how", "do", "i", "use"), ("how", "to", "use"),
              ("help",), ("помощь",), ("помоги",), ("хелп",), ("commands",), ("команды",), ("menu",), ("меню",),
              ("что", "ты", "такое"), ("what", "are", "you"), ("что", "делаешь"), ("что", "ты", "знаешь"))
