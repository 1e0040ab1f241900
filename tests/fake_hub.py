"""A Hugging Face Hub on loopback: `config.json` of `owner/name` answered by a handler the test gives."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@asynccontextmanager
async def hub_server(handle: Handler) -> AsyncIterator[str]:
    """Serve `/{owner}/{name}/resolve/main/config.json` with `handle`; yields the endpoint (for HF_ENDPOINT)."""
    app = web.Application()
    app.router.add_get("/{owner}/{name}/resolve/main/config.json", handle)
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    try:
        yield f"http://{host}:{port}"
    finally:
        await runner.cleanup()


def configs_hub(configs: dict[str, dict[str, Any]]) -> AbstractAsyncContextManager[str]:
    """A Hub serving `configs` (model id → config.json); 404 for any other id."""

    async def handle(request: web.Request) -> web.Response:
        found = configs.get(f"{request.match_info['owner']}/{request.match_info['name']}")
        return web.json_response(found) if found is not None else web.Response(status=404)

    return hub_server(handle)
