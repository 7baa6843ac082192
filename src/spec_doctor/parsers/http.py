"""One-line reasons for HTTP transport failures, shared by every client spec-doctor has (a /metrics scrape, a
vLLM server's API, the Prometheus API): each handles HTTP status errors itself, with its own hints, and hands
the rest here."""

from __future__ import annotations


def transport_failure(where: str, exc: BaseException, timeout: float) -> str:
    """``where: ...`` for a connection that failed below HTTP: refused, timed out (also when urllib wraps the
    timeout in a URLError), reset, or a malformed URL."""
    import socket
    import urllib.error

    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(reason, (socket.timeout, TimeoutError)):
        return f"{where}: no answer within {timeout:g} s"
    if isinstance(exc, urllib.error.URLError):
        return f"{where}: cannot connect ({getattr(reason, 'strerror', None) or reason})"
    first = str(exc).splitlines()[0] if str(exc) else ""
    return f"{where}: {type(exc).__name__}: {first}"
