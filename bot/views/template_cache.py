"""The answer templates' compiled code kept between processes, as Python keeps a module's bytecode.

jinja2 compiles a template to Python on its first use in a process (answer.html.j2: about 13 ms, a twentieth of a
cold `gpu-advisor ask`); with this cache a later process loads the code from `bot/views/__pycache__/` instead.
jinja2 checks each entry against the template's source (a checksum) and against its own and Python's version; the
entry's name here also holds every environment setting that changes the compiled code (delimiters, whitespace
handling, autoescape, extensions, gettext style), so an entry is never used for a template or an environment it was
not compiled from. Written only where the folder is writable and `sys.dont_write_bytecode` is off; a failure to
read or write an entry only costs the compilation.
"""

from __future__ import annotations

import hashlib
import sys
from importlib.resources import files
from pathlib import Path

from jinja2 import Environment
from jinja2.bccache import Bucket, FileSystemBytecodeCache


def template_cache() -> FileSystemBytecodeCache | None:
    """The cache in the templates' package folder; None where that folder is not on a file system (a zip)."""
    folder = files("bot.views")
    if not isinstance(folder, Path):
        return None
    return TemplateCache(str(folder / "__pycache__"), "jinja2-%s.cache")


def settings_key(env: Environment) -> str:
    """Every setting of `env` the compiled code depends on, as one string."""
    settings = (
        env.block_start_string, env.block_end_string, env.variable_start_string, env.variable_end_string,
        env.comment_start_string, env.comment_end_string, env.line_statement_prefix, env.line_comment_prefix,
        env.trim_blocks, env.lstrip_blocks, env.newline_sequence, env.keep_trailing_newline, env.optimized,
        env.is_async, repr(env.autoescape), env.finalize is not None, sorted(env.extensions),
        getattr(env, "newstyle_gettext", None),
    )
    return repr(settings)


class TemplateCache(FileSystemBytecodeCache):
    def get_bucket(self, environment: Environment, name: str, filename: str | None, source: str) -> Bucket:
        key = hashlib.sha256(f"{name}|{filename}|{settings_key(environment)}".encode()).hexdigest()[:32]
        bucket = Bucket(environment, key, self.get_source_checksum(source))
        try:
            self.load_bytecode(bucket)
        except Exception:  # a damaged entry (jinja2 itself resets a stale one): compiled again
            bucket.reset()
        return bucket

    def dump_bytecode(self, bucket: Bucket) -> None:
        if sys.dont_write_bytecode:
            return
        try:
            Path(self.directory).mkdir(exist_ok=True)
            super().dump_bytecode(bucket)
        except OSError:  # a read-only install: the template is compiled again next time
            return
