"""uvicorn's HTTP/1.1 protocol, answering what it cannot parse as the API
answers every other error.

A request uvicorn cannot parse (a malformed request line or header, an
upgrade it does not serve) never reaches the app: uvicorn answers it
itself, ``400`` with the plain text "Invalid HTTP request received.".
Every other error of the API is JSON (``errors.py``), and a client reads
the body of a 4xx as such; this protocol gives that one the same shape,
``bad_request``. It is h11's protocol whatever else is installed: uvicorn
would pick httptools where that is importable, and the two answer such
requests differently.
"""

from __future__ import annotations

import h11
import orjson
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["JsonErrorProtocol"]


class JsonErrorProtocol(H11Protocol):
    """h11's protocol with a JSON body for the 400 it sends itself."""

    def _unsupported_upgrade_warning(self) -> None:
        # The server serves no upgrade (run.py turns WebSockets off): such a
        # request is answered as plain HTTP, and uvicorn's two warnings for
        # it, one telling the operator to install a WebSocket library, would
        # only mislead. (A uvicorn that renames this hook logs them again.)
        return None

    def send_400_response(self, msg: str) -> None:
        if self.conn.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
            # A response has begun (a malformed chunk of a body the app
            # already answered): a second one would land in or after it.
            # The connection only closes, as uvicorn's own ends up doing.
            self.transport.close()
            return
        body = orjson.dumps({"error": {"code": "bad_request", "message": msg}})
        head = [b"HTTP/1.1 400 Bad Request\r\n"]
        head += [name + b": " + value + b"\r\n" for name, value in self.server_state.default_headers]
        head += [
            b"content-type: application/json\r\n",
            b"content-length: " + str(len(body)).encode("ascii") + b"\r\n",
            b"connection: close\r\n\r\n",
        ]
        # The connection closes after it, so h11's state, already in error
        # for this request, need not hear of the response.
        self.transport.write(b"".join(head) + body)
        self.transport.close()
