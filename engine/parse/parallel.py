"""Parallel degrees a question names: tensor, pipeline, context (sequence) and expert parallelism ("TP 4", "4-way
TP", "sequence parallel 8", "Ulysses 8"), and the context-parallel degree taken from the GPU count when only the
method is named ("with DeepSpeed Ulysses")."""

from __future__ import annotations

from engine.parse.lexicon_stack import CP_WORDS, EP_WORDS, PARALLEL_NOUNS, PP_WORDS, TP_WORDS
from engine.parse.normalize import WORD
from engine.parse.numbers import whole
from engine.parse.scan import Scan
from engine.parse.serving import CONCURRENT_WORDS, GLUE

PAR_FILLERS = frozenset({"=", ":", "-", "_", "of", "size", "degree", "на", "в", "(", "равен", "равный", "parallel",
                         "parallelism", "параллелизм", "параллелизма", "параллелизмом", "sequence", "attention",
                         "way", "is", "with", "с", "--"})
PARALLEL_TRIGGERS = TP_WORDS | PP_WORDS | CP_WORDS | EP_WORDS
MAX_PARALLEL = 1024


def parallelism(s: Scan) -> None:
    """"TP 4", "tp=4", "tensor parallel 4", "4-way TP", "PP 2", "CP 8", "sequence parallel 8", "Ulysses 8"."""
    if s.words.isdisjoint(PARALLEL_TRIGGERS):
        return
    for i, t in enumerate(s.toks):
        if t.used or t.kind != WORD:
            continue
        field = None
        if t.text in TP_WORDS:
            field = "tensor_parallel"
        elif t.text in PP_WORDS:
            field = "pipeline_parallel"
        elif t.text in CP_WORDS:
            field = "context_parallel"
        elif t.text in EP_WORDS:
            field = "expert_parallel"
        if field is None:
            continue
        short = t.text in ("tp", "pp", "cp", "sp", "ep", "ulysses", "улисс")
        nxt = s.skip(i + 1, GLUE, 1)
        if not short and s.word(nxt) not in PARALLEL_NOUNS:
            continue  # "tensor cores", "context 8k", "pipeline of data"
        if t.text == "ring" and s.word(nxt) != "attention":
            continue
        j = s.skip(i + 1, PAR_FILLERS, 5)
        if s.num(j) and not _count_or_length(s, j):
            _put_par(s, field, s.toks[j].val)
            s.use(i, j)
            continue
        if field == "expert_parallel" and short and s.num(j) and _users(s, j):
            s.use(i, i)  # "EP 64 users": expert parallelism on (engine.parse.load), the 64 are users, not epochs
            continue
        # "4-way tensor parallel", "TP4" written "4 TP"
        k = s.skip(i - 1, frozenset({"-", "way", "x", "×"}), 2, -1)
        if s.num(k) and (s.word(k + 1) in ("-", "way") or short):
            _put_par(s, field, s.toks[k].val)
            s.use(k, i)
        elif field == "context_parallel" and t.text in ("ulysses", "улисс", "ring", "sequence", "context"):
            s.cp_no_degree = True  # "with DeepSpeed Ulysses": the degree comes from the GPU count (cp_from_gpus)


def _count_or_length(s: Scan, j: int) -> bool:
    """The number after "Ulysses" / "TP" is not a degree when it is a GPU count ("с ulysses на 8 H100") or a length
    ("ulysses 128k")."""
    from engine.parse.gpus import gpu_index

    after = s.word(j + 1)
    if after in ("k", "к", "m", "м") and s.glued(j + 1):
        return True
    if _users(s, j):
        return True  # "EP 64 users", «EP 64 одновременных пользователя»: the users, for the load parser
    return after in COUNT_NOUNS or (j + 1 < s.n and gpu_index().match(s.toks, j + 1) is not None)


def _users(s: Scan, j: int) -> bool:
    """The number at j counts users or requests ("64 users", "64 concurrent users", «64 пользователя»)."""
    after = s.word(j + 1)
    return after in CONCURRENT_WORDS or (s.word(j + 2) in CONCURRENT_WORDS and after not in PARALLEL_NOUNS
                                         and not s.num(j + 1))  # "TP 2 64 users": the 64 are the users, 2 the TP


COUNT_NOUNS = frozenset({"gpu", "gpus", "гпу", "карты", "карт", "картах", "карточки", "видеокарты", "видеокарт", "x",
                         "×", "х"})


def cp_from_gpus(s: Scan) -> None:
    """Context parallelism named without a degree ("DeepSpeed Ulysses", "ring attention"): every GPU of the one
    GPU entry whose count was said takes a share of the sequence (Ulysses splits over the whole sequence-parallel
    group, usually all GPUs of the job), an assumption the answer states; with no count said it stays unset."""
    if not s.cp_no_degree or s.said.get("context_parallel") is not None or len(s.gpus) != 1:
        return
    _, entry, said = s.gpus[0]
    if said and 1 < entry["count"] <= MAX_PARALLEL:
        s.set("context_parallel", int(entry["count"]))
        s.assumed.append("context_parallel")


REPLICA_NOUNS = frozenset({"реплики", "реплик", "реплика", "репликами", "replicas", "replica", "копии", "копий",
                           "инстанса", "инстансов", "инстанс", "instances", "instance"})


def tp_from_replicas(s: Scan) -> None:
    """"vllm llama 70b на 8 h100 4 реплики": N data-parallel copies on the G GPUs named, each with G / N GPUs in
    tensor parallel (engine.serving counts the replicas as count // (TP × PP)); no TP said and N divides G."""
    if s.words.isdisjoint(REPLICA_NOUNS) or s.said.get("tensor_parallel") is not None or len(s.gpus) != 1:
        return
    count = int(s.gpus[0][1].get("count") or 1)
    for i, t in enumerate(s.toks):
        if t.text in REPLICA_NOUNS and i > 0 and s.num(i - 1) and not s.toks[i - 1].used:
            n = s.toks[i - 1].val
            if whole(n) and 1 <= n <= count and count % int(n) == 0:
                s.set("tensor_parallel", count // int(n))
                s.use(i - 1, i)
            return


def _put_par(s: Scan, field: str, v: float) -> None:
    if not whole(v) or v > MAX_PARALLEL:
        s.errors.append("parallelism out of range")
    else:
        s.set(field, int(v))
        if field == "tensor_parallel":  # «tp2 или tp4»: every degree said, a comparison when two differ
            said = s.said.setdefault("tensor_parallel_compared", [])
            if int(v) not in said:
                said.append(int(v))
