"""The checks of scripts/wheel_smoke.sh: the installed `gpu-advisor` answers as the checkout does and the bot starts.

- the wheel carries the compiled catalogs, the framework profiles and the templates, and every TOML data file's
  JSON copy for its bytes (engine/datafiles.py), which the installed `ask` reads instead of parsing TOML;
- `--version` is the pyproject's version;
- `ask` in Russian and English, a serving and a post-training question: the same bytes as the checkout's CLI, and
  no "something went wrong";
- `config --framework axolotl` and `check` of a command line;
- `gpu-advisor run` in webhook mode against the fake Bot API (tests/fake_botapi.py) that lacks setMyCommands:
  /healthz answers, /readyz turns 200 once the webhook is registered, SIGTERM stops it with exit 0; in polling
  mode it answers a message.
Run from a folder outside the checkout; exits 1 with what failed.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import signal
import socket
import subprocess
import sys
import tomllib
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

QUESTIONS = [
    ("ru", "70B QLoRA на H100?"),
    ("en", "LoRA Llama 3.1 8B on a 4090, 8k context"),
    ("en", "serve Llama 3.1 70B on H100 for 32 users"),
    ("en", "DPO Llama 3.1 8B LoRA on A100"),
]
IN_WHEEL = ("bot/locales/ru/LC_MESSAGES/messages.mo", "bot/locales/en/LC_MESSAGES/messages.mo",
            "engine/frameworks/trl.toml", "engine/catalog/gpus.toml", "bot/views/templates/answer.html.j2",
            "engine/configs/options/vllm.txt")
STARTUP_S = 120.0  # how long a bot start may take on a loaded machine before the check gives up


def fail(message: str) -> None:
    sys.stderr.write(f"wheel smoke: FAILED: {message}\n")
    sys.exit(1)


def run(argv: list[str], **kwargs: object) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, **kwargs)  # type: ignore[call-overload]
    if done.returncode != 0:
        fail(f"{' '.join(argv)} exited {done.returncode}: {done.stderr[-500:]}")
    return str(done.stdout)


def check_data_copies(wheel: zipfile.ZipFile) -> None:
    """Each .toml of the wheel has __pycache__/<name>.<sha256 of its bytes, 16 hex>.json (engine.datafiles)."""
    names = set(wheel.namelist())
    tomls = [n for n in names if n.endswith(".toml") and "/__pycache__/" not in n]
    if len(tomls) < 20:
        fail(f"the wheel has only {len(tomls)} TOML data files")
    for name in tomls:
        folder, _, file = name.rpartition("/")
        digest = hashlib.sha256(wheel.read(name)).hexdigest()[:16]
        if f"{folder}/__pycache__/{file}.{digest}.json" not in names:
            fail(f"the wheel lacks the JSON copy of {name}")


def check_no_toml_parsed(installed: str) -> None:
    """The installed `ask` reads the wheel's JSON copies: tomllib is never imported."""
    python = str(Path(installed).with_name("python"))
    probe = ("import contextlib, io, sys\nfrom bot.cli import main\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n    main(['ask', '70B QLoRA на H100?'])\n"
             "print('tomllib' in sys.modules)")
    if run([python, "-B", "-c", probe]).strip() != "False":  # -B: no copy written now; the wheel's are read
        fail("the installed ask parsed TOML: the wheel's JSON copies were not read")


def check_cli(installed: str, checkout: Path) -> None:
    version = tomllib.loads((checkout / "pyproject.toml").read_text())["project"]["version"]
    if run([installed, "--version"]).strip() != f"gpu-advisor {version}":
        fail(f"--version is not {version}")
    reference = [str(checkout / ".venv" / "bin" / "python"), "-m", "bot"]
    for lang, question in QUESTIONS:
        got = run([installed, "ask", "--lang", lang, question])
        if "something went wrong" in got or not got.strip():
            fail(f"ask {question!r}: {got[:200]!r}")
        want = run([*reference, "ask", "--lang", lang, question], cwd=checkout)
        if got != want:
            fail(f"ask {question!r} differs from the checkout's answer")
    config = run([installed, "config", "--framework", "axolotl", "70B QLoRA on H100"])
    if "==>" not in config or config.startswith("error"):
        fail(f"config: {config[:200]!r}")
    Path("serve.sh").write_text("vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192\n")
    check = run([installed, "check", "serve.sh"])
    if check.startswith("error") or "internal error" in check:
        fail(f"check: {check[:200]!r}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http_status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


async def wait_until(what: str, condition: object, proc: subprocess.Popen[bytes], log: Path) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + STARTUP_S
    while loop.time() < deadline:
        if proc.poll() is not None:
            fail(f"{what}: the bot exited {proc.returncode}: {log.read_text(errors='replace')[-800:]}")
        if await asyncio.to_thread(condition):  # type: ignore[arg-type]
            return
        await asyncio.sleep(0.1)
    fail(f"{what}: not within {STARTUP_S:.0f} s: {log.read_text(errors='replace')[-800:]}")


async def stop(proc: subprocess.Popen[bytes], api: object, what: str) -> None:
    proc.send_signal(signal.SIGTERM)
    api.new_update.set()  # type: ignore[attr-defined]  # release a long poll
    for _ in range(300):
        if proc.poll() is not None:
            break
        await asyncio.sleep(0.1)
    else:
        proc.kill()
        fail(f"{what}: did not stop on SIGTERM")
    if proc.returncode != 0:
        fail(f"{what}: exit {proc.returncode} after SIGTERM")


async def check_bot(installed: str, checkout: Path) -> None:
    sys.path.insert(0, str(checkout / "tests"))
    from fake_botapi import TOKEN, FakeBotAPI, message

    here = Path.cwd()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("BOT_", "HF_", "PYTHON"))}
    for mode in ("webhook", "polling"):
        api = FakeBotAPI()
        api.lacking = {"setMyCommands", "setMyDescription", "setMyShortDescription"}  # a third-party emulator
        await api.start()
        port = free_port()
        env = {**base, "BOT_TOKEN": TOKEN, "BOT_API_BASE_URL": api.url, "BOT_MODE": mode,
               "BOT_STORAGE_URL": f"sqlite:///{here / (mode + '.db')}", "BOT_HEARTBEAT_FILE": str(here / "beat"),
               "HF_ENDPOINT": "http://127.0.0.1:9", "BOT_WEBHOOK_URL": "https://bot.example/tg/hook",
               "BOT_WEBHOOK_SECRET": "s3cret_token", "BOT_WEBHOOK_HOST": "127.0.0.1", "BOT_WEBHOOK_PORT": str(port)}
        log = here / f"{mode}.log"
        with log.open("wb") as err:
            proc = subprocess.Popen([installed, "run"], env=env, stdout=subprocess.DEVNULL, stderr=err)
            try:
                if mode == "webhook":
                    base_url = f"http://127.0.0.1:{port}"
                    await wait_until("/healthz", lambda u=base_url: http_status(u + "/healthz") == 200, proc, log)
                    await wait_until("/readyz", lambda u=base_url: http_status(u + "/readyz") == 200, proc, log)
                    if api.webhook_url != "https://bot.example/tg/hook":
                        fail("ready, but the webhook is not registered")
                else:
                    api.push(message("70B QLoRA на H100?", user_id=5001))
                    await wait_until("a polling answer", lambda a=api: bool(a.of("sendMessage")), proc, log)
            finally:
                if proc.poll() is None:
                    await stop(proc, api, mode)
        await api.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--installed", required=True, help="the installed gpu-advisor script")
    ap.add_argument("--checkout", required=True, type=Path)
    ap.add_argument("--wheel", required=True, type=Path)
    args = ap.parse_args()
    if Path.cwd().resolve().is_relative_to(args.checkout.resolve()):
        fail("run it from a folder outside the checkout")
    names = set(zipfile.ZipFile(args.wheel).namelist())
    missing = [n for n in IN_WHEEL if n not in names]
    if missing:
        fail(f"the wheel lacks {missing}")
    check_data_copies(zipfile.ZipFile(args.wheel))
    check_no_toml_parsed(args.installed)
    check_cli(args.installed, args.checkout)
    asyncio.run(check_bot(args.installed, args.checkout))
    print("wheel smoke: ok (the JSON copies read, CLI answers as the checkout's, webhook /healthz and /readyz, "
          "polling answers)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
