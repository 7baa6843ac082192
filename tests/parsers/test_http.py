"""The one-line transport-failure reasons every HTTP client of spec-doctor shares (parsers/http.py)."""

from __future__ import annotations

import urllib.error

from spec_doctor.parsers.http import transport_failure


def test_timeouts_read_the_same_whether_or_not_urllib_wraps_them():
    for exc in (TimeoutError("timed out"), TimeoutError("timed out"), urllib.error.URLError(TimeoutError())):
        assert transport_failure("http://h:1/x", exc, 5) == "http://h:1/x: no answer within 5 s"


def test_refused_and_other_failures_name_their_reason_in_one_line():
    refused = urllib.error.URLError(ConnectionRefusedError(111, "Connection refused"))
    assert transport_failure("u", refused, 5) == "u: cannot connect (Connection refused)"
    assert transport_failure("u", ValueError("unknown url type: 'htp'\nmore"), 5) == \
        "u: ValueError: unknown url type: 'htp'"
