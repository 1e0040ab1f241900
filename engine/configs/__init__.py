"""Configs in and out: writers turn a plan into the framework's own files, readers turn a user's file or
command line back into the Request it describes. Pure: text in, text out; no I/O beyond options/*.txt.

Public API (what the bot and the CLI call):
    write_config(job, target)      -> ConfigOutput      one framework's files for a ConfigJob
    config_for(request, target)    -> ConfigOutput      the answer's arrangement for a request, written for `target`
    read_config(text, name)        -> ReadResult        one file or pasted command (never raises for bad input)
    read_bundle([(name, text)...]) -> ReadResult        several files of one job
    check(text, name)              -> dict              CONTRACT.md v2 `check --json`
    check_files([(name, data)...]) -> dict              the same for several files of one job
"""

from __future__ import annotations

from typing import Any

from engine.configs.model import TARGETS, ConfigFile, ConfigJob, ConfigOutput, ReadResult, Target

# The readers and writers (with their YAML and option lists) are imported on first use: importing this package,
# e.g. for TARGETS, costs a CLI start that writes no config nothing.


def write_config(job: ConfigJob, target: Target) -> ConfigOutput:
    from engine.configs.writers import WRITERS

    return WRITERS[target](job)


def read_config(data: str | bytes, name: str | None = None) -> ReadResult:
    """One file or pasted command line (engine.configs.readers.read_config); never raises for bad input."""
    from engine.configs.readers import read_config as read

    return read(data, name)


def read_bundle(files: list[tuple[str, str | bytes]]) -> ReadResult:
    """Several files of one job (engine.configs.readers.read_bundle)."""
    from engine.configs.readers import read_bundle as read

    return read(files)


def config_for(request: Any, target: Target | None = None) -> ConfigOutput:
    """The ready-to-run config of the answer to the request, in the arrangement it shows (engine.configs.bridge;
    raises ScenarioError when none can be made)."""
    from engine.configs.bridge import FRAMEWORK_TARGET, SERVING, as_answered, best_job, default_target, is_serving

    if target is None:
        request = as_answered(request)
    notes: list[str] = []
    if target is None and request.framework and request.framework not in FRAMEWORK_TARGET:
        notes.append(f"no_writer:{request.framework}")  # e.g. ms-swift, verl: written for the default instead
    target = target or default_target(request)
    if (target in SERVING) != is_serving(request):
        raise ValueError(f"framework_mismatch:{target}:{'serving' if is_serving(request) else 'training'}")
    job, plan_notes = best_job(request, target)
    out = write_config(job, target)
    out.notes = notes + plan_notes + out.notes
    return out


def check(text: str | bytes, name: str | None = None) -> dict[str, Any]:
    """`check --json`: {"request", "estimate", "changes", "ignored", "no_effect"} (+ "format", "error" when it could
    not be read); `no_effect`: keys read and left out because they do not change memory (logging, saving, ...)."""
    from engine.configs.logcheck import check_log
    from engine.configs.readers.logs import looks_like_log
    from engine.configs.safety import ConfigInputError, check_text

    try:
        plain = check_text(text)
    except ConfigInputError:
        plain = None
    if plain is not None and looks_like_log(plain):  # a start-up log or a memory printout
        logged = check_log(plain)
        if logged is not None:
            return logged
    return checked(read_config(text, name))


def check_files(files: list[tuple[str, str | bytes]]) -> dict[str, Any]:
    """`check` of several files of one job (a script with its accelerate.yaml and ds_config.json)."""
    if len(files) == 1:
        return check(files[0][1], files[0][0])
    return checked(read_bundle(files))


def checked(read: ReadResult) -> dict[str, Any]:
    from engine.configs.bridge import check_estimate

    out: dict[str, Any] = {"request": None, "estimate": None, "changes": [], "ignored": read.ignored,
                           "no_effect": read.no_effect, "format": read.format}
    if read.secrets:
        out["secrets_dropped"] = read.secrets
    if read.error or read.request is None:
        out["error"] = read.error or "unknown_format"
        return out
    out["request"] = read.request.model_dump(mode="json", exclude_none=True)
    estimate, changes, error = check_estimate(read.request)
    out["estimate"], out["changes"] = estimate, changes
    if error:
        out["error"] = error
    return out


__all__ = ["TARGETS", "ConfigFile", "ConfigJob", "ConfigOutput", "ReadResult", "Target", "check", "check_files",
           "config_for", "read_bundle", "read_config", "write_config"]
