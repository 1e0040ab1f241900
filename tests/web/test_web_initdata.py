"""Telegram Mini App initData: the documented HMAC check, its freshness, and malformed data refused."""

from __future__ import annotations

import json

import pytest

from web.initdata import MAX_AGE_S, InitDataError, sign, validate

TOKEN = "123456:TEST-token-for-the-mini-app"
NOW = 1_800_000_000.0


def fields(**extra: str) -> dict[str, str]:
    return {"auth_date": str(int(NOW) - 60), "query_id": "AAH1",
            "user": json.dumps({"id": 42, "first_name": "Ann", "language_code": "ru"}), **extra}


def test_valid_initdata_gives_the_user():
    user = validate(sign(fields(start_param="abc123"), TOKEN), TOKEN, now=lambda: NOW)
    assert (user.id, user.language_code, user.start_param) == (42, "ru", "abc123")


def test_forged_field_is_refused():
    data = sign(fields(), TOKEN).replace("%22id%22%3A+42", "%22id%22%3A+43")
    assert "43" in data
    with pytest.raises(InitDataError, match="signature"):
        validate(data, TOKEN, now=lambda: NOW)


def test_forged_hash_is_refused():
    data = sign(fields(), TOKEN)
    head, _, digest = data.rpartition("hash=")
    with pytest.raises(InitDataError, match="signature"):
        validate(head + "hash=" + ("0" if digest[0] != "0" else "1") + digest[1:], TOKEN, now=lambda: NOW)


def test_another_bots_token_is_refused():
    with pytest.raises(InitDataError, match="signature"):
        validate(sign(fields(), "654321:ANOTHER-bot-token-xyz"), TOKEN, now=lambda: NOW)


def test_stale_initdata_is_refused():
    old = fields(auth_date=str(int(NOW - MAX_AGE_S - 5)))
    with pytest.raises(InitDataError, match="older"):
        validate(sign(old, TOKEN), TOKEN, now=lambda: NOW)
    fresh = fields(auth_date=str(int(NOW - MAX_AGE_S + 5)))
    assert validate(sign(fresh, TOKEN), TOKEN, now=lambda: NOW).id == 42


@pytest.mark.parametrize("data", [None, "", "hash=abc"])
def test_missing_initdata_is_refused(data):
    with pytest.raises(InitDataError):
        validate(data, TOKEN, now=lambda: NOW)


def test_duplicate_keys_are_refused():
    data = sign(fields(), TOKEN) + "&auth_date=1"
    with pytest.raises(InitDataError, match="repeats"):
        validate(data, TOKEN, now=lambda: NOW)


@pytest.mark.parametrize("date", ["soon", "-5", "1e9", "１２３"])
def test_non_numeric_auth_date_is_refused_even_when_signed(date):
    with pytest.raises(InitDataError, match="auth_date"):
        validate(sign(fields(auth_date=date), TOKEN), TOKEN, now=lambda: NOW)


@pytest.mark.parametrize("user", ["", "[1]", '{"id": "42"}', '{"id": true}', "{"])
def test_a_signed_initdata_without_a_user_id_is_refused(user):
    with pytest.raises(InitDataError, match="user"):
        validate(sign(fields(user=user), TOKEN), TOKEN, now=lambda: NOW)


def test_hostile_hash_text_does_not_crash():
    with pytest.raises(InitDataError):
        validate("auth_date=1&hash=%D0%B9%FF", TOKEN, now=lambda: NOW)
