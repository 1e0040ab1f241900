"""Small talk (greetings, thanks, "what can you do") and what a serving question asks for (latency,
throughput): signals for the answer, not fields of CONTRACT.md."""

from __future__ import annotations

from engine.parse.lexicon import CAPABILITY, GREETINGS, THANKS
from engine.parse.lexicon_stack import TTFT_PHRASES
from engine.parse.normalize import NUM
from engine.parse.scan import Phrases, Scan

GREETING_PAIRS = (("добрый", "день"), ("добрый", "вечер"), ("доброе", "утро"), ("доброй", "ночи"),
                  ("good", "morning"), ("good", "evening"), ("good", "afternoon"), ("good", "day"))
NEEDS_PAIR = frozenset({"добрый", "доброе", "good", "morning", "evening", "день", "вечер", "утро"})
ACKS = frozenset({"ок", "ok", "okay", "понял", "поняла", "понятно", "ясно", "got", "nice", "ладно"})
THROUGHPUT = (("tokens", "per", "second"), ("tokens", "/", "s"), ("tok", "/", "s"), ("токенов", "в", "секунду"),
              ("throughput",), ("пропускная",), ("скорость", "генерации"), ("tps",), ("t", "/", "s"),
              ("tokens", "/", "sec"), ("tokens", "a", "second"), ("токенов", "в", "сек"), ("токенов", "/", "с"),
              ("ток", "/", "с"), ("т", "/", "с"), ("токенов", "в", "секунду"), ("rps",), ("qps",),
              ("requests", "per", "second"), ("запросов", "в", "секунду"),
              # «скорость на одного», «какая скорость», "how fast": the speed of generation
              ("скорость", "на"), ("скорость", "в"), ("скорость", "для"), ("какая", "скорость"), ("скорость", "?"),
              ("скорость", "ответа"), ("скорость", "инфера"), ("скорость", "инференса"), ("how", "fast"),
              ("what", "speed"), ("speed", "per"), ("single", "user", "speed"),
              # «сколько токенов даст 8b на 4090»: the speed it generates at, not a data amount
              *(("сколько", "токенов", verb) for verb in ("даст", "выдаст", "выдаёт", "выдает", "генерит",
                                                          "сгенерит", "выжмет", "выжимает")))
# «сколько памяти надо», "how much VRAM": the memory is what is asked (a serving answer then leads with it)
MEMORY_ASKS = (("сколько", "памяти"), ("сколько", "видеопамяти"), ("сколько", "vram"), ("сколько", "гб"),
               ("сколько", "гигов"), ("how", "much", "memory"), ("how", "much", "vram"), ("how", "much", "gpu",
                                                                                         "memory"),
               ("how", "many", "gb"), ("скока", "памяти"), ("скок", "памяти"), ("сколько", "нужно", "памяти"),
               ("сколько", "надо", "памяти"), ("vram", "needed"), ("memory", "needed"), ("memory", "required"))
# «какой максимальный контекст влезет», "what's the longest context that fits": the context is the question
CONTEXT_ASKS = (("максимальный", "контекст"), ("максимальная", "длина", "контекста"), ("максимальную", "длину"),
                ("макс", "контекст"), ("максимум", "контекста"), ("предельный", "контекст"), ("какой", "контекст",
                                                                                             "влезет"),
                ("какой", "контекст", "поместится"), ("какой", "контекст", "потянет"), ("сколько", "контекста"),
                ("какой", "длины", "контекст"), ("какую", "длину", "контекста"), ("самый", "длинный", "контекст"),
                ("max", "context"), ("maximum", "context"), ("longest", "context"), ("largest", "context"),
                ("biggest", "context"), ("how", "much", "context"), ("how", "long", "a", "context"),
                ("max", "seq", "len"), ("max", "sequence", "length"), ("what", "context", "fits"),
                ("max", "ctx"))
# «какую модель можно запустить на 4090», "which model fits a 3090": the model is the question (with none named)
MODEL_ASKS = (("какую", "модель"), ("какая", "модель"), ("какие", "модели"), ("каких", "моделей"),
              ("какую", "нейронку"), ("какую", "нейросеть"), ("какую", "llm"), ("какие", "llm"),
              ("модель", "какого", "размера"), ("какого", "размера", "модель"), ("самую", "большую", "модель"),
              ("самая", "большая", "модель"), ("максимальную", "модель"), ("максимальная", "модель"),
              ("какую", "максимальную", "модель"), ("какая", "максимальная", "модель"),
              ("what", "model"), ("which", "model"), ("what", "models"), ("which", "models"), ("what", "llm"),
              ("which", "llm"), ("what", "llms"), ("which", "llms"), ("what", "size", "model"),
              ("how", "big", "a", "model"), ("largest", "model"), ("biggest", "model"))
# «deepseek v3 на 8xh200 скорость», "llama 70b on 2 h100 speed": the speed as the last word is what is asked
SPEED_LAST = frozenset({"скорость", "скорости", "speed"})
LATENCY = (*TTFT_PHRASES, ("latency",), ("задержка",), ("задержку",), ("латентность",), ("латенси",))


CAPS = Phrases(CAPABILITY)
GREET = Phrases(GREETING_PAIRS)
THANK = Phrases([("thank", "you")])
LAT = Phrases(LATENCY)
THRU = Phrases(THROUGHPUT)
MEM = Phrases(MEMORY_ASKS)
CTX = Phrases(CONTEXT_ASKS)
MODELS = Phrases(MODEL_ASKS)


def smalltalk(s: Scan) -> str | None:
    """"capabilities" | "thanks" | "greeting" for a message with no question in it, else None."""
    texts = [t.text for t in s.toks if t.kind != "p"]
    if not texts or len(texts) > 12:
        return None
    if CAPS.first(texts) is not None:
        return "capabilities"
    words = set(texts)
    if words & (THANKS | ACKS) or THANK.first(texts) is not None:
        return "thanks"
    if words & (GREETINGS - NEEDS_PAIR) or GREET.first(texts) is not None:
        return "greeting"
    return None


HOW_MANY = frozenset({"сколько", "скока", "скоко", "скок", "скольких", "many"})
NODES = frozenset({"нод", "ноды", "нода", "нодов", "узлов", "узла", "node", "nodes", "серверов", "servers", "machines",
                   "машин"})
COUNTED = NODES | frozenset({"гпу", "gpu", "gpus", "карт", "карты", "видеокарт", "видюх", "штук"})


NEED = frozenset({"нужно", "надо", "нужен", "нужны", "потребуется", "понадобится", "do", "would"})


GPU_HOUR_WORDS = frozenset({"hours", "hour", "hrs", "часов", "часа", "час", "гпу-часов", "gpu-hours"})


def count_asked(s: Scan) -> bool:
    """"сколько нод h100", "скока надо гпу", "how many H100s": the number of GPUs (or nodes) is the question."""
    for i, t in enumerate(s.toks):
        if t.text in HOW_MANY and (t.text != "many" or (i > 0 and s.toks[i - 1].text == "how")):
            ahead = s.toks[i + 1:i + 5]
            if any(x.text in COUNTED or x.text.rstrip("s") in COUNTED for x in ahead):
                return True
            k = i + 1 + (i + 1 < s.n and s.toks[i + 1].text in NEED)
            gpu = next((g for g in s.gpus if g[0] == k), None)
            if gpu is not None and not any(x.text in GPU_HOUR_WORDS for x in s.toks[k + 1:k + 4]):
                return True  # "сколько h100 нужно", "сколько надо h100" ("сколько стоит H100" is a price;
                # "how many H100 hours" is the time)
    return False


def nodes_asked(s: Scan) -> bool:
    """"сколько нод h100", "how many nodes": the count is asked in machines (the answer says them beside the GPUs)."""
    return any(t.text in HOW_MANY and (t.text != "many" or (i > 0 and s.toks[i - 1].text == "how"))
               and any(x.text in NODES or x.text.rstrip("s") in NODES for x in s.toks[i + 1:i + 5])
               for i, t in enumerate(s.toks))


def serving_asks(s: Scan) -> list[str]:
    texts = s.texts
    out = (["count", "nodes"] if nodes_asked(s) else ["count"]) if count_asked(s) else []
    if LAT.first(texts, s.words) is not None:
        out.append("latency")
    words = [t.text for t in s.toks if t.kind != "p"]
    if THRU.first(texts, s.words) is not None or (words and words[-1] in SPEED_LAST):
        out.append("throughput")
    if MEM.first(texts, s.words) is not None:
        out.append("memory")
    if context_asked(s):
        out.append("context")
    if MODELS.first(texts, s.words) is not None:
        out.append("models")
    return out


def context_asked(s: Scan) -> bool:
    """«какой максимальный контекст влезет», "max context on a 4090": the longest context is asked, unless a
    length follows the words ("max seq len 4096" sets it)."""
    i = CTX.first(s.texts, s.words)
    if i is None:
        return False
    end = i + len(CTX.at(s.texts, i) or ())
    if end < s.n and s.toks[end].text in ("=", ":", "-"):
        end += 1
    return not (end < s.n and s.toks[end].kind == NUM)
