"""Commands that print or serve instead of drawing the UI: ``--once`` and ``gtop serve``.

Both feed a :class:`~gtop.core.model.Model` from any source, live or replayed, exactly as
the UI does; ``--once`` then prints one frame of the overview, ``serve`` keeps polling and
answers Prometheus scrapes from it.
"""

from __future__ import annotations

import json
import signal
import socket
import sys
import threading
import time
from typing import Any

from gtop.core.model import Model
from gtop.core.stdout import emit

POLL_S = 0.25
"""How often ``serve`` moves data from the source into the model."""


def settle(source: Any, seconds: float) -> Model:
    """A model holding what ``source`` (started, not stopped) delivered in ``seconds``
    (live: collectors need a sample or two before they have anything; replay: one poll
    fills the history)."""
    model = Model()
    deadline = time.monotonic() + seconds
    while True:
        model.apply(source.poll(), source.now_ns())
        if time.monotonic() >= deadline:
            break
        time.sleep(min(POLL_S, seconds))
    return model


def print_once(source: Any, seconds: float, as_json: bool, gpus: frozenset[int] | None) -> int:
    """Print one overview frame of ``source`` after ``seconds`` (``--once``), with the
    target's verdict over the views' window (:func:`gtop.views.once.target_answer`)."""
    from gtop.views.once import format_frame, frame, target_answer

    source.start()
    try:
        model = settle(source, seconds)
        data = frame(model, source.title, gpus)
        data["answer"] = target_answer(model, source)
    finally:
        source.stop()
    emit(json.dumps(data, indent=2) if as_json else format_frame(data))
    return 0


def _http_server(registry: Any, port: int, bind: str) -> Any:
    """An HTTP server answering every path with ``registry``'s metrics, one thread per
    request (prometheus-client's WSGI app; its ``start_http_server`` returns the server
    only from 0.20, and the floor is 0.17).

    Raises:
        OSError: ``bind:port`` cannot be resolved or bound.
    """
    from socketserver import ThreadingMixIn
    from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

    from prometheus_client import make_wsgi_app

    family = socket.getaddrinfo(bind, port, type=socket.SOCK_STREAM)[0][0]

    class Server(ThreadingMixIn, WSGIServer):
        address_family = family
        daemon_threads = True

    class Quiet(WSGIRequestHandler):
        def log_message(self, *_args: Any) -> None:
            """No line per scrape on stderr."""

    return make_server(bind, port, make_wsgi_app(registry), Server, Quiet)


def serve(source: Any, port: int, bind: str) -> int:
    """Poll ``source`` into a model until SIGINT/SIGTERM, serving OpenMetrics on
    ``bind:port`` (``/metrics``); a replay that reaches its end holds its last values.

    Raises:
        OSError: the port cannot be bound.
    """
    from prometheus_client.registry import CollectorRegistry

    from gtop.views.openmetrics import ModelMetrics

    model, lock = Model(), threading.Lock()
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ModelMetrics(model, lock, source.drops))
    source.start()
    model.apply(source.poll(), source.now_ns())  # a replay's history is there at once
    try:
        server = _http_server(registry, port, bind)
    except OSError:
        source.stop()
        raise
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    thread = threading.Thread(target=server.serve_forever, name="gtop-serve", daemon=True)
    thread.start()
    host, bound = server.server_address[:2]
    print(f"gtop: serving OpenMetrics at http://{host}:{bound}/metrics", file=sys.stderr)
    try:
        while not stop.wait(POLL_S):
            update = source.poll()
            with lock:
                model.apply(update, source.now_ns())
    finally:
        source.stop()
        server.shutdown()
        thread.join()
    return 0
