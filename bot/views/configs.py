"""Configs in and out, in words: the caption of a config document, the header of a check, the answers to a file
that cannot be read. Secrets never reach these texts: the readers give key names only (values redacted), and
every name is redacted once more and escaped here."""

from __future__ import annotations

import html
from typing import Any

from bot.views.formats import num
from bot.views.keyboards import TARGET_LABELS
from bot.views.messages import t, tn
from engine.configs.safety import redact

CAPTION_LIMIT = 1024  # Telegram's caption limit
MAX_LISTED = 25  # keys not understood, listed one by one; the rest are counted
SECRET_MARK = " (secret, not read)"  # how engine.configs.readers list a secret key

FORMATS = {"axolotl": "Axolotl YAML", "llama-factory": "LLaMA-Factory YAML", "deepspeed": "DeepSpeed JSON",
           "accelerate": "accelerate config", "torchtune": "torchtune config", "hf-args": "TrainingArguments"}


def error_text(lang: str, key: str) -> str:
    """Why a file or a pasted config could not be read (engine.configs.safety.ERROR_KEYS and the download)."""
    texts = {
        "empty": t(lang, "That file is empty."),
        "too_large": t(lang, "That file is over 256 KB: a training or serving config is a few kilobytes. "
                             "Send the config itself (YAML, JSON, a launch command or the training script)."),
        "binary": t(lang, "That is a binary file, not a text config: send the YAML, JSON or script as text."),
        "yaml_bomb": t(lang, "That YAML expands into far too many values (anchors and aliases repeated): "
                             "I do not read it. Send the config without nested aliases."),
        "too_deep": t(lang, "That config is nested too deeply to be a real one: I do not read it."),
        "huge_number": t(lang, "That config holds a number far too big to be a setting: I do not read it."),
        "invalid_yaml": t(lang, "That YAML does not parse: check the indentation and the colons."),
        "invalid_json": t(lang, "That JSON does not parse: check the commas and the quotes."),
        "invalid_python": t(lang, "That Python script does not parse, so I cannot read its settings."),
        "invalid_values": t(lang, "Some values in that config are out of range, so I cannot estimate it."),
        "not_a_mapping": t(lang, "That file is not a config: its top level is not a set of key: value settings."),
        "unknown_format": t(lang, "I do not recognise that framework. I read Axolotl and LLaMA-Factory YAML, "
                                  "TRL/Transformers arguments (YAML or JSON), DeepSpeed JSON, accelerate and "
                                  "torchtune configs, a model's config.json, and the command lines of accelerate "
                                  "launch, torchrun, deepspeed, trl, tune run, vllm serve, SGLang and llama-server."),
        "download": t(lang, "I could not download that file: please send it again."),
        "model_out_of_range": t(lang, "That config.json describes a model far beyond any real one (its sizes are "
                                      "out of range), so I do not estimate it."),
    }
    return texts.get(key, texts["unknown_format"])


def format_name(lang: str, fmt: str | None) -> str:
    words = {"command": t(lang, "command line"), "python": t(lang, "Python script"),
             "accelerate": t(lang, "accelerate config"), "torchtune": t(lang, "torchtune config")}
    parts = [words.get(p) or FORMATS.get(p) or p for p in (fmt or "").split("+") if p]
    return " + ".join(parts) or t(lang, "config")


def framework_of(request: dict[str, Any]) -> str | None:
    name = request.get("serving_engine") or request.get("framework")
    if not name:
        return None
    return TARGET_LABELS.get(name, {"hf": "Transformers Trainer", "fsdp-qlora": "FSDP-QLoRA"}.get(name, name))


def check_header(lang: str, fmt: str | None, request: dict[str, Any], ignored: list[str], secrets: int,
                 filename: str | None, no_effect: list[str] | None = None) -> str:
    """What was read: the format and framework, the keys not understood (listed), the keys left out because they do
    not change memory (listed), the secrets dropped."""
    where = f" ({html.escape(redact(filename))[:80]})" if filename else ""
    lines = ["🔎 <b>" + t(lang, "Read as %(format)s", format=html.escape(format_name(lang, fmt))) + "</b>" + where]
    framework = framework_of(request)
    if framework:
        lines.append(t(lang, "Framework: %(name)s", name=html.escape(framework)))
    else:
        lines.append(t(lang, "Framework: not named in the config, estimated for the default stack."))
    keys = list(ignored)  # secret keys by name only ("hf_token (secret, not read)"), never their values
    if keys:
        lines.append(tn(lang, "Not understood (%(n)s key, not used in the estimate): %(keys)s",
                        "Not understood (%(n)s keys, not used in the estimate): %(keys)s", len(keys),
                        keys=_listed(lang, keys)))
    else:
        lines.append(t(lang, "Every key was understood."))
    if no_effect:
        lines.append(tn(lang, "Left out (%(n)s key, no effect on memory): %(keys)s",
                        "Left out (%(n)s keys, no effect on memory): %(keys)s", len(no_effect),
                        keys=_listed(lang, no_effect)))
    if secrets:
        lines.append("🔒 " + tn(lang, "%(n)s secret (token, key or password) was dropped unread: it is not stored, "
                                      "shown or logged. A token sent to a chat is best revoked.",
                                "%(n)s secrets (tokens, keys or passwords) were dropped unread: they are not "
                                "stored, shown or logged. A token sent to a chat is best revoked.", secrets))
    return "\n".join(lines)


def _listed(lang: str, keys: list[str]) -> str:
    shown = ", ".join(_key(k) for k in keys[:MAX_LISTED])
    more = len(keys) - MAX_LISTED
    return shown + (" " + tn(lang, "and %(n)s more", "and %(n)s more", more) if more > 0 else "")


def _key(name: str) -> str:
    """A key not understood, escaped; a secret one by its name and a lock (its value was never read)."""
    secret = name.endswith(SECRET_MARK)
    plain = name.removesuffix(SECRET_MARK)
    return "<code>" + html.escape(redact(plain))[:60] + "</code>" + (" 🔒" if secret else "")


def note_text(lang: str, note: str) -> str:
    """A writer's note (a message key with its parameter) in words."""
    key, _, param = note.partition(":")
    code = "<code>" + html.escape(param)[:120] + "</code>"
    match key:
        case "not_expressible" | "torchtune_no_config":
            return t(lang, "Cannot be said in this framework's config, set it by hand: %(what)s", what=code)
        case "changed":
            return t(lang, "Changed for this framework: %(what)s", what=code)
        case "no_plan_fits":
            return t(lang, "Nothing fits yet: written for the settings asked, see the answer's changes.")
        case "model_assumed":
            return t(lang, "Checkpoint picked for you, change it if you train another: %(what)s", what=code)
        case "gguf_type_assumed":
            return t(lang, "GGUF type assumed: %(what)s", what=code)
        case "checkpoint":
            repo, _, source = param.partition(" ")
            return t(lang, "Loads the published checkpoint %(repo)s (the Instruct variant where the name says so): "
                     "%(source)s", repo="<code>" + html.escape(repo)[:120] + "</code>",
                     source=html.escape(source)[:160])
        case "checkpoint_missing":
            return t(lang, "No published checkpoint in this format is known to us (%(what)s): replace the "
                     "your-org/… placeholder with one from the Hugging Face Hub before running.", what=code)
        case "no_writer":
            return t(lang, "No config writer for %(what)s: written for the default framework instead.", what=code)
    return "<code>" + html.escape(note)[:160] + "</code>"


def config_caption(lang: str, target: str, gpu: tuple[int, str | None] | None, estimate_gib: float | None,
                   command: str, notes: list[str]) -> str:
    """The caption of a config document: framework, GPU, estimate, how to run it, what the writer could not say."""
    head = "⚙️ <b>" + html.escape(TARGET_LABELS.get(target, target)) + "</b>"
    if gpu is not None:
        head += " · " + html.escape(f"{gpu[0]}×{gpu[1] or 'GPU'}")
    if estimate_gib is not None:
        # the unit of the files' own header ("estimated peak … GiB per GPU"): one unit in one message
        head += " · " + t(lang, "peak %(gb)s GiB per GPU", gb=num(lang, estimate_gib))
    lines = [head, t(lang, "Run: %(command)s", command="<code>" + html.escape(command) + "</code>")]
    for note in notes:
        lines.append("• " + note_text(lang, note))
    text = "\n".join(lines)
    while len(text) > CAPTION_LIMIT and len(lines) > 1:  # the command or notes go, the head line stays
        lines.pop()
        text = "\n".join(lines)
    return text


def config_failed(lang: str, reason: str) -> str:
    if reason == "framework_mismatch":
        return t(lang, "That framework does not fit this answer (training or serving): pick one from the row.")
    return t(lang, "I could not write a config for this answer: change the question and try again.")
