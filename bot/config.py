"""The bot's configuration: environment variables (and a `.env` file) named as in CONTRACT.md `run`.

`load_config()` returns a validated `BotConfig` or raises `ConfigError` whose message is one line
that names the variable at fault, never its secret value.
"""

from __future__ import annotations

import logging
import re
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_STORAGE_URL = "sqlite:///gpu-advisor.db"
TOKEN_RE = re.compile(r"^\d{1,20}:[A-Za-z0-9_-]{10,200}$")
SECRET_RE = re.compile(r"^[A-Za-z0-9_-]{1,256}$")  # what Telegram accepts as secret_token
LOG_LEVELS = ("CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG")


class ConfigError(Exception):
    """A missing or wrong setting; str() is one line suitable for stderr."""


class BotConfig(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="BOT_", env_file=".env", env_file_encoding="utf-8",
                                      extra="ignore", populate_by_name=True, frozen=True)

    token: SecretStr
    mode: Literal["polling", "webhook"] = "polling"
    api_base_url: str = "https://api.telegram.org"
    storage_url: str = DEFAULT_STORAGE_URL
    webhook_url: str | None = None
    webhook_secret: SecretStr | None = None
    webhook_host: str = "0.0.0.0"
    webhook_port: int = Field(default=8080, ge=1, le=65535)
    default_language: Literal["ru", "en"] = "en"
    log_level: str = "INFO"
    log_format: Literal["json", "text"] | None = None  # None: json in webhook mode, text in polling mode
    metrics_port: int | None = Field(default=None, ge=1, le=65535)  # /metrics and /healthz there (both modes)
    metrics_host: str = "127.0.0.1"  # loopback unless the operator opens it (a scraper on the internal network)
    # how long start-up calls (getMe, setWebhook, deleteWebhook) are retried before the start fails
    startup_retry_s: float = Field(default=60.0, ge=0, le=3600)
    # Hugging Face Hub, for questions that name a model id (the Hub's own variable names)
    hf_endpoint: str = Field(default="https://huggingface.co", validation_alias="HF_ENDPOINT")
    hf_token: SecretStr | None = Field(default=None, validation_alias="HF_TOKEN")
    # the Mini App's public https URL (…/app/): a "📱 Calculator" button under answers; unset: no button, no /app
    webapp_url: str | None = None

    @field_validator("token")
    @classmethod
    def _token(cls, v: SecretStr) -> SecretStr:
        if not TOKEN_RE.match(v.get_secret_value().strip()):
            raise ValueError("does not look like a BotFather token (digits:letters)")
        return SecretStr(v.get_secret_value().strip())

    @field_validator("api_base_url", "hf_endpoint")
    @classmethod
    def _http_url(cls, v: str) -> str:
        parts = urlsplit(v.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"must be an http(s) URL, got {v!r}")
        return v.strip().rstrip("/")

    @field_validator("storage_url")
    @classmethod
    def _storage(cls, v: str) -> str:
        v = v.strip()
        if v.startswith("sqlite:///") and len(v) > len("sqlite:///"):
            return v
        if v.startswith(("redis://", "rediss://", "unix://")):
            return v
        raise ValueError("must be sqlite:///path/to/file.db or redis://host:port/db")

    @field_validator("webhook_url")
    @classmethod
    def _webhook_url(cls, v: str | None) -> str | None:
        if v is None or not v.strip():
            return None
        parts = urlsplit(v.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError("must be the public https URL Telegram posts to")
        return v.strip()

    @field_validator("webapp_url")
    @classmethod
    def _webapp_url(cls, v: str | None) -> str | None:
        if v is None or not v.strip():
            return None
        parts = urlsplit(v.strip())
        if parts.scheme != "https" or not parts.netloc:
            raise ValueError("must be the Mini App's public https URL (Telegram opens only https)")
        return v.strip()

    @field_validator("webhook_secret")
    @classmethod
    def _secret(cls, v: SecretStr | None) -> SecretStr | None:
        if v is None or not v.get_secret_value():
            return None
        if not SECRET_RE.match(v.get_secret_value()):
            raise ValueError("must be 1-256 characters of A-Z, a-z, 0-9, _ and -")
        return v

    @field_validator("log_level")
    @classmethod
    def _level(cls, v: str) -> str:
        if v.strip().upper() not in LOG_LEVELS:
            raise ValueError(f"must be one of {', '.join(LOG_LEVELS)}")
        return v.strip().upper()

    @model_validator(mode="after")
    def _webhook_needs(self) -> BotConfig:
        if self.mode == "webhook":
            if not self.webhook_url:
                raise ValueError("BOT_WEBHOOK_URL is required when BOT_MODE=webhook")
            if not self.webhook_secret:
                raise ValueError("BOT_WEBHOOK_SECRET is required when BOT_MODE=webhook")
        return self

    @property
    def webhook_path(self) -> str:
        path = urlsplit(self.webhook_url or "").path
        return path if path and path != "/" else "/webhook"

    @field_validator("log_format", mode="before")
    @classmethod
    def _log_format(cls, v: object) -> object:
        return v.strip().lower() or None if isinstance(v, str) else v

    @field_validator("metrics_port", mode="before")
    @classmethod
    def _metrics_port(cls, v: object) -> object:
        return None if isinstance(v, str) and not v.strip() else v

    @property
    def effective_log_format(self) -> str:
        return self.log_format or ("json" if self.mode == "webhook" else "text")

    @property
    def log_level_number(self) -> int:
        return int(getattr(logging, self.log_level))


def _env_name(loc: tuple[Any, ...]) -> str:
    if not loc:
        return "configuration"
    field = str(loc[0])
    if field in ("HF_ENDPOINT", "HF_TOKEN", "hf_endpoint", "hf_token"):
        return field.upper()
    return "BOT_" + field.upper()


def describe(exc: ValidationError) -> str:
    """The first problem of a validation error, as one line naming the environment variable."""
    err = exc.errors(include_input=False, include_url=False)[0]
    msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
    if err.get("type") == "missing":
        msg = "is required"
    elif err.get("type") == "literal_error":
        msg = msg.replace("Input should be", "must be")
    loc = tuple(err.get("loc", ()))
    if not loc:  # model-level check: the message names its variable
        return msg
    return f"{_env_name(loc)} {msg}".replace("\n", " ")


def load_config(**overrides: Any) -> BotConfig:
    try:
        return BotConfig(**overrides)
    except ValidationError as exc:
        raise ConfigError(describe(exc)) from None
