# gpu-advisor: the Telegram bot (`gpu-advisor run`), polling by default, webhook with BOT_MODE=webhook.
#   docker build -t gpu-advisor .
#   docker run -d --name gpu-advisor -e BOT_TOKEN=... -v gpu-advisor-data:/data gpu-advisor
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    BOT_STORAGE_URL=sqlite:////data/gpu-advisor.db \
    BOT_HEARTBEAT_FILE=/tmp/gpu-advisor.heartbeat \
    MPLCONFIGDIR=/tmp/matplotlib

WORKDIR /app

RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin bot \
    && mkdir -p /data && chown bot:bot /data

# The package is installed in place
# (-e): bot/views/render.py finds the catalogs at <repo root>/locales, i.e. /app/locales here.
COPY pyproject.toml README.md ./
COPY engine ./engine
COPY bot ./bot
COPY locales ./locales
RUN pip install -e . \
    && python -m bot.i18n compile \
    && python -c "from bot.views.render import LOCALES; assert (LOCALES / 'ru/LC_MESSAGES/messages.mo').exists(), LOCALES" \
    && gpu-advisor ask "70B QLoRA на H100?" > /dev/null

USER bot
VOLUME ["/data"]
EXPOSE 8080

# webhook mode: GET /healthz; polling mode: the heartbeat file the bot touches after each Bot API call
HEALTHCHECK --interval=30s --timeout=5s --start-period=40s --retries=3 CMD ["python", "-m", "bot.health"]

CMD ["gpu-advisor", "run"]
