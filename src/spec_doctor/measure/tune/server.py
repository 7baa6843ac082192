"""Launch the user's vLLM on loopback and always stop it: its own process group, SIGINT then SIGTERM then
SIGKILL to the whole group (the API server, the engine core, the workers), on success, failure, Ctrl-C
or SIGTERM, and at interpreter exit for anything still running.
"""

from __future__ import annotations

import atexit
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from spec_doctor.engine.facts import InputError
from spec_doctor.parsers.cmdline import ParsedCommand, tokenize

LOOPBACK = "127.0.0.1"
_PYTHON = re.compile(r"^python(\d+(\.\d+)*)?$")
_ERROR_LINE = re.compile(r"(Error|Exception|error:|No module named|CUDA out of memory|Killed)")
_LIVE: set[VllmServer] = set()
_LIVE_LOCK = threading.Lock()


class LaunchError(Exception):
    """A variant's server did not come up; the message is one line."""


def port_free(port: int, host: str = LOOPBACK) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = LOOPBACK) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class Launcher:
    """How to start the user's vLLM: the program words to put before the arguments."""

    prefix: tuple[str, ...]
    program_words: int  # how many words of a rendered command are the program ("vllm serve" = 2)

    def argv(self, command: str) -> list[str]:
        """A rendered command line -> the argv to execute (leading VAR=value assignments dropped: they
        go to the environment)."""
        words = shlex.split(command)
        i = 0
        while i < len(words) and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[i]):
            i += 1
        return [*self.prefix, *words[i + self.program_words:]]


def resolve_launcher(parsed: ParsedCommand, vllm_python: str | None = None) -> Launcher:
    """The user's vLLM: --vllm-python, else the interpreter the command names, else `vllm` on PATH.
    InputError when none can be found."""
    program = parsed.program if parsed.program != "flags only" else "vllm serve"
    words = len(program.split())
    if vllm_python:
        exe = shutil.which(vllm_python) or (vllm_python if Path(vllm_python).is_file() else None)
        if not exe or not os.access(exe, os.X_OK):
            raise InputError(f"--vllm-python '{vllm_python}' is not an executable Python interpreter")
        if program.startswith("python -m "):
            return Launcher((exe, "-m", program.split()[-1]), words)
        return Launcher((exe, "-m", "vllm.entrypoints.cli.main", "serve"), words)
    if program.startswith("python -m "):
        interp = next((t for t in tokenize(parsed.text) if _PYTHON.match(t.rsplit("/", 1)[-1])), "python")
        exe = shutil.which(interp)
        if exe is None:
            raise InputError(f"the command's interpreter '{interp}' is not found here; pass --vllm-python "
                             "/path/to/venv/bin/python")
        return Launcher((exe, "-m", program.split()[-1]), words)
    exe = shutil.which("vllm")
    if exe is None:
        raise InputError("`vllm` is not on PATH here; run tune where vLLM is installed or pass --vllm-python "
                         "/path/to/venv/bin/python")
    return Launcher((exe, "serve"), words)


def _http_status(url: str, timeout: float) -> int | None:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=timeout) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except (urllib.error.URLError, OSError, ValueError):
        return None


def _default_sigint() -> None:
    # A server started from a context that ignores SIGINT (nohup, a background job) would inherit that
    # and ignore the polite stop; give it the default disposition (Python turns it into
    # KeyboardInterrupt, vLLM shuts down cleanly).
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class VllmServer:
    """One vLLM API server in its own process group on 127.0.0.1."""

    def __init__(self, argv: list[str], env: dict[str, str], log_path: Path, port: int) -> None:
        self.argv, self.env, self.log_path, self.port = list(argv), dict(env), Path(log_path), port
        self.proc: subprocess.Popen[bytes] | None = None
        self.base = f"http://{LOOPBACK}:{port}"
        self.startup_s: float | None = None

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "wb") as log:
            try:
                self.proc = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL, env=self.env, start_new_session=True,
                                             preexec_fn=_default_sigint)
            except OSError as exc:
                raise LaunchError(f"cannot start {self.argv[0]}: {exc.strerror or exc}") from None
        with _LIVE_LOCK:
            _LIVE.add(self)

    def wait_healthy(self, timeout_s: float, abort: Callable[[], bool] | None = None) -> float:
        """Seconds to healthy (GET /health = 200). LaunchError when the process exits or the time runs out."""
        assert self.proc is not None
        t0 = time.monotonic()
        while True:
            rc = self.proc.poll()
            if rc is not None:
                why = self.last_error()
                raise LaunchError(f"the server exited with code {rc} before becoming healthy"
                                  + (f": {why}" if why else f" (see {self.log_path})"))
            if _http_status(self.base + "/health", timeout=2.0) == 200:
                self.startup_s = time.monotonic() - t0
                return self.startup_s
            if time.monotonic() - t0 > timeout_s:
                raise LaunchError(f"the server did not become healthy within {timeout_s:.0f} s "
                                  f"(log: {self.log_path})")
            if abort is not None and abort():
                raise LaunchError("stopped: out of time budget while the server was starting")
            time.sleep(0.5)

    def last_error(self) -> str | None:
        try:
            lines = self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-300:]
        except OSError:
            return None
        hits = [ln.strip() for ln in lines if _ERROR_LINE.search(ln)]
        return hits[-1][:300] if hits else None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, grace_s: float = 20.0) -> int | None:
        """Stop the whole process group; returns the server's exit code. Safe to call twice."""
        proc = self.proc
        if proc is None:
            return None
        if proc.poll() is None:
            for sig, wait in ((signal.SIGINT, grace_s), (signal.SIGTERM, 10.0), (signal.SIGKILL, 10.0)):
                try:
                    os.killpg(proc.pid, sig)
                except (ProcessLookupError, PermissionError):
                    break
                try:
                    proc.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        try:  # children that outlived the API server (engine core, workers)
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        with _LIVE_LOCK:
            _LIVE.discard(self)
        return proc.poll()

    def __enter__(self) -> VllmServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def stop_all() -> None:
    """Stop every server this process started and has not stopped yet."""
    with _LIVE_LOCK:
        live = list(_LIVE)
    for srv in live:
        srv.stop(grace_s=5.0)


atexit.register(stop_all)


class TerminationGuard:
    """While active, SIGTERM and SIGHUP raise KeyboardInterrupt in the main thread, so the same finally
    blocks that handle Ctrl-C stop the servers (`timeout`, a closed terminal, a CI cancel)."""

    def __enter__(self) -> TerminationGuard:
        self._old: dict[int, object] = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGHUP):
                self._old[sig] = signal.signal(sig, self._raise)
        return self

    @staticmethod
    def _raise(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    def __exit__(self, *exc: object) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)  # type: ignore[arg-type]
        stop_all()
