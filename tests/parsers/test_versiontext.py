"""--vllm-version as users write it (parsers/versiontext.py), read over a list of releases."""

from __future__ import annotations

import pytest
from packaging.version import Version

from spec_doctor.parsers.versiontext import read_declared

RELEASES = [Version(v) for v in ("0.8.0", "0.8.4", "0.8.5.post1", "0.9.0", "0.9.1", "0.9.2", "0.10.0", "0.10.1",
                                 "0.11.0")]


@pytest.mark.parametrize("text, exact", [
    ("0.9.2", "0.9.2"), ("v0.10.1", "0.10.1"), ("0.13.0+cu128", "0.13.0+cu128"), ("0.11.1rc3", "0.11.1rc3"),
    ("0.9.2 (V1)", "0.9.2"), ("vllm 0.10.0 from pip", "0.10.0"),
])
def test_one_release(text, exact):
    got = read_declared(text, RELEASES)
    assert got is not None and got.exact == Version(exact)


@pytest.mark.parametrize("text, low, high, open_", [
    ("0.8.x", "0.8.0", "0.8.5.post1", False),
    ("0.9", "0.9.0", "0.9.2", False),
    ("0.9.1/0.9.2", "0.9.1", "0.9.2", False),
    ("0.9.1 - 0.10.0", "0.9.1", "0.10.0", False),
    (">=0.9", "0.9", "0.11.0", True),
    ("0.10+", "0.10", "0.11.0", True),
    ("0.9.2 or later", "0.9.2", "0.11.0", True),
    ("before 0.9", "0.8.0", "0.8.5.post1", False),
    ("<0.10", "0.8.0", "0.9.2", False),
    ("main", "0.11.0", "0.11.0", True),
    ("nightly build", "0.11.0", "0.11.0", True),
    ("built from source at commit 3f2a9c1d", "0.11.0", "0.11.0", True),
])
def test_ranges(text, low, high, open_):
    got = read_declared(text, RELEASES)
    assert got is not None and got.exact is None
    assert (got.low, got.high, got.high_open) == (Version(low), Version(high), open_)


@pytest.mark.parametrize("text", ["banana", "unknown", "", "the one in the docker image", "V1 engine"])
def test_no_release_is_none(text):
    assert read_declared(text, RELEASES) is None
