"""The --prometheus / --selector / --window / --at options, validated once for `check`, `watch` and `alerts`."""

from __future__ import annotations

import time

from spec_doctor.engine.facts import InputError
from spec_doctor.engine.inputs import PrometheusSource

DEFAULT_TOKEN_ENV = "SPEC_DOCTOR_PROMETHEUS_TOKEN"


def window_seconds(window: str, flag: str = "--window") -> float:
    from spec_doctor.parsers.promapi import parse_duration

    try:
        seconds = parse_duration(window)
    except ValueError as exc:
        raise InputError(f"{flag}: {exc}") from None
    if not 1 <= seconds <= 400 * 86400:
        raise InputError(f"{flag} must be between 1s and 400d, not '{window}'")
    return seconds


def selector_of(selector: str) -> str:
    from spec_doctor.parsers.promapi import check_selector

    try:
        check_selector(selector)
    except ValueError as exc:
        raise InputError(f"--selector: {exc}") from None
    return selector.strip()


def prometheus_source(url: str | None, selector: str, window: str, at: str | None,
                      token_env: str) -> PrometheusSource | None:
    """None without --prometheus (and then --selector/--window/--at must not be given either)."""
    if url is None:
        if selector or at:
            raise InputError("--selector and --at need --prometheus URL")
        return None
    if not url.strip():
        raise InputError("--prometheus needs a URL, e.g. http://127.0.0.1:9090")
    when = None
    if at is not None:
        from spec_doctor.parsers.promapi import parse_time

        try:
            when = parse_time(at, now=time.time())
        except ValueError as exc:
            raise InputError(f"--at: {exc}") from None
    if token_env and not token_env.replace("_", "").isalnum():
        raise InputError(f"--prometheus-token-env '{token_env}' is not an environment variable name")
    return PrometheusSource(url=url.strip(), selector=selector_of(selector), window_s=window_seconds(window),
                            at=when, token_env=token_env)
