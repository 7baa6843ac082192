"""Helpers for the tune tests: the stdlib fake vLLM (fixtures/tune/fake_vllm) in-process or as the
server `spec-doctor tune` launches, and a check that no process it started survives."""

from __future__ import annotations

import importlib.util
import os
import threading
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FAKE_ROOT = REPO / "fixtures" / "tune" / "fake_vllm"
FAKE_MODULE = FAKE_ROOT / "vllm" / "entrypoints" / "openai" / "api_server.py"


def load_fake(env: dict[str, str] | None = None):
    """The fake server module, imported fresh (its knobs are read from the environment at import)."""
    old = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    try:
        spec = importlib.util.spec_from_file_location(f"fake_vllm_{uuid.uuid4().hex}", FAKE_MODULE)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class InProcessFake:
    """The fake server on 127.0.0.1:<free port> in a thread."""

    def __init__(self, k: int = 0, env: dict[str, str] | None = None, model: str = "fake-model") -> None:
        mod = load_fake(env)
        mod.ThreadingHTTPServer.request_queue_size = 256
        self.state = mod.State(k, model)
        self.server = mod.ThreadingHTTPServer(("127.0.0.1", 0), mod.make_handler(self.state))
        self.server.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> InProcessFake:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def fake_env() -> dict[str, str]:
    """Environment for a `spec-doctor tune` subprocess whose `python -m vllm...` is the fake."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(FAKE_ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def processes_with(marker: str) -> list[int]:
    """PIDs whose command line contains ``marker`` (a unique model name given to the fake)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline and "pytest" not in cmdline and "spec_doctor" not in cmdline:
            found.append(int(entry.name))
    return found
