"""engine.schema is types only: importing it loads no engine logic (no import circle can start there), and every
public name of its modules is reachable as `engine.schema.X`."""

from __future__ import annotations

import subprocess
import sys

import engine.schema as schema
from engine.schema import answer, posttrain, prices, request, result, scenario, serving


def test_schema_imports_no_engine_logic() -> None:
    code = ("import sys, engine.schema; "
            "print('\\n'.join(sorted(m for m in sys.modules if m == 'engine' or m.startswith('engine.'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert "engine.schema.answer" in out
    assert [m for m in out if m != "engine" and not m.startswith("engine.schema")] == []


def test_every_public_type_is_re_exported() -> None:
    for module in (answer, posttrain, prices, request, result, scenario, serving):
        for name, value in vars(module).items():
            if isinstance(value, type) and value.__module__ == module.__name__:
                exported = [x for x in schema.__all__ if getattr(schema, x) is value]
                assert exported, f"{module.__name__}.{name} is not in engine.schema.__all__"


KINDS = {
    "training": "70B QLoRA на H100?",
    "posttrain": "DPO 8B на 2 4090",
    "serving": "vLLM 70B на 2 H100 для 32 пользователей",
    "market": "how much is an H100 per hour?",
    "error": "hello",
}


def test_each_kind_of_question_gets_its_kind_of_answer_and_it_reads_back_as_that_kind() -> None:
    from pydantic import TypeAdapter

    from engine.answer import answer as answer_of
    from engine.parse import parse

    adapter: TypeAdapter[schema.Answer] = TypeAdapter(schema.Answer)
    for kind, question in KINDS.items():
        a = answer_of(parse(question))
        assert a.kind == kind, question
        back = adapter.validate_json(adapter.dump_json(a))
        assert type(back) is type(a) and back == a
    assert isinstance(answer_of(parse(KINDS["posttrain"])), schema.PlannedAnswer)
    assert not isinstance(answer_of(parse(KINDS["serving"])), schema.PlannedAnswer)


def test_the_json_views_print_each_kind_of_change_in_its_contract_shape() -> None:
    """One Change type carries every kind's figures; each JSON view prints only its kind's (the contract's shapes)."""
    from engine.configs.bridge import check_estimate
    from engine.contract import estimate_json
    from engine.parse import parse
    from engine.schema import GpuRef, ModelRef, Request

    lora = Request(model=ModelRef(name="Llama-3.1-8B"), method="lora", seq_len=4096, batch_size=2,
                   gpus=[GpuRef(name="RTX 4090")])
    _answer, changes, _error = check_estimate(lora)
    assert changes and all(set(c) == {"key", "params", "saves_gb", "fits", "total_gb", "tight", "parts"}
                           for c in changes)
    served = estimate_json(parse("vLLM 70B на 2 H100 для 32 пользователей"))
    assert served["serving"]["changes"]
    assert all(set(c) == {"key", "params", "effect"} for c in served["serving"]["changes"])
    shown = [x for x in (served["serving"]["arrangement"], *served["serving"]["alternatives"]) if x]
    assert shown and all({"gpu", "count", "tensor_parallel"} <= set(x) and "memory_gb" not in x for x in shown)
    assert all(isinstance(x, str) and "=" in x for x in served["assumptions"])
    dpo = estimate_json(parse("DPO 8B на 2 4090"))
    assert dpo["posttrain"]["changes"]
    assert all(set(c) == {"key", "params", "per_gpu_total", "fits", "tight"} for c in dpo["posttrain"]["changes"])
    assert all(isinstance(x, str) and "=" in x for x in dpo["posttrain"]["assumptions"])
