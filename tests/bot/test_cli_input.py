"""The command line reads hostile input safely: arguments that are not UTF-8, undecodable lines inside a
batch, lines far over the limit (never held whole in memory), deeply nested JSON and giant integers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from bot.cli_input import JsonTooHostile, loads_limited, read_lines

ROOT = Path(__file__).resolve().parents[2]


def run(args: list[bytes], stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable.encode(), b"-m", b"bot", *args], input=stdin, capture_output=True,
                          timeout=120, env=env)


def test_an_argument_that_is_not_utf8_is_one_error_line() -> None:
    cases = [([b"parse", b"70B \xff\xfe"], 2), ([b"ask", b"--price", b"H\xff100=2", b"70B qlora h100"], 3),
             ([b"ask", b"70B qlora on Z\xff9000"], 2)]
    for args, position in cases:
        p = run(args)
        assert p.returncode == 2, args
        assert p.stderr.decode().strip().splitlines() == [f"gpu-advisor: argument {position} is not valid UTF-8"]
        assert not p.stdout


def test_undecodable_and_overlong_lines_do_not_empty_the_batch() -> None:
    lines = [b"70B qlora h100", b"\xff\xfe\xc3 bad bytes", b"x" * 3_000_000, b"8B lora 4090"]
    for command in ([b"parse"], [b"estimate"], [b"plan"], [b"ask"]):
        p = run(command, stdin=b"\n".join(lines) + b"\n")
        assert p.returncode == 0 and b"Traceback" not in p.stderr, command
        out = [json.loads(line) for line in p.stdout.decode("utf-8").splitlines()]
        assert len(out) == len(lines), command
        too_long = out[2].get("error") or out[2].get("answer")
        assert too_long in ("input line too long", "Input line too long."), command


def test_json_requests_that_are_too_deep_or_too_long_say_so() -> None:
    lines = ["[" * 100_000 + "]" * 100_000, '{"model": ' + "[" * 200 + "]" * 200 + "}",
             '{"model": {"params_b": ' + "9" * 5000 + "}}", '{"model": {"name": "\\udcff"}, "gpus": ["\\udcffH100"]}',
             json.dumps({"model": {"params_b": 7}})]
    p = run([b"estimate", b"--request"], stdin="\n".join(lines).encode() + b"\n")
    out = [json.loads(line) for line in p.stdout.decode("utf-8").splitlines()]
    assert len(out) == len(lines) and b"Traceback" not in p.stderr
    assert out[0]["error"] == out[1]["error"] == "invalid JSON: nested more than 64 levels deep"
    assert out[2]["error"] == "invalid JSON: a number with 5000 digits (at most 30)"
    assert "error" in out[3] and out[4]["per_gpu"]["total"] > 0


def test_a_long_line_is_read_in_chunks_not_whole(tmp_path: Path) -> None:
    """The child's peak memory: a 64 MB line must not cost twice that (it cost ~2 bytes a byte before)."""
    big = tmp_path / "big.txt"
    with big.open("wb") as f:
        f.write(b"70B " + b"x" * (64 << 20) + b"\n8B lora\n")
    probe = ("import resource, subprocess, sys\n"  # a fresh parent: RUSAGE_CHILDREN is this child's alone
             f"p = subprocess.run([sys.executable, '-m', 'bot', 'parse'], stdin=open({str(big)!r}, 'rb'), "
             "capture_output=True)\n"
             "print(len(p.stdout.splitlines()), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    lines, peak_kb = map(int, p.stdout.split())
    assert lines == 2
    assert peak_kb < 64 * 1024  # the line alone is 64 MB


def test_read_lines_and_loads_limited_in_process() -> None:
    import io

    stream = io.StringIO("short\r\n" + "y" * 50 + "\nlast")
    assert list(read_lines(stream, 10)) == ["short", None, "last"]
    assert loads_limited('{"a": [1, 2]}') == {"a": [1, 2]}
    for text in ("[" * 65 + "]" * 65, "1" * 31):
        try:
            loads_limited(text)
        except JsonTooHostile:
            continue
        raise AssertionError(text)


def test_a_reader_that_leaves_early_gets_no_traceback() -> None:
    # "gpu-advisor plan < questions | head -1": the pipe closes while answers are still being written
    lines = b"70B QLoRA on H100?\n" * 400
    p = subprocess.Popen([sys.executable, "-m", "bot", "plan"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    assert p.stdin is not None and p.stdout is not None and p.stderr is not None
    p.stdin.write(lines)
    p.stdin.close()
    assert p.stdout.readline().startswith(b"{")
    p.stdout.close()
    err = p.stderr.read()
    assert p.wait(timeout=120) == 141
    assert b"Traceback" not in err and b"BrokenPipe" not in err
