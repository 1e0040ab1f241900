"""bot/views/cldr.toml holds what Babel's locale data says for the marks and dates an answer uses; here every entry is
checked against Babel itself, so that the copy can never drift from it."""

from __future__ import annotations

import datetime

import pytest
from babel.dates import format_date, format_skeleton
from babel.numbers import get_decimal_symbol, get_group_symbol

from bot.views.catalogs import LANGUAGES
from bot.views.formats import _cldr, _symbols, date_text, decimal


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_language_of_the_bot_has_its_marks_and_dates_in_the_table(lang: str) -> None:
    assert _cldr(lang) is not None


@pytest.mark.parametrize("lang", LANGUAGES)
def test_marks_are_babels(lang: str) -> None:
    assert _symbols(lang) == (get_group_symbol(locale=lang), get_decimal_symbol(locale=lang))
    group, point = get_group_symbol(locale=lang), get_decimal_symbol(locale=lang)
    assert decimal(lang, 1234567.25, 2) == f"1{group}234{group}567{point}25"


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("month", range(1, 13))
def test_dates_are_babels(lang: str, month: int) -> None:
    for day in (datetime.date(2026, month, 1), datetime.date(1999, month, 28), datetime.date(2031, month, 9)):
        assert date_text(lang, day.isoformat()) == format_date(day, format="long", locale=lang)
        assert date_text(lang, day.isoformat()[:7]) == format_skeleton("yMMMM", day.replace(day=1), locale=lang)


def test_a_language_the_table_lacks_is_asked_of_babel() -> None:
    assert _cldr("de") is None
    assert date_text("de", "2026-11-09") == "9. November 2026"
    assert _symbols("de") == (".", ",")


def test_a_date_that_is_none_stays_as_written() -> None:
    assert date_text("ru", "2026-13-01") == "2026-13-01"
    assert date_text("en", "soon") == "soon"
