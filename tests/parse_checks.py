"""The shared scorer's comparison of a parsed Request with an expected structure (tools/eval_parse.py's rules),
for the tests of tests/data/questions_own.jsonl and tests/parse_v2_questions.jsonl."""

from __future__ import annotations

import re
from typing import Any

import pytest

from engine.schema import Request


def norm_gpu(name: str | None) -> str | None:
    """As shared/tools/eval_parse.py names GPUs ("H100 SXM" → "h100")."""
    if not name:
        return None
    s = name.lower()
    s = re.sub(r"\b\d+\s*(gb|g|гб)\b", " ", s)
    s = re.sub(r"nvidia|geforce|tesla|radeon|instinct|amd|quadro", " ", s)
    s = re.sub(r"\b(sxm\d?|pcie|nvl|hgx)\b", " ", s)
    s = re.sub(r"[^a-z0-9]", "", s)
    return re.sub(r"^rtx", "", s)


def check(r: Request, expect: dict[str, Any], label: str) -> None:
    got = r.model_dump()
    for key, want in expect.items():
        if key == "params_b":
            val = r.model.params_b if r.model else None
            assert (val is None) == (want is None), (label, key, val)
            if want is not None:
                assert val == pytest.approx(want, rel=0.05), (label, key, val)
        elif key == "gpus":
            assert len(r.gpus) == len(want), (label, r.gpus)
            for e, g in zip(want, r.gpus, strict=True):
                if "name" in e:
                    assert norm_gpu(g.name) == e["name"], (label, g)
                if "count" in e:
                    assert g.count == e["count"], (label, g)
                if "memory_gb" in e:
                    assert g.memory_gb == pytest.approx(e["memory_gb"], rel=0.1), (label, g)
        elif key == "budget" and want is not None:
            assert got["budget"] is not None, (label, key)
            assert got["budget"]["amount"] == pytest.approx(want["amount"]), (label, got["budget"])
            assert got["budget"]["currency"] == want["currency"], (label, got["budget"])
        else:
            assert got[key] == want, (label, key, got[key])
