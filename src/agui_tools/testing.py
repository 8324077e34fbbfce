"""Running an agent in-process for tests, demos and examples.

``serving(app)`` runs a real uvicorn server for an ASGI app on a free loopback port in the
current loop and yields its URL. As a pytest plugin (``pytest_plugins =
["agui_tools.testing"]``) it gives ``agui_mock(captures, **options)``:
:func:`~agui_tools.transport.mock_app` served in a background thread, as a
:class:`MockServer` (``url``, the endpoint's requests and runs left).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .transport._serving import free_port, serving

if TYPE_CHECKING:
    from .transport._mock import MockEndpoint

__all__ = ["MockServer", "agui_mock", "free_port", "serving"]


@dataclass
class MockServer:
    """A mock agent serving for one test: POST runs to ``url``."""

    url: str
    endpoint: MockEndpoint

    @property
    def requests(self) -> int:
        """Requests the mock has received (refused ones included)."""
        return self.endpoint.requests

    @property
    def unused(self) -> int:
        """Recorded runs no request has been given yet."""
        return self.endpoint.matcher.unused

    def __str__(self) -> str:
        return self.url


try:
    import pytest
except ImportError:  # pragma: no cover - pytest is only needed to use the fixture
    pass
else:

    @pytest.fixture
    def agui_mock() -> Iterator[Callable[..., MockServer]]:
        """Serve recorded runs as an agent for this test: ``agui_mock(captures, **options)``.

        ``captures`` and ``options`` are :func:`~agui_tools.transport.mock_app`'s
        (``path`` defaults to ``"/agent"``: the URL ends with it). Each call starts
        one mock on its own free port; all stop when the test ends.
        """
        from .check.pytest_plugin import serving_in_thread
        from .transport._mock import mock_app

        with ExitStack() as stack:

            def start(captures: Any, *, path: str = "/agent", **options: Any) -> MockServer:
                app = mock_app(captures, path=path, **options)
                url = stack.enter_context(serving_in_thread(app, path=path))
                return MockServer(url, app.state.mock)

            yield start
