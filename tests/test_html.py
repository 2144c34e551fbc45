"""The post-mortem HTML page: self-contained, inert log text, one Gantt lane per rank.

Two layers:

* structure tests parse the generated HTML with the standard library only (CSP meta,
  no script, no external resource, lanes, escaping of hostile log lines);
* browser tests (`-m browser`) open the page from `file://` in headless Chromium and
  drive it over the Chrome DevTools protocol on `--remote-debugging-pipe` (stdlib only,
  no websocket library): no console error, no network request other than the page
  itself, no JavaScript dialog, the verdict and root cause visible, one lane per rank,
  and a screenshot. They skip with a reason when `/usr/bin/chromium` is missing.

`python tests/test_html.py LOG OUT.png` writes the screenshot used in the README with the
same tooling (`tests/screenshots/report.png`).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python tests/test_html.py` from anywhere
    sys.path.insert(0, str(ROOT))

from analyzer import api  # noqa: E402
from analyzer.analysis.collector import MAX_POINTS, Series  # noqa: E402
from analyzer.report.postmortem_html import CSP, render_html  # noqa: E402
from analyzer.report.postmortem_md import render_markdown  # noqa: E402

CORPUS = ROOT / "corpus"
TP8_OOM = CORPUS / "seed" / "seed-sglang-tp8-oom-sigquit-logging-error.log"
VLLM_METRICS = CORPUS / "negatives" / "vllm-v1-docker-desktop-wsl-eager-slow-healthy.log"
CHROMIUM = os.environ.get("LOGLENS_CHROMIUM", "/usr/bin/chromium")
SCREENSHOT_DIR = os.environ.get("LOGLENS_SCREENSHOT_DIR")  # keep the PNGs for a look

INJECTIONS = (
    "<script>alert(1)</script>",
    "</svg><script>window.__pwned=1</script>",
    '"><img src=x onerror=alert(1)>',
    "javascript:alert(1)",
    "</title><style>body{display:none}</style>",
    "<a href=\"http://evil.example/x\">click</a>",
)


# ------------------------------------------------------------------------- helpers
class _Collect(HTMLParser):
    """Tags, attributes, the title and the lanes of one page (stdlib parser)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.title = ""  # the document title (SVG <title> tooltips are not it)
        self.head_titles = 0
        self._in_title = False
        self._in_head = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "head":
            self._in_head = True
        self._in_title = tag == "title" and self._in_head
        self.head_titles += self._in_title

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag == "head":
            self._in_head = False

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data


def parse(page: str) -> _Collect:
    c = _Collect()
    c.feed(page)
    c.close()
    return c


def lanes(c: _Collect) -> list[dict[str, str | None]]:
    return [a for t, a in c.tags if t == "g" and "lane" in (a.get("class") or "").split()]


def build_page(path: Path, **kw: Any) -> tuple[dict[str, Any], str]:
    data = api.postmortem([str(path)], **kw)
    return data, render_html(data)


def hostile_log(tmp: Path) -> Path:
    """A real SGLang failure whose lines carry HTML/JS payloads in every position."""
    lines = [
        "[2026-02-22 23:13:41] server_args=ServerArgs(model_path='/m/<script>alert(1)</script>',"
        " tp_size=2, host='0.0.0.0', port=30000, api_key='\"><img src=x onerror=alert(1)>')",
    ]
    for tp in (0, 1):
        lines.append(f"[2026-02-22 23:13:52 TP{tp}] Init torch distributed begin.")
    for tp in (0, 1):
        lines.append(f"[2026-02-22 23:13:57 TP{tp}] Init torch distributed ends. mem usage=0.91 GB")
    for tp in (0, 1):
        lines.append(f"[2026-02-22 23:14:01 TP{tp}] Load weight begin. avail mem=94.12 GB")
    for payload in INJECTIONS:
        lines.append(f"[2026-02-22 23:14:02 TP0] WARNING warn.py:1: {payload}")
    lines += [
        "[2026-02-22 23:19:14 TP1] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/srv/</svg><script>alert(1)</script>.py", line 1, in <module>',
        "    raise RuntimeError(",
        "RuntimeError: Not enough memory. <script>alert(1)</script> </svg> "
        '"><img src=x onerror=alert(1)> javascript:alert(1) --mem-fraction-static',
        "",
        "[2026-02-22 23:19:14] Received sigquit from a child process. It usually means the child "
        "failed. <img src=x onerror=alert(1)>",
    ]
    path = tmp / "hostile-<script>.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# ------------------------------------------------------------------------- structure
def test_page_is_self_contained() -> None:
    _, page = build_page(TP8_OOM)
    c = parse(page)
    metas = [a for t, a in c.tags if t == "meta" and a.get("http-equiv")]
    assert any(a.get("http-equiv") == "Content-Security-Policy" and a.get("content") == CSP
               for a in metas)
    assert "default-src 'none'" in CSP
    assert "<script" not in page.lower()
    tags = {t for t, _ in c.tags}
    assert not tags & {"script", "iframe", "object", "embed", "link", "img", "base", "form"}
    for tag, attrs in c.tags:
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            if name in ("src", "href", "xlink:href", "action", "poster", "data"):
                assert value is not None and value.startswith("#"), (tag, name, value)
    assert not re.search(r"url\(\s*['\"]?(?:https?:)?//", page), "CSS must load nothing"
    assert "@import" not in page and "@font-face" not in page


def test_one_gantt_lane_per_rank() -> None:
    data, page = build_page(TP8_OOM)
    c = parse(page)
    drawn = lanes(c)
    ranks = [a.get("data-rank") for a in drawn if a.get("data-rank")]
    assert sorted(ranks, key=int) == [str(r) for r in range(8)], ranks
    phase_keys = {(p["rank"], p["process"]) for p in data["report"]["phases"]}
    assert len(drawn) == len({(a.get("data-rank"), a.get("data-process")) for a in drawn})
    assert len(drawn) >= len(phase_keys)
    # the failure is marked on the timeline, and the verdict and root cause are on the page
    assert any(a.get("id") == "failure-marker" for _, a in c.tags)
    assert "CRASH" in page and "Not enough memory" in page
    assert 'id="timeline-svg"' in page


def test_metrics_charts_when_the_log_has_them() -> None:
    data, page = build_page(VLLM_METRICS)
    titles = [m["title"] for m in data["metrics"]]
    assert titles == ["Generation throughput", "Prompt / prefill throughput", "Requests",
                      "KV cache / token usage"]
    gen = next(s for m in data["metrics"] for s in m["series"] if s["label"] == "generation")
    assert gen["samples"] == 29 and gen["max"] == pytest.approx(7.1)
    assert page.count('class="metric"') == 4


def test_environment_from_check_env_collect_env_and_banners(tmp_path: Path) -> None:
    log = tmp_path / "env.log"
    log.write_text(
        "Python: 3.10.12 (main, Nov 20 2023, 15:14:05) [GCC 11.4.0]\n"
        "GPU 0,1,2,3: NVIDIA H100 80GB HBM3\n"
        "CUDA Driver Version: 550.54.15\n"
        "PyTorch: 2.5.1+cu124\n"
        "sglang: 0.4.1.post3\n"
        "flashinfer: 0.1.6+cu124torch2.4\n"
        "ROCM used to build PyTorch: N/A\n"
        "[2025-01-01 10:00:00] server_args=ServerArgs(model_path='meta-llama/Llama-3.1-8B', "
        "tp_size=4, host='127.0.0.1', port=30000)\n"
        "[2025-01-01 10:00:06 TP0] sglang is using nccl==2.21.5\n"
        "[2025-01-01 10:00:07 TP0] Decode batch. #running-req: 3, #token: 1024, token usage: "
        "0.12, gen throughput (token/s): 45.30, #queue-req: 2\n", encoding="utf-8")
    data, page = build_page(log)
    env = data["environment"]
    versions = {v["name"]: v["value"] for v in env["versions"]}
    assert versions == {"Python": "3.10.12", "GPU driver": "550.54.15",
                        "PyTorch": "2.5.1+cu124", "SGLang": "0.4.1.post3",
                        "FlashInfer": "0.1.6+cu124torch2.4", "NCCL": "2.21.5"}
    assert env["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3" and env["gpus"][0]["ids"] == "0,1,2,3"
    assert env["model"] == "meta-llama/Llama-3.1-8B" and env["args"]["tp_size"] == 4
    assert "0.4.1.post3" in page and "NVIDIA H100 80GB HBM3" in page and "mem_fraction" not in page
    usage = next(m for m in data["metrics"] if m["metric"] == "usage")
    assert usage["series"][0]["points"][0][1] == pytest.approx(12.0)  # token usage in %


def test_metric_series_are_downsampled() -> None:
    s = Series("throughput", "gen", "tokens/s")
    for i in range(50_000):
        s.add(float(i), 1000.0 if i == 31_337 else float(i % 7), i)
    out = s.finish()
    assert len(out["points"]) <= MAX_POINTS
    assert out["max"] == 1000.0 and out["samples"] == 50_000 and out["downsampled"]


def test_hostile_log_text_stays_text(tmp_path: Path) -> None:
    log = hostile_log(tmp_path)
    _, page = build_page(log, redact=False)
    c = parse(page)
    assert "<script" not in page.lower()
    assert not [t for t, _ in c.tags if t in ("script", "img", "style") and t != "style"]
    assert sum(1 for t, _ in c.tags if t == "style") == 1  # only ours
    assert c.head_titles == 1
    assert not [t for t, _ in c.tags if t == "a" and not (_.get("href") or "").startswith("#")]
    assert c.title.startswith("loglens post-mortem: ")
    for tag, attrs in c.tags:
        assert not any(name.startswith("on") for name in attrs), (tag, attrs)
    # the payloads are there, as escaped text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;/svg&gt;" in page
    assert "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;" in page
    assert "javascript:alert(1)" in page  # harmless as text, never in an href
    # exactly the SVGs we drew, each closed by us
    assert page.count("<svg") == page.count("</svg>")


def test_redaction_reaches_every_section(tmp_path: Path) -> None:
    log = tmp_path / "secrets.log"
    log.write_text(
        "[2026-01-01 10:00:00] server_args=ServerArgs(model_path='/home/alice/models/llama', "
        "api_key='topsecret-123', host='gpu-node-7.corp.internal', port=30000, tp_size=1)\n"
        "[2026-01-01 10:00:01] Init torch distributed begin.\n"
        "[2026-01-01 10:00:02] gpu-node-7:123:456 [0] NCCL INFO NET/Socket : "
        "Using eth0:10.1.2.3<0>\n"
        "[2026-01-01 10:00:03] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/home/alice/sglang/x.py", line 1, in f\n'
        "RuntimeError: cannot reach gpu-node-7 (10.1.2.3) with token "
        "hf_abcdefghijklmnopqrstuvwxyz123456\n",
        encoding="utf-8")
    data, page = build_page(log)
    md = render_markdown(data)
    for secret in ("alice", "topsecret-123", "gpu-node-7", "10.1.2.3", "hf_abcdefghij"):
        assert secret not in page, secret
        assert secret not in md, secret
        assert secret not in json.dumps(data), secret
    kinds = {s["kind"] for s in data["redaction"]["summary"]}
    assert {"user", "api-key", "hostname", "ip", "hf-token"} <= kinds
    assert 'id="redaction"' in page and "host-1" in page
    assert "**Redacted:**" in md and "hostnames: " in md


def test_no_redact_keeps_text_and_warns(tmp_path: Path) -> None:
    log = tmp_path / "plain.log"
    log.write_text('Traceback (most recent call last):\n  File "x.py", line 1, in <module>\n'
                   "RuntimeError: cannot connect to gpu-node-7\n", encoding="utf-8")
    data, page = build_page(log, redact=False)
    assert "gpu-node-7" in page
    assert "Not redacted" in page
    assert data["redaction"]["enabled"] is False


def test_markdown_report_is_bounded_and_has_a_text_timeline() -> None:
    data = api.postmortem([str(TP8_OOM)])
    md = render_markdown(data)
    assert len(md) < 60_000
    assert "#### Timeline chart" in md
    chart = md.split("#### Timeline chart", 1)[1]
    for tp in range(8):
        assert f"TP{tp}" in chart
    assert "X=failure (line 68)" in chart
    assert "**Redacted:**" in md


def test_every_corpus_case_renders() -> None:
    for log in sorted(CORPUS.rglob("*.log")):
        data, page = build_page(log)
        assert page.startswith("<!DOCTYPE html>"), log
        assert "<script" not in page.lower(), log
        assert len(render_markdown(data)) < 60_000, log


# ------------------------------------------------------------------------- browser
class DevTools:
    """A minimal Chrome DevTools protocol client over `--remote-debugging-pipe` (stdlib only).

    Chromium reads NUL-terminated JSON commands on fd 3 and writes replies and events on
    fd 4. Events are kept in `self.events` for the assertions.
    """

    def __init__(self, chromium: str, profile: str, width: int = 1400, height: int = 1000) -> None:
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def _fds() -> None:  # in the child: the pipes become fds 3 and 4, inheritable
            # Move both out of the way first: either may already be fd 3 or 4.
            a = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)

        self.proc = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-default-apps", "--disable-extensions", "--no-first-run",
             "--no-default-browser-check", "--mute-audio", "--hide-scrollbars",
             f"--user-data-dir={profile}", f"--window-size={width},{height}",
             "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=_fds, close_fds=False)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buf = b""
        self._id = 0
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None

    def send(self, method: str, params: dict[str, Any] | None = None, *,
             session: bool = True, timeout: float = 20.0) -> dict[str, Any]:
        """Send one command and wait for its reply (events that arrive meanwhile are kept)."""
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self._to_chrome, json.dumps(msg).encode() + b"\0")
        want = self._id
        deadline = time.monotonic() + timeout
        while True:
            reply = self._next(deadline)
            if reply.get("id") == want:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return dict(reply.get("result") or {})
            if "method" in reply:
                self.events.append(reply)

    def wait_for(self, method: str, timeout: float = 20.0) -> dict[str, Any]:
        """Wait for an event (or return one already received)."""
        for ev in self.events:
            if ev["method"] == method:
                return ev
        deadline = time.monotonic() + timeout
        while True:
            msg = self._next(deadline)
            if "method" in msg:
                self.events.append(msg)
                if msg["method"] == method:
                    return msg

    def _next(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no reply from chromium")
            ready, _, _ = select.select([self._from_chrome], [], [], left)
            if ready:
                chunk = os.read(self._from_chrome, 1 << 20)
                if not chunk:
                    raise RuntimeError("chromium closed the DevTools pipe")
                self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return dict(json.loads(raw))

    def open(self, url: str) -> None:
        """A fresh tab with console, log, network and page domains on; load `url`."""
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)
        attached = self.send("Target.attachToTarget",
                             {"targetId": target["targetId"], "flatten": True}, session=False)
        self.session = attached["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable")
        self.events.clear()
        self.send("Page.navigate", {"url": url})
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        """Evaluate in the page (DevTools bypasses the page's CSP) and return the value."""
        res = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in res:
            raise RuntimeError(res["exceptionDetails"])
        return res["result"].get("value")

    def screenshot(self, path: Path, height: int | None = None, top: int = 0) -> None:
        """A PNG of the page (all of it, or `height` px from `top`)."""
        size = self.evaluate("[document.documentElement.scrollWidth,"
                             " document.documentElement.scrollHeight]")
        top = max(0, min(top, size[1] - 1))
        clip = {"x": 0, "y": top, "width": size[0],
                "height": min(size[1] - top, height or size[1]), "scale": 1}
        shot = self.send("Page.captureScreenshot",
                         {"format": "png", "clip": clip, "captureBeyondViewport": True})
        path.write_bytes(base64.b64decode(shot["data"]))

    def problems(self, page_url: str) -> list[str]:
        """Console errors, exceptions, dialogs, and any request other than the page itself."""
        out = []
        for ev in self.events:
            method, p = ev["method"], ev.get("params", {})
            if method == "Runtime.exceptionThrown":
                out.append(f"exception: {p.get('exceptionDetails', {}).get('text')}")
            elif method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(f"console.{p.get('type')}: {p.get('args')}")
            elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append(f"log: {p['entry'].get('text')}")
            elif method == "Page.javascriptDialogOpening":
                out.append(f"dialog: {p.get('message')}")
            elif method == "Network.requestWillBeSent":
                url = p.get("request", {}).get("url", "")
                if url.split("#")[0] != page_url.split("#")[0]:
                    out.append(f"request: {url}")
        return out

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, TimeoutError, OSError):
            self.send("Browser.close", session=False, timeout=5)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_chrome, self._from_chrome):
            with contextlib.suppress(OSError):
                os.close(fd)


PAGE_FACTS = """(() => {
  const vis = (el) => !!el && el.getBoundingClientRect().height > 0 &&
                      getComputedStyle(el).visibility !== 'hidden' &&
                      getComputedStyle(el).display !== 'none';
  const q = (s) => document.querySelector(s);
  const lanes = [...document.querySelectorAll('#timeline-svg g.lane')];
  return {
    title: document.title,
    verdict: vis(q('#verdict')) ? q('#verdict').innerText : null,
    headline: vis(q('#headline')) ? q('#headline').innerText : null,
    root: vis(q('#root-text')) ? q('#root-text').innerText : null,
    timeline: vis(q('#timeline-svg')),
    failure: vis(q('#failure-marker')),
    ranks: lanes.map((g) => g.getAttribute('data-rank')).filter((r) => r !== ''),
    lanes: lanes.length,
    scripts: document.scripts.length,
    images: document.images.length,
    iframes: document.querySelectorAll('iframe,object,embed').length,
    pwned: typeof window.__pwned !== 'undefined',
    styles: document.querySelectorAll('style').length,
    bodyShown: getComputedStyle(document.body).display !== 'none',
  };
})()"""


def _browser() -> str:
    if not Path(CHROMIUM).exists() or not shutil.which(CHROMIUM):
        pytest.skip(f"{CHROMIUM} not installed (apt-get install chromium chromium-driver)")
    return CHROMIUM


def _open_page(tmp_path: Path, page: str, name: str) -> tuple[DevTools, str]:
    html_path = tmp_path / f"{name}.html"
    html_path.write_text(page, encoding="utf-8")
    url = html_path.as_uri()
    tools = DevTools(_browser(), str(tmp_path / f"profile-{name}"))
    try:
        tools.open(url)
    except Exception:
        tools.close()
        raise
    return tools, url


def _keep(tmp: Path, name: str) -> Path:
    if SCREENSHOT_DIR:
        Path(SCREENSHOT_DIR).mkdir(parents=True, exist_ok=True)
        return Path(SCREENSHOT_DIR) / f"{name}.png"
    return tmp / f"{name}.png"


@pytest.mark.browser
def test_browser_real_corpus_report(tmp_path: Path) -> None:
    _, page = build_page(TP8_OOM)
    tools, url = _open_page(tmp_path, page, "tp8-oom")
    try:
        facts = tools.evaluate(PAGE_FACTS)
        shot = _keep(tmp_path, "tp8-oom")
        tools.screenshot(shot)
        problems = tools.problems(url)
    finally:
        tools.close()
    assert problems == []
    assert facts["verdict"] == "CRASH"
    assert "kv cache insufficient" in facts["headline"]
    assert "Not enough memory" in facts["root"]
    assert facts["timeline"] and facts["failure"]
    assert sorted(facts["ranks"], key=int) == [str(r) for r in range(8)]
    assert facts["scripts"] == 0 and facts["images"] == 0
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


@pytest.mark.browser
def test_browser_metrics_report(tmp_path: Path) -> None:
    _, page = build_page(VLLM_METRICS)
    tools, url = _open_page(tmp_path, page, "vllm-metrics")
    try:
        facts = tools.evaluate(PAGE_FACTS)
        charts = tools.evaluate(
            "[...document.querySelectorAll('svg.metric')].filter("
            "(s) => s.getBoundingClientRect().width > 300).length")
        tools.screenshot(_keep(tmp_path, "vllm-metrics"))
        problems = tools.problems(url)
    finally:
        tools.close()
    assert problems == []
    assert facts["verdict"] == "HEALTHY" and facts["timeline"]
    assert charts == 4


@pytest.mark.browser
def test_browser_injected_html_runs_nothing(tmp_path: Path) -> None:
    _, page = build_page(hostile_log(tmp_path), redact=False)
    expected_title = parse(page).title
    tools, url = _open_page(tmp_path, page, "hostile")
    try:
        facts = tools.evaluate(PAGE_FACTS)
        text = tools.evaluate("document.body.innerText")
        tools.screenshot(_keep(tmp_path, "hostile"), height=1600)
        problems = tools.problems(url)
    finally:
        tools.close()
    assert problems == []  # no alert dialog, no console error, no request for "x"
    assert facts["title"] == expected_title
    assert facts["scripts"] == 0 and facts["images"] == 0 and facts["iframes"] == 0
    assert facts["pwned"] is False and facts["bodyShown"] and facts["styles"] == 1
    assert "<script>alert(1)</script>" in text  # shown as text
    assert '"><img src=x onerror=alert(1)>' in text
    assert facts["root"] and "Not enough memory" in facts["root"]


def main(argv: list[str]) -> int:
    """`python tests/test_html.py LOG OUT.png [HEIGHT | SECTION-ID]`: the README screenshot.

    With a section id (e.g. `timeline`) the picture ends just below that section.
    """
    if len(argv) < 2:
        print(main.__doc__, file=sys.stderr)
        return 2
    log, out = Path(argv[0]), Path(argv[1])
    until = argv[2] if len(argv) > 2 else None
    data = api.postmortem([str(log)])
    with tempfile.TemporaryDirectory() as tmp:
        html_path = Path(tmp) / "report.html"
        html_path.write_text(render_html(data), encoding="utf-8")
        tools = DevTools(CHROMIUM, str(Path(tmp) / "profile"))
        try:
            tools.open(html_path.as_uri())
            out.parent.mkdir(parents=True, exist_ok=True)
            height = None
            if until is not None and until.isdigit():
                height = int(until)
            elif until is not None:
                height = int(tools.evaluate(
                    f"document.getElementById({json.dumps(until)})"
                    ".getBoundingClientRect().bottom + window.scrollY + 14"))
            tools.screenshot(out, height=height)
            problems = tools.problems(html_path.as_uri())
        finally:
            tools.close()
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
