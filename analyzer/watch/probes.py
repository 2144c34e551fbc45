"""What watch asks besides the log: is the process alive and busy, does the health URL answer."""

from __future__ import annotations

import math
import os
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections import deque
from pathlib import Path
from typing import Any

HEALTH_INTERVAL = 0.5
HEALTH_TIMEOUT = 2.0
CPU_SAMPLE = 1.0


# --------------------------------------------------------------------------- process
class ProcessWatch:
    """Is the watched process (tree) alive, and is it using CPU? From /proc, polled."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.samples: deque[tuple[float, float]] = deque(maxlen=30)  # (monotonic, cpu seconds)
        self.last_sample = -math.inf
        self._tick = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0

    @staticmethod
    def _stat(pid: int) -> list[str] | None:
        try:
            raw = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        return raw[raw.rfind(")") + 2:].split()

    def alive(self) -> bool:
        """Running (a zombie counts as exited: its parent just has not reaped it yet)."""
        if Path("/proc/self/stat").exists():
            fields = self._stat(self.pid)
            return fields is not None and fields[0] not in ("Z", "X", "x")
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def _tree_cpu(self) -> float | None:
        """utime+stime of the process and its descendants (servers work in child processes)."""
        own = self._stat(self.pid)
        if own is None:
            return None
        children: dict[int, list[int]] = {}
        ticks: dict[int, float] = {}
        try:
            entries = [e for e in os.listdir("/proc") if e.isdigit()]
        except OSError:
            entries = []
        for entry in entries:
            st = self._stat(int(entry))
            if st is None or len(st) < 13:
                continue
            pid = int(entry)
            children.setdefault(int(st[1]), []).append(pid)
            ticks[pid] = float(st[11]) + float(st[12])
        total, todo, seen = 0.0, [self.pid], set()
        while todo:
            pid = todo.pop()
            if pid in seen:
                continue
            seen.add(pid)
            total += ticks.get(pid, 0.0)
            todo.extend(children.get(pid, []))
        if self.pid not in ticks:
            total += float(own[11]) + float(own[12])
        return total / self._tick

    def sample(self, now: float) -> None:
        if now - self.last_sample < CPU_SAMPLE:
            return
        self.last_sample = now
        cpu = self._tree_cpu()
        if cpu is not None:
            self.samples.append((now, cpu))

    def cpu_percent(self) -> float | None:
        """CPU use of the tree over the last few samples (100 = one core)."""
        if len(self.samples) < 2:
            return None
        (t0, c0), (t1, c1) = self.samples[max(0, len(self.samples) - 6)], self.samples[-1]
        return None if t1 <= t0 else max(0.0, 100.0 * (c1 - c0) / (t1 - t0))

    def record(self) -> dict[str, Any]:
        cpu = self.cpu_percent()
        return {"pid": self.pid, "alive": self.alive(),
                "cpu_percent": None if cpu is None else round(cpu, 1)}

    def text(self) -> str:
        rec = self.record()
        if not rec["alive"]:
            return f"process {self.pid}: not running"
        cpu = rec["cpu_percent"]
        if cpu is None:
            return f"process {self.pid}: alive (CPU use not measured yet)"
        busy = "busy: working, or spinning in a wait" if cpu >= 5 else "idle: likely blocked"
        return f"process {self.pid}: alive, {cpu:.0f}% CPU (process tree) — {busy}"


# --------------------------------------------------------------------------- health
class HealthProbe:
    """Polls a health URL in a background thread so a slow endpoint never delays a verdict."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.status: int | None = None
        self.error: str | None = None
        self.checks = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        host = urllib.parse.urlsplit(url).hostname or ""
        handlers: list[urllib.request.BaseHandler] = []
        if host in ("localhost", "127.0.0.1", "::1") or host.startswith("127."):
            handlers.append(urllib.request.ProxyHandler({}))  # a local server: never via a proxy
        self._opener = urllib.request.build_opener(*handlers)

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="loglens-health", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def check(self) -> None:
        """One bounded request."""
        try:
            with self._opener.open(self.url, timeout=HEALTH_TIMEOUT) as resp:
                self.status, self.error = int(resp.status), None
        except urllib.error.HTTPError as exc:
            self.status, self.error = int(exc.code), None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            self.status, self.error = None, str(reason)[:200]
        self.checks += 1

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.check()
            self._stop.wait(HEALTH_INTERVAL)

    def record(self) -> dict[str, Any]:
        return {"url": self.url, "status": self.status, "error": self.error}

    def text(self) -> str:
        if self.status is not None:
            return f"{self.url} answered {self.status}"
        if self.error:
            return f"{self.url}: {self.error}"
        return f"{self.url}: not checked yet"


