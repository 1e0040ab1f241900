"""Writers and readers give what they gave when tests/data/configs_golden.json was written (tests/
configs_golden_cases.py says how to rewrite it when a change of output is meant)."""

from __future__ import annotations

import json

import configs_golden_cases as cases


def test_writers_and_readers_match_the_golden_byte_for_byte():
    got = cases.build()
    want = json.loads(cases.GOLDEN.read_text(encoding="utf-8"))
    assert sorted(got) == sorted(want)
    changed = [key for key in want if cases.dump({key: got[key]}) != cases.dump({key: want[key]})]
    assert not changed, changed[:10]
    assert cases.dump(got) == cases.GOLDEN.read_text(encoding="utf-8")


def test_the_golden_covers_every_writer_and_reads_real_requests():
    want = json.loads(cases.GOLDEN.read_text(encoding="utf-8"))
    written = {key.split("/")[2] for key in want if key.startswith("write/")}
    assert written == set(cases.TARGETS)
    assert len(cases.JOBS) >= 30
    read = [v for k, v in want.items() if k.startswith("read")]
    assert sum("request" in v for v in read) > 0.8 * len(read)
    assert any(v.get("error") for v in read) and any(v.get("secrets") for v in read)
