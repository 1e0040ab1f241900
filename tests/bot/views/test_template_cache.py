"""The templates' compiled code kept between processes (bot/views/template_cache.py): a later environment loads it
instead of compiling, never for another source or other settings, and a cache that cannot be written costs only
the compilation."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from jinja2 import DictLoader, Environment

from bot.views.render import environment
from bot.views.template_cache import TemplateCache, template_cache

SOURCE = "{% for x in items %}\n<b>{{ x }}</b>{% endfor %} {% trans %}Hello{% endtrans %}"


def _env(cache: TemplateCache, source: str = SOURCE, **settings: Any) -> Environment:
    env = Environment(loader=DictLoader({"t.j2": source}), autoescape=True, bytecode_cache=cache,
                      extensions=["jinja2.ext.i18n"], **settings)
    env.install_null_translations()  # type: ignore[attr-defined]
    return env


def _never_compiles(env: Environment, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("compiled the template")

    monkeypatch.setattr(env, "compile", refuse)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> TemplateCache:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    return TemplateCache(str(tmp_path / "__pycache__"), "jinja2-%s.cache")


def test_a_later_environment_loads_the_compiled_code(cache: TemplateCache, monkeypatch: pytest.MonkeyPatch) -> None:
    want = _env(cache).get_template("t.j2").render(items=["<1>", "2"])
    assert want == "\n<b>&lt;1&gt;</b>\n<b>2</b> Hello"
    assert len(list(Path(cache.directory).glob("jinja2-*.cache"))) == 1
    later = _env(cache)
    _never_compiles(later, monkeypatch)
    assert later.get_template("t.j2").render(items=["<1>", "2"]) == want


def test_other_settings_or_another_source_compile_afresh(cache: TemplateCache) -> None:
    _env(cache).get_template("t.j2").render(items=[1])
    trimmed = _env(cache, trim_blocks=True).get_template("t.j2").render(items=[1, 2])
    assert trimmed == "<b>1</b><b>2</b> Hello"  # the code compiled without trim_blocks keeps each newline
    edited = _env(cache, source="{{ items|length }}").get_template("t.j2").render(items=[1, 2])
    assert edited == "2"
    assert len(list(Path(cache.directory).glob("jinja2-*.cache"))) == 2  # no trim / trim; the edit replaced one


def test_nothing_is_written_when_bytecode_is_not(cache: TemplateCache, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert _env(cache).get_template("t.j2").render(items=[1]) == "\n<b>1</b> Hello"
    assert not Path(cache.directory).exists()


def test_a_cache_that_cannot_be_written_or_read_still_renders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    (tmp_path / "__pycache__").write_text("a file where the folder would be", encoding="utf-8")
    cache = TemplateCache(str(tmp_path / "__pycache__"), "jinja2-%s.cache")
    for _ in range(2):
        assert _env(cache).get_template("t.j2").render(items=[1]) == "\n<b>1</b> Hello"


def test_a_damaged_entry_is_compiled_again(cache: TemplateCache) -> None:
    _env(cache).get_template("t.j2")
    [entry] = Path(cache.directory).glob("jinja2-*.cache")
    entry.write_bytes(entry.read_bytes()[:12])
    assert _env(cache).get_template("t.j2").render(items=[3]) == "\n<b>3</b> Hello"


def test_the_answer_templates_use_the_cache_beside_them() -> None:
    cache = environment("en").bytecode_cache
    assert isinstance(cache, TemplateCache)
    assert cache.directory == template_cache().directory  # type: ignore[union-attr]
    assert Path(cache.directory).parent.name == "views"
