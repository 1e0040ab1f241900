"""Serving load and the features deployments turn on (CONTRACT v2.1): a request rate («20 запросов в секунду»,
"20 rps", "72000 requests per hour"), the latency promise («TTFT p95 под 500 мс», "TPOT under 50 ms",
"50 ms per token", "30 tok/s per user"), a prefix-cache hit rate («с префикс-кэшем 50 %»), speculative decoding
(EAGLE, MTP, a draft model, n-gram), multi-LoRA («100 LoRA-адаптеров»), expert parallelism, --enforce-eager, the
interconnect, NIM as an engine, and a question for a number of users ("how many concurrent users",
«сколько пользователей»)."""

from __future__ import annotations

import re

from engine.parse.numbers import number_value
from engine.parse.scan import Scan

NUMBER = r"(\d+(?:[.,]\d+)?)"
THOUSANDS = r"(?:\s*(k|к|тыс\.?|thousand)(?![a-zа-яё]))?"  # "1.2k requests per minute", «2к запросов в минуту»
RATE = re.compile(NUMBER + THOUSANDS + r"\s*(?:rps|qps|req/s|reqs?/s|requests?\s*(?:/|per|a|an)\s*"
                  r"(sec(?:ond)?|s|min(?:ute)?|h(?:our)?|hr)\b"
                  r"|запрос\w*\s*(?:в|/|за)\s*(секунду|сек|с|минуту|мин|час|ч)\b|rpm\b|rph\b)")
PER_SECONDS = {"min": 60.0, "мин": 60.0, "h": 3600.0, "час": 3600.0, "ч": 3600.0}
TTFT = re.compile(r"(?:ttft|(?:time to )?first token|первого токена|первый токен)(?:\s*p\s*(\d{2}))?[^\d]{0,24}?"
                  + NUMBER + r"\s*(мс|ms|msec|с|s|sec|сек|секунд\w*|seconds?)\b")
# a latency promise that names no phase («латенси до 500мс», "p99 under 2s", «задержка p95 до 1 с»): read as the
# time to first token, the latency a chat user waits on, and said as assumed (Request.assumed "ttft_p95_ms")
UNIT = r"\s*(мс|ms|msec|millisec\w*|миллисек\w*|с|s|sec|сек|секунд\w*|seconds?)(?![a-zа-яё])"
LATENCY = re.compile(r"(?:latency|latencies|задержк\w*|латенси|латенс\w*|латентн\w*|отклик\w*)(?:\s*p\s*(\d{2}))?"
                     r"[^\d?!.]{0,24}?" + NUMBER + UNIT)
PERCENTILE_PROMISE = re.compile(r"(?<![\w.])p\s*(50|90|95|99)(?![\w.])[^\d?!.]{0,16}?" + NUMBER + UNIT)
PERCENTILE_BEFORE = re.compile(r"\bp\s*(\d{2})\s*(?:ttft|time to first token|первого токена|first token)")
MEDIAN = re.compile(r"median|медиан\w*")
TPOT = re.compile(r"(?:tpot|itl|inter[- ]token latency)(?:\s*p\s*\d{2})?[^\d]{0,20}?" + NUMBER + r"\s*(мс|ms)\b")
PER_TOKEN = re.compile(NUMBER + r"\s*(?:мс|ms)\s*(?:per|на|/|a|each)\s*(?:output\s*|выходной\s*)?(?:token|токен)\b")
PER_USER = re.compile(NUMBER + r"\s*(?:tok(?:ens)?/s|t/s|tps|ток(?:ен\w*)?/с|ток(?:ен\w*)? в секунду|tokens per second)"
                      r"\s*(?:на|per|for each|each|/)\s*(?:пользовател\w*|юзер\w*|user|request|запрос\w*)")
PREFIX = re.compile(r"(?:prefix[- ]?cach\w*|префикс\w*[- ]?кэш\w*|кэш\w* префикс\w*|cache hit\w*|попадани\w* в кэш)"
                    r"[^\d%]{0,24}?" + NUMBER + r"\s*%|" + NUMBER + r"\s*%\s*(?:prefix|cache hit|попадани|префикс)")
LORAS = re.compile(r"(\d+)\s*(?:lora|лора|лор|лоры)[- ]?(?:адаптер\w*|adapters?|-ов)|max[-_ ]loras?\s*=?\s*(\d+)"
                   r"|(\d+)\s*(?:адаптер\w*|adapters)")
LORA_RANK = re.compile(r"max[-_ ]lora[-_ ]rank\s*=?\s*(\d+)")
SPEC = re.compile(r"eagle|\bmtp\b|multi[- ]token prediction|спекулятивн\w*|speculative|spec[- ]?decod\w*|draft model|"
                  r"драфт\w*|n-?gram|нграм\w*")
EP = re.compile(r"expert[- ]parallel\w*|\bep\s*=?\s*\d+\b|экспертн\w* параллел\w*|enable[-_]expert[-_]parallel")
# a bare "EP" in capitals, as people write the abbreviation («EP, 64 пользователя»); not "3 ep" (epochs)
EP_BARE = re.compile(r"(?<![\w.])(?<!\d )EP(?!\w)")
EAGER = re.compile(r"enforce[-_ ]eager|eager mode|без cuda[- ]?graph\w*|without cuda[- ]?graphs?|no cuda[- ]?graphs?")
PCIE = re.compile(r"\bpcie\b|по pci|без nvlink|without nvlink|no nvlink")
IB = re.compile(r"infiniband|\bib\b|two nodes|2 nodes|две ноды|2 ноды|двух нодах|2 нодах|across nodes|между нодами")
NVLINK = re.compile(r"\bnvlink\b|nvswitch")
NIM = re.compile(r"\bnim\b")
# disaggregated prefill/decode: "disaggregated serving", "P/D", "1P1D", «раздельный префилл», «префилл и декод на
# разных GPU»; "2P1D" also says how many instances prefill
DISAGG = re.compile(r"d[ie]s?aggregat\w*|disagg\b|д[иеі]с?агрег\w*|д[иеі]заг?рег\w*|\bp\s*/\s*d\b"
                    r"|\b\d+\s*p\s*\d+\s*d\b|раздельн\w* (?:префил\w*|prefill)"
                    r"|(?:prefill|префил\w*)[- ]?(?:и|and|/)[- ]?(?:decode|декод\w*) "
                    r"(?:separat\w*|split|на разных|раздельн\w*|отдельн\w*|apart)"
                    r"|separate (?:prefill|decode) (?:and (?:prefill|decode) )?"
                    r"(?:instances|pools|workers|nodes|servers)"
                    r"|отдельн\w* (?:инстанс\w*|ноды|пул\w*|сервер\w*) (?:для|под) префил\w*"
                    r"|\bdynamo\b")  # NVIDIA Dynamo: disaggregated serving is what it is named for
XPYD = re.compile(r"\b(\d+)\s*p\s*(\d+)\s*d\b")
PREFILL_N = re.compile(r"(\d+)\s*(?:prefill|префилл?[- ]?)\s*(?:instances?|workers?|nodes?|servers?|инстанс\w*|нод\w*|"
                       r"сервер\w*|воркер\w*)")
DP_ATTN = re.compile(r"dp[- ]?attention|dp[- ]?attn|enable[-_]dp[-_]attention|data[- ]parallel attention"
                     r"|attention (?:data[- ]parallel\w*|dp)\b|dp[- ]?(?:атт?еншн\w*|внимани\w*)"
                     r"|data[-_ ]parallel[-_ ]size|внимани\w* (?:с )?(?:dp|дп|data[- ]parallel)")
# adapters served, not trained: "how many LoRA adapters can one H100 serve", «мульти-лора на инференсе», "vLLM with
# 16 LoRA adapters"; "how many" before them asks for the count of adapter slots
_ADAPTERS = r"(?:lora|лора)[- ]?(?:adapters?|адаптер\w*)|адаптер\w*|adapters|\bлор\b|\bloras\b"
_SERVED = (r"serv\w*|inferenc\w*|инференс\w*|обслуж\w*|раздава\w*|сервинг\w*|продакшн\w*|в проде|in production|"
           r"vllm|sglang|потян\w*|держ\w*|hold|host\w*")
SERVED_ADAPTERS = re.compile(r"multi[- ]?lora|мульти[- ]?лор\w*|enable[-_]lora|max[-_]loras|"
                             rf"(?:{_ADAPTERS})[^?!\n]{{0,48}}?\b(?:{_SERVED})|\b(?:{_SERVED})[^?!\n]{{0,48}}?(?:{_ADAPTERS})")
# a method or stage that trains: a latency said beside it is not read as a serving promise
TRAINED = re.compile(r"(?<![\w-])(?:q?lora|q?лор[аыу]|фулл|full fine|sft|dpo|grpo|ppo|orpo|kto)(?![\w-])")
TRAINING = re.compile(r"обуч\w*|дообуч\w*|тренир\w*|\btrain\w*|fine[- ]?tun\w*|finetun\w*|файн-?тюн\w*")
HOW_MANY_ADAPTERS = re.compile(rf"(?:how many|сколько)\s+(?:\w+[- ]?){{0,2}}?(?:{_ADAPTERS})"
                               rf"|(?:{_ADAPTERS})[^?!\n]{{0,40}}?(?:how many|сколько)\s+(?:влез\w*|помест\w*|fit)")
# "how many requests per second can it take": the rate it holds, not tokens/s or users
RATE_ASKED = re.compile(r"(?:how many|сколько|скока|скоко)\s+(?:rps|qps|запрос\w* в (?:секунду|сек)|"
                        r"requests? per second|requests?/s|req/s|запр\w*/с)")
USERS = re.compile(r"how many (?:concurrent |simultaneous |parallel )?(?:users|requests|clients|people|chats|sessions"
                   r"|streams|conversations)"
                   r"|(?:сколько|скольк\w+|скока|скоко|скок)(?: [а-яё]+){0,2}? "  # «сколько потянет юзеров»
                   r"(?:пользовател\w*|юзер\w*|запрос\w*|клиент\w*|человек|чел|чатов|сессий|диалогов|потоков)\b")


FIELDS = ("request_rate", "ttft_p95_ms", "ttft_percentile", "tpot_ms", "prefix_cache_hit_rate", "speculative",
          "max_loras", "max_lora_rank", "enforce_eager", "interconnect", "disaggregated", "prefill_instances",
          "dp_attention")

SERVING_ONLY = ("request_rate", "ttft_p95_ms", "tpot_ms", "prefix_cache_hit_rate", "speculative", "enforce_eager",
                "disaggregated", "dp_attention")


def _mark(s: Scan, start: int, end: int) -> None:
    """The tokens of a matched span are used: "500 мс" is no context, "100 адаптеров" no users."""
    for t in s.toks:
        if t.start >= start and t.end <= end:
            t.used = True


def _num(x: str) -> float:
    return number_value(x)  # "0,5 с" is a half, "72,000 requests per hour" seventy-two thousand


def _ttft_promise(s: Scan, text: str, m: re.Match[str], pct: str | None) -> bool:
    """The TTFT promise of a match whose last two groups are its value and unit: in ms, at the percentile said (a
    median word makes it p50; p95 when none is said). False when the value is out of range (nothing set)."""
    value, unit = m.group(m.re.groups - 1), m.group(m.re.groups)
    ms = _num(value) * (1.0 if unit.startswith(("мс", "ms", "milli", "милли")) else 1000.0)
    if not 0 < ms <= 1e7:
        return False
    s.set("ttft_p95_ms", ms)
    if MEDIAN.search(text[max(0, m.start() - 24):m.start() + 8]):
        pct = "50"
    if pct in ("50", "99"):
        s.set("ttft_percentile", int(pct))
    _mark(s, m.start(), m.end())
    return True


def _latency(s: Scan, text: str) -> None:
    """A promise on a latency that names no phase: the time to first token at its percentile (p95 when none is
    said), marked as the parser's reading so that the answer says it."""
    m = LATENCY.search(text) or PERCENTILE_PROMISE.search(text)
    if m is None or TPOT.search(text) or PER_TOKEN.search(text) or TRAINING.search(text) or TRAINED.search(text):
        return  # a training question's "latency" is no serving promise: the question stays the one asked
    before = re.search(r"\bp\s*(\d{2})\s*$", text[max(0, m.start() - 8):m.start()]) if m.re is LATENCY else None
    if _ttft_promise(s, text, m, m.group(1) or (before.group(1) if before else None)):
        s.assumed.append("ttft_p95_ms")


def load(s: Scan) -> None:
    text = s.text
    m = RATE.search(text)
    if m:
        v = _num(m.group(1)) * (1000.0 if m.group(2) else 1.0)
        unit = (m.group(3) or m.group(4) or "").lower()
        unit = "min" if "rpm" in m.group(0) else "h" if "rph" in m.group(0) else unit
        v /= next((sec for head, sec in PER_SECONDS.items() if unit.startswith(head)), 1.0)
        if 0 < v <= 1e6:
            s.set("request_rate", v)
            _mark(s, m.start(), m.end())
    m = TTFT.search(text)
    if m:
        _ttft_promise(s, text, m, m.group(1) or next(iter(PERCENTILE_BEFORE.findall(text[:m.start() + 8])), None))
    else:
        _latency(s, text)
    m = TPOT.search(text)
    if m and 0 < _num(m.group(1)) <= 1e6:
        s.set("tpot_ms", _num(m.group(1)))
        _mark(s, m.start(), m.end())
    m = PER_TOKEN.search(text)  # "50 ms per token", «50 мс на токен»
    if m and 0 < _num(m.group(1)) <= 1e6:
        s.set("tpot_ms", _num(m.group(1)))
        _mark(s, m.start(), m.end())
    m = PER_USER.search(text)
    if m and 0 < _num(m.group(1)) <= 1e5:
        s.set("tpot_ms", round(1000.0 / _num(m.group(1)), 2))
        _mark(s, m.start(), m.end())
    m = PREFIX.search(text)
    if m:
        v = _num(m.group(1) or m.group(2))
        if 0 <= v <= 100:
            s.set("prefix_cache_hit_rate", v / 100.0)
            _mark(s, m.start(), m.end())
    m = LORAS.search(text)
    if m:
        v = int(m.group(1) or m.group(2) or m.group(3))
        if 1 <= v <= 100_000:
            s.set("max_loras", v)
            _mark(s, m.start(), m.end())
    m = LORA_RANK.search(text)
    if m:
        s.set("max_lora_rank", int(m.group(1)))
        _mark(s, m.start(), m.end())
    m = SPEC.search(text)
    if m:
        w = m.group(0)
        kind = "eagle" if "eagle" in text else "mtp" if ("mtp" in text or "multi" in w) else \
            "ngram" if ("gram" in w or "грам" in w) else "draft"
        s.set("speculative", kind)
    # on; the degree, when said ("EP 8"), is the expert-parallel parser's (engine.parse.serving)
    if EP.search(text) or EP_BARE.search(s.cased):
        s.set("expert_parallel_on", True)
    if EAGER.search(text):
        s.set("enforce_eager", True)
    if IB.search(text):
        s.set("interconnect", "infiniband")
    elif PCIE.search(text):
        s.set("interconnect", "pcie")
    elif NVLINK.search(text):
        s.set("interconnect", "nvlink")
    if NIM.search(text):
        s.set("serving_engine", "nim")
    m = DISAGG.search(text)
    if m:
        s.set("disaggregated", True)
        n = XPYD.search(text) or PREFILL_N.search(text)
        if n and 1 <= int(n.group(1)) <= 1024:
            s.set("prefill_instances", int(n.group(1)))
            _mark(s, n.start(), n.end())
        _mark(s, m.start(), m.end())
    m = DP_ATTN.search(text)
    if m:
        s.set("dp_attention", True)
        _mark(s, m.start(), m.end())
    if RATE_ASKED.search(text):
        s.set("asks_rate", True)
    elif USERS.search(text):
        s.set("asks_users", True)
    # "train a LoRA adapter, then serve it in vLLM" is a fine-tune
    # «сколько лор-адаптеров влезет на h100»: counting adapters a GPU holds is multi-LoRA serving by itself
    how_many = HOW_MANY_ADAPTERS.search(text)
    if (SERVED_ADAPTERS.search(text) or how_many) and not TRAINING.search(text):
        s.set("serves_adapters", True)
        if how_many:
            s.set("asks_adapters", True)
