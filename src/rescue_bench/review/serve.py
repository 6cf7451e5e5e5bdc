"""How ``rescue-bench review serve`` runs the app under uvicorn.

Client addresses matter to the login limit, so ``X-Forwarded-For`` (and ``X-Forwarded-Proto``) are believed
only when the operator says a reverse proxy sits in front (``--trust-proxy``), and then only from that proxy's
address. Otherwise anyone could claim any address in the header and get a fresh set of login attempts each
time; uvicorn itself would trust the header from loopback peers by default.
"""

from __future__ import annotations

import uvicorn
from fastapi import FastAPI

LOOPBACK_PROXIES = "127.0.0.1,::1"


def server_config(app: FastAPI, *, host: str, port: int, trust_proxy: bool) -> uvicorn.Config:
    """The uvicorn configuration: proxy headers off unless ``trust_proxy`` (then from loopback only)."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        proxy_headers=trust_proxy,
        forwarded_allow_ips=LOOPBACK_PROXIES if trust_proxy else "",
        server_header=False,
    )
