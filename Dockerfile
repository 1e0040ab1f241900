# gpu-advisor: the Telegram bot (`gpu-advisor run`), polling by default, webhook with BOT_MODE=webhook.
#   docker build -t gpu-advisor .
#   docker run -d --name gpu-advisor -e BOT_TOKEN=... -v gpu-advisor-data:/data gpu-advisor
# Two stages: the first builds the wheel (its build step compiles the message catalogs, build_catalogs.py); the
# image runs that wheel installed, with no source tree and no build tools. docs/install.md says more.

FROM python:3.12-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md MANIFEST.in build_catalogs.py ./
COPY engine ./engine
COPY bot ./bot
RUN pip wheel --no-deps -w /dist . \
    && python -c "import glob, zipfile; names = zipfile.ZipFile(glob.glob('/dist/*.whl')[0]).namelist(); \
assert all(f'bot/locales/{l}/LC_MESSAGES/messages.mo' in names for l in ('en', 'ru'))"

FROM python:3.12-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    BOT_STORAGE_URL=sqlite:////data/gpu-advisor.db \
    BOT_HEARTBEAT_FILE=/tmp/gpu-advisor.heartbeat \
    MPLCONFIGDIR=/tmp/matplotlib
RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin bot \
    && mkdir -p /data && chown bot:bot /data
# the wheel only (bind-mounted from the build stage: no layer keeps it), checked where it is installed
RUN --mount=type=bind,from=build,source=/dist,target=/dist \
    pip install /dist/gpu_advisor-*.whl \
    && python -c "from importlib.resources import files; assert (files('bot') / 'locales/ru/LC_MESSAGES/messages.mo').is_file()" \
    && cd /tmp && gpu-advisor --version && gpu-advisor ask "70B QLoRA на H100?" > /dev/null
WORKDIR /home/bot
USER bot
VOLUME ["/data"]
EXPOSE 8080

# liveness, both modes (bot/health.py): webhook mode GET /healthz on BOT_WEBHOOK_PORT (200 as soon as the
# server listens; /readyz says whether the webhook is registered); polling mode the heartbeat file the bot
# touches after each Bot API call (a long poll returns at least every polling timeout)
HEALTHCHECK --interval=30s --timeout=5s --start-period=40s --retries=3 CMD ["python", "-m", "bot.health"]

CMD ["gpu-advisor", "run"]
