"""The web UI's pages (static HTML, ES modules, CSS; no build step) and the routes that serve them."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute

HERE = Path(__file__).resolve().parent
STATIC = HERE / "static"
PAGE = HERE / "index.html"
# the addresses of the pages: each is the same shell, whose script draws what the path names
PAGE_PATHS = (
    "/",
    "/new",
    "/compare",
    "/runs/{run_id:path}",
    "/batches",
    "/batches/{name:path}",
    "/evals",
    "/evals/{name:path}",
)
# the pages run only their own scripts and styles, talk only to their server, and may not be
# framed (serve/access.py NoFraming adds the same frame-ancestors to every answer)
POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
ICON = STATIC / "favicon.svg"


def mount(routes: list[BaseRoute]) -> None:
    """Append the pages' routes to a Starlette app's `routes`: the shell at each page address
    and the assets under /ui/static/. Neither holds run data (the pages read it from /v1/...,
    with the token), so a browser can load them from the address `flowrun ui` prints."""
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    routes.extend(Route(path, _page, methods=["GET"]) for path in PAGE_PATHS)
    routes.append(Route("/favicon.ico", _icon, methods=["GET"]))  # (browsers ask it unbidden)
    routes.append(Mount("/ui/static", app=StaticFiles(directory=STATIC), name="ui-static"))


async def _page(request: Request) -> Response:
    from starlette.responses import FileResponse

    headers = {"Cache-Control": "no-cache", "Content-Security-Policy": POLICY}
    return FileResponse(PAGE, media_type="text/html", headers=headers)


async def _icon(request: Request) -> Response:
    from starlette.responses import FileResponse

    return FileResponse(ICON, media_type="image/svg+xml", headers={"Cache-Control": "max-age=86400"})
