"""Load on one bot replica in webhook mode: many simulated users post updates to its webhook on loopback.

The benchmark process runs a small fast fake Bot API server (it answers sendMessage & co. at once and
notes, per chat, when the answer arrived) and the load generator; the replica is a real subprocess,
`python -m bot run` with BOT_MODE=webhook, so its CPU and memory are read apart from ours (/proc).
Every simulated user has a private chat and asks at most one question a second (the bot's throttle
allows 1/s with bursts of 5), so nobody is throttled; a throttle notice or an apology would be
counted apart. Phases: warm-up (not reported), distinct questions (generated from templates, Russian
and English), popular questions repeated, then one question at a time (handling without queueing).
Figures, not a test: it never fails a build. `--profile PATH` runs the replica under cProfile for the
measured phases only and prints where its time goes.

Usage: python bench/load_bench.py [--duration 10 | --count N] [--concurrency 32] [--users 1000]
       [--mix both|distinct|repeat] [--repeat-mix] [--idle-latency 3] [--profile /tmp/replica.prof]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import heapq
import itertools
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
from _load_api import TOKEN, FastBotAPI, Question
from _load_profile import print_profile, replica_profiled
from _load_questions import QuestionMix

SECRET = "load-bench-secret"
PER_USER_INTERVAL_S = 1.0  # the bot's throttle: 1 question a second per user (bursts of 5)
TARGET_QPS = 300.0
CLK_TCK = os.sysconf("SC_CLK_TCK")
NCPU = os.cpu_count() or 1

# ---- /proc ---------------------------------------------------------------------------------------------------


def cpu_seconds(pid: int | str = "self") -> float:
    """utime + stime of a process (all its threads), in seconds."""
    raw = Path(f"/proc/{pid}/stat").read_text()
    fields = raw[raw.rindex(")") + 2:].split()  # after "pid (comm) "; field 3 (state) is fields[0]
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def memory_kib(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (peak RSS) of a process, in KiB."""
    out: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0])
    return out


def system_busy() -> tuple[float, float]:
    """(busy, total) jiffies of the whole machine from /proc/stat."""
    parts = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = parts[3] + (parts[4] if len(parts) > 4 else 0)
    return float(sum(parts) - idle), float(sum(parts))



# ---- the load -------------------------------------------------------------------------------------------------


class Users:
    """Simulated users, each asking at most once per PER_USER_INTERVAL_S; the one free longest goes next."""

    def __init__(self, count: int, first_id: int = 10_000_000) -> None:
        now = time.perf_counter()
        self.heap = [(now, first_id + i, "ru" if i % 2 else "en") for i in range(count)]
        heapq.heapify(self.heap)
        self.waited = 0.0  # seconds workers slept waiting for a user to become free (pacing-bound when large)

    async def acquire(self) -> tuple[int, str]:
        while not self.heap:  # more workers than users
            await asyncio.sleep(0.01)
        free_at, uid, lang = heapq.heappop(self.heap)
        delay = free_at - time.perf_counter()
        if delay > 0:
            self.waited += delay
            await asyncio.sleep(delay)
        return uid, lang

    def release(self, uid: int, lang: str, sent: float) -> None:
        heapq.heappush(self.heap, (sent + PER_USER_INTERVAL_S, uid, lang))


@dataclass
class Phase:
    name: str
    start: float = 0.0
    end: float = 0.0
    questions: list[Question] = field(default_factory=list)
    replica_cpu: float = 0.0
    bench_cpu: float = 0.0
    system_busy: float = 0.0
    rss_after_kib: int = 0
    pacing_wait_s: float = 0.0


class Load:
    def __init__(self, webhook: str, users: Users, mix: QuestionMix) -> None:
        self.webhook = webhook
        self.users = users
        self.mix = mix
        self.inflight: dict[int, Question] = {}
        self.update_ids = itertools.count(1)
        self.message_ids = itertools.count(1)
        self.errors = 0

    def update(self, uid: int, lang: str, text: str) -> bytes:
        who = {"id": uid, "is_bot": False, "first_name": "U", "language_code": lang}
        message = {"message_id": next(self.message_ids), "date": int(time.time()),
                   "chat": {"id": uid, "type": "private", "first_name": "U"}, "from": who, "text": text}
        return json.dumps({"update_id": next(self.update_ids), "message": message}, ensure_ascii=False).encode()

    async def run(self, session: aiohttp.ClientSession, phase: Phase, repeat: bool, until: float,
                  count: int | None, concurrency: int) -> None:
        headers = {"Content-Type": "application/json", "X-Telegram-Bot-Api-Secret-Token": SECRET}

        def finished() -> bool:
            if time.perf_counter() >= until:
                return True
            return count is not None and len(phase.questions) >= count

        async def worker() -> None:
            while not finished():
                uid, lang = await self.users.acquire()
                if finished():
                    self.users.release(uid, lang, time.perf_counter() - PER_USER_INTERVAL_S)
                    return
                text, text_lang = self.mix.repeat() if repeat else self.mix.distinct()
                body = self.update(uid, text_lang if repeat else lang, text)
                q = Question(phase.name, text, time.perf_counter())
                self.inflight[uid] = q
                try:
                    async with session.post(self.webhook, data=body, headers=headers) as resp:
                        await resp.read()
                        q.status = resp.status
                except aiohttp.ClientError:
                    self.errors += 1
                q.done = time.perf_counter()
                del self.inflight[uid]
                phase.questions.append(q)
                self.users.release(uid, lang, q.sent)

        await asyncio.gather(*(worker() for _ in range(concurrency)))


# ---- the replica ----------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_replica(api_url: str, port: int, workdir: Path, log_level: str,
                  profile: str | None) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BOT_", "HF_"))}
    env.update({
        "BOT_TOKEN": TOKEN, "BOT_MODE": "webhook", "BOT_API_BASE_URL": api_url,
        "BOT_WEBHOOK_URL": f"http://127.0.0.1:{port}/webhook", "BOT_WEBHOOK_SECRET": SECRET,
        "BOT_WEBHOOK_HOST": "127.0.0.1", "BOT_WEBHOOK_PORT": str(port),
        "BOT_STORAGE_URL": f"sqlite:///{workdir / 'bench.db'}", "BOT_LOG_LEVEL": log_level,
        "BOT_HEARTBEAT_FILE": str(workdir / "heartbeat"), "HF_ENDPOINT": api_url,  # never the network
    })
    cmd = [sys.executable, "-m", "bot", "run"]
    if profile:  # this file as the replica's launcher: cProfile on between SIGUSR1 and SIGUSR2 (the measured phases)
        cmd = [sys.executable, str(Path(__file__).resolve()), "--replica-profiled", profile]
    log = (workdir / "replica.log").open("wb")
    # cwd: the temporary folder, so that no .env of the checkout leaks in
    return subprocess.Popen(cmd, env=env, cwd=workdir, stdout=log, stderr=subprocess.STDOUT)


async def wait_healthy(session: aiohttp.ClientSession, base: str, proc: subprocess.Popen[bytes],
                       timeout: float = 60.0) -> float:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"the replica exited with {proc.returncode}")
        with contextlib.suppress(aiohttp.ClientError):
            async with session.get(base + "/healthz") as resp:
                if resp.status == 200:
                    return time.perf_counter() - t0
        await asyncio.sleep(0.05)
    raise RuntimeError("the replica did not become healthy")


async def replica_metrics(session: aiohttp.ClientSession, base: str) -> dict[str, float]:
    """The replica's Prometheus counters, labels summed away: {"updates_total": 123.0, ...}."""
    out: dict[str, float] = {}
    with contextlib.suppress(aiohttp.ClientError, ValueError):
        async with session.get(base + "/metrics") as resp:
            for line in (await resp.text()).splitlines():
                if line and not line.startswith("#"):
                    key, _, value = line.rpartition(" ")
                    name = key.split("{", 1)[0].removeprefix("gpu_advisor_")
                    out[name] = out.get(name, 0.0) + float(value)
    return out


def stop_replica(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# ---- figures --------------------------------------------------------------------------------------------------


def quantiles_ms(values: list[float]) -> str:
    if not values:
        return "—"
    s = sorted(values)

    def q(p: float) -> float:
        return s[min(len(s) - 1, int(p * len(s)))] * 1e3

    return f"{q(0.50):.1f} / {q(0.95):.1f} / {q(0.99):.1f}"


def cold_start_ask(runs: int = 3) -> list[float]:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "bot", "ask", "70B QLoRA на H100?"], capture_output=True, check=False)
        times.append(time.perf_counter() - t0)
    return times


def mix_sanity(samples: int = 300) -> str:
    """How much of each mix the engine understands (run before the load, in this process)."""
    from engine.parse import parse

    mix = QuestionMix(seed=99)
    out = []
    for name, make in (("distinct", mix.distinct), ("repeat", mix.repeat)):
        texts = [make()[0] for _ in range(samples)]
        ok = sum(1 for text in texts if (r := parse(text)).model is not None and r.error is None)
        out.append(f"{name}: {len(set(texts))}/{samples} distinct, {ok * 100 // samples}% name a model")
    return "; ".join(out)


def print_table(phases: list[Phase], concurrency: int, users: int) -> None:
    cap = users / PER_USER_INTERVAL_S
    print()
    print(f"{'phase':<9} {'asked':>6} {'answers/s':>9} {'estim.':>6} {'other':>5} {'distinct':>8}  "
          f"{'webhook p50/p95/p99 ms':>22}  {'answer p50/p95/p99 ms':>22}  {'CPU ms/q':>8} {'replica':>7} "
          f"{'bench':>6} {'rest':>5}")
    for p in phases:
        wall = p.end - p.start
        answered = [q for q in p.questions if q.answered_at is not None and q.kind != "other"
                    and p.start <= q.answered_at < p.end]
        others = sum(1 for q in p.questions if q.kind == "other")
        estimates = sum(1 for q in answered if q.kind == "estimate")
        handling = [q.done - q.sent for q in p.questions if q.done is not None and q.status == 200]
        latency = [q.answered_at - q.sent for q in answered if q.answered_at is not None]
        rate = len(answered) / wall if wall > 0 else 0.0
        per_q = p.replica_cpu / len(answered) * 1e3 if answered else float("nan")
        distinct = len({q.text for q in p.questions})
        print(f"{p.name:<9} {len(p.questions):>6} {rate:>9.1f} {estimates * 100 // max(1, len(answered)):>5}% "
              f"{others:>5} {distinct:>8}  {quantiles_ms(handling):>22}  {quantiles_ms(latency):>22}  "
              f"{per_q:>8.2f} {p.replica_cpu / wall * 100:>6.0f}% {p.bench_cpu / wall * 100:>5.0f}% "
              f"{max(0.0, p.system_busy * NCPU - (p.replica_cpu + p.bench_cpu) / wall) * 100:>4.0f}%")
    print("webhook: the POST round trip (= handling: the 200 comes after it); answer: POST sent -> its sendMessage at "
          "the fake API;\nreplica / bench / rest: CPU share of one core taken by the replica, by this process (load "
          "generator + fake API), by the rest of the machine (kernel networking, other processes);\nestim.: answers "
          "with an estimate; other: throttle notices and apologies; 1 in flt: one question at a time, no queueing")
    for p in phases:
        if p.name not in ("distinct", "repeat"):
            continue
        wall = p.end - p.start
        n_answered = sum(1 for q in p.questions if q.answered_at is not None and q.kind != "other"
                         and p.start <= q.answered_at < p.end)
        rate = n_answered / wall if wall > 0 else 0.0
        verdict = "meets" if rate >= TARGET_QPS else "MISSES"
        why = []
        if p.bench_cpu / wall > 0.85:
            why.append("the load generator is near a full core: IT may be the bottleneck, the figure is a floor")
        rest = p.system_busy * NCPU - (p.replica_cpu + p.bench_cpu) / wall
        if rest > 0.25:
            why.append(f"the rest of the machine took {rest * 100:.0f}% of a core (other processes?): figures are low")
        if p.replica_cpu / wall > 0.85:
            why.append("the replica is CPU-bound (one event loop)")
        if rate > 0.85 * cap or p.pacing_wait_s > 0.25 * concurrency * wall:
            why.append(f"the users' pacing caps the load at ~{cap:.0f}/s: raise --users")
        statuses = {q.status for q in p.questions if q.status != 200}
        if statuses:
            why.append(f"webhook statuses other than 200: {sorted(statuses)}")
        print(f"{p.name}: {rate:.0f} answered questions/s {verdict} the target of {TARGET_QPS:.0f}/s per replica"
              + (f" ({'; '.join(why)})" if why else ""))


# ---- main -----------------------------------------------------------------------------------------------------


async def run(args: argparse.Namespace) -> int:
    workdir = Path(tempfile.mkdtemp(prefix="gpu-advisor-load-"))
    users = Users(args.users)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    load = Load(base + "/webhook", users, QuestionMix(seed=args.seed))
    api = FastBotAPI(load.inflight)
    api_url = await api.start()
    proc = start_replica(api_url, port, workdir, args.log_level, args.profile)
    connector = aiohttp.TCPConnector(limit=args.concurrency + 4, force_close=False)
    phases: list[Phase] = []
    try:
        async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=30)) as session:
            started = await wait_healthy(session, base, proc)
            rss_start = memory_kib(proc.pid)["VmRSS"]
            print(f"replica pid {proc.pid}: healthy after {started:.2f} s, RSS {rss_start / 1024:.1f} MiB; "
                  f"{args.users} users, {args.concurrency} in flight")
            plan: list[tuple[str, bool, float, int]] = [("warm-up", False, args.warmup, args.concurrency)]
            if args.mix in ("both", "distinct"):
                plan.append(("distinct", False, args.duration, args.concurrency))
            if args.mix in ("both", "repeat"):
                plan.append(("repeat", True, args.duration, args.concurrency))
            if args.idle_latency > 0:  # handling time without queueing: one question in flight
                plan.append(("1 in flt", False, args.idle_latency, 1))
            rss_warm = 0
            for name, repeat, seconds, concurrency in plan:
                phase = Phase(name)
                if args.profile and name != "warm-up" and not phases:
                    proc.send_signal(signal.SIGUSR1)
                cpu0, self0, sys0 = cpu_seconds(proc.pid), cpu_seconds(), system_busy()
                wait0 = users.waited
                phase.start = time.perf_counter()
                count = args.count if name in ("distinct", "repeat") else None
                until = phase.start + (seconds if count is None else 3600.0)
                await load.run(session, phase, repeat, until, count, concurrency)
                phase.end = time.perf_counter()
                cpu1, self1, sys1 = cpu_seconds(proc.pid), cpu_seconds(), system_busy()
                phase.replica_cpu, phase.bench_cpu = cpu1 - cpu0, self1 - self0
                phase.system_busy = (sys1[0] - sys0[0]) / max(1.0, sys1[1] - sys0[1])
                phase.pacing_wait_s = users.waited - wait0
                phase.rss_after_kib = memory_kib(proc.pid)["VmRSS"]
                if name == "warm-up":
                    rss_warm = phase.rss_after_kib
                else:
                    phases.append(phase)
            if args.profile:
                proc.send_signal(signal.SIGUSR2)
                await asyncio.sleep(1.0)  # the dump
            metrics = await replica_metrics(session, base)
            mem = memory_kib(proc.pid)
    finally:
        stop_replica(proc)
        await api.stop()
        if not args.profile:  # with a profile the replica's log is kept next to nothing else
            shutil.rmtree(workdir, ignore_errors=True)
    print_table(phases, args.concurrency, args.users)
    print(f"replica RSS: {rss_start / 1024:.1f} MiB at start, {rss_warm / 1024:.1f} after warm-up, "
          + ", ".join(f"{p.rss_after_kib / 1024:.1f} after {p.name}" for p in phases)
          + f"; peak (VmHWM) {mem['VmHWM'] / 1024:.1f} MiB")
    print(f"replica counters: {int(metrics.get('updates_total', -1))} updates, "
          f"{int(metrics.get('errors_total', -1))} errors, {int(metrics.get('throttled_total', -1))} throttled, "
          f"{int(metrics.get('api_retries_total', -1))} API retries; fake Bot API: {api.calls.get('sendMessage', 0)} "
          f"sendMessage, {api.stray} stray; client errors {load.errors}")
    if args.profile:
        print_profile(args.profile, args.profile_top, sum(len(p.questions) for p in phases))
        print(f"replica log: {workdir / 'replica.log'}")
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--duration", type=float, default=10.0, help="seconds of each measured phase (default 10)")
    ap.add_argument("--count", type=int, default=None, help="questions per measured phase instead of --duration")
    ap.add_argument("--warmup", type=float, default=4.0, help="seconds of warm-up, not reported (default 4)")
    ap.add_argument("--concurrency", type=int, default=32, help="webhook posts in flight (default 32)")
    ap.add_argument("--idle-latency", type=float, default=3.0,
                    help="seconds of a last phase with one question in flight: handling time without queueing "
                         "(default 3; 0 skips it)")
    ap.add_argument("--users", type=int, default=1000,
                    help="simulated users, each at most 1 question/s: caps the load at USERS/s (default 1000)")
    ap.add_argument("--mix", choices=("both", "distinct", "repeat"), default="both",
                    help="distinct generated questions, popular ones repeated, or both phases (default)")
    ap.add_argument("--repeat-mix", action="store_const", dest="mix", const="repeat",
                    help="only the popular questions repeated (= --mix repeat)")
    ap.add_argument("--log-level", default="INFO", help="the replica's BOT_LOG_LEVEL (default INFO, as deployed)")
    ap.add_argument("--profile", default=None, metavar="PATH",
                    help="profile the replica (cProfile, measured phases only) into PATH, print where time goes")
    ap.add_argument("--profile-top", type=int, default=40, help="functions printed from the profile (default 40)")
    ap.add_argument("--no-cold-start", action="store_true", help="skip the cold start of `gpu-advisor ask`")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--replica-profiled", default=None, help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.replica_profiled:
        return replica_profiled(args.replica_profiled)
    if not args.no_cold_start:
        times = cold_start_ask()
        print(f"cold start of `ask`: {min(times):.2f} s best, {statistics.median(times):.2f} s median of "
              f"{len(times)} (target <= 0.8 s)")
    print("question mix:", mix_sanity())
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
