# SPDX-License-Identifier: Apache-2.0
"""Headless Chromium driven over the DevTools protocol, with the standard library only.

Chromium is started with --remote-debugging-pipe: it reads protocol commands from its fd 3 and
writes replies and events to its fd 4, each message a JSON text followed by a NUL byte. That
needs no websocket client and opens no port.

    with Chromium(find_chromium()) as browser:
        page = browser.open_page("/tmp/x.html", width=1280, height=1000)
        page.evaluate("document.title")
        page.errors, page.requests      # console errors, and every request the page made

Used by tests/browser/test_report.py and bench/report_render.py.
"""

import base64
import json
import os
import select
import shutil
import tempfile
import time

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium():
    """The path of a Chromium-like browser on PATH (or $CHROMIUM), or None."""
    explicit = os.environ.get("CHROMIUM")
    if explicit:
        return shutil.which(explicit)
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


class ProtocolError(RuntimeError):
    pass


class Chromium:
    def __init__(self, executable, timeout=60.0):
        self.executable = executable
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="cs-chromium-")
        self.log_path = os.path.join(self.profile, "chromium.log")
        self.next_id = 0
        self.buffer = b""
        self.events = []  # (sessionId, method, params) not yet consumed
        to_browser_r, self.to_browser = os.pipe()
        self.from_browser, from_browser_w = os.pipe()
        args = [
            executable, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
            "--user-data-dir=" + self.profile, "--no-first-run", "--no-default-browser-check",
            "--disable-extensions", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--disable-default-apps", "--mute-audio", "--hide-scrollbars",
            "--allow-file-access-from-files", "about:blank",
        ]
        actions = [
            (os.POSIX_SPAWN_DUP2, to_browser_r, 3),
            (os.POSIX_SPAWN_DUP2, from_browser_w, 4),
            (os.POSIX_SPAWN_OPEN, 1, self.log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
            (os.POSIX_SPAWN_DUP2, 1, 2),
        ]
        self.pid = os.posix_spawn(executable, args, os.environ, file_actions=actions)
        os.close(to_browser_r)
        os.close(from_browser_w)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self.pid is None:
            return
        try:
            self.send("Browser.close", timeout=5)
        except (ProtocolError, OSError):
            pass
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            done, _ = os.waitpid(self.pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.05)
        else:
            os.kill(self.pid, 9)
            os.waitpid(self.pid, 0)
        self.pid = None
        for fd in (self.to_browser, self.from_browser):
            os.close(fd)
        shutil.rmtree(self.profile, ignore_errors=True)

    def log_tail(self, lines=20):
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    # ---- messages ----

    def _read_message(self, deadline):
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ProtocolError("no answer from chromium in time; its log:\n" + self.log_tail())
            ready, _, _ = select.select([self.from_browser], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.from_browser, 1 << 20)
            if not chunk:
                raise ProtocolError("chromium closed the pipe; its log:\n" + self.log_tail())
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method, params=None, session=None, timeout=None):
        """Send one command and wait for its result; events seen meanwhile are queued."""
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise ProtocolError("%s: %s" % (method, reply["error"].get("message")))
                return reply.get("result", {})
            if "method" in reply:
                self.events.append((reply.get("sessionId"), reply["method"], reply.get("params", {})))

    def wait_event(self, session, method, timeout=None):
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            for i, (s, m, p) in enumerate(self.events):
                if s == session and m == method:
                    del self.events[i]
                    return p
            reply = self._read_message(deadline)
            if "method" in reply:
                self.events.append((reply.get("sessionId"), reply["method"], reply.get("params", {})))

    def open_page(self, path, width=1280, height=1000):
        """Open the file at path in a new tab and wait for its load event."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session, "file://" + os.path.abspath(path))
        for domain in ("Runtime", "Log", "Network", "Page"):
            self.send(domain + ".enable", session=session)
        page.resize(width, height)
        started = time.monotonic()
        self.send("Page.navigate", {"url": page.url}, session=session)
        self.wait_event(session, "Page.loadEventFired")
        page.load_s = time.monotonic() - started
        return page


class Page:
    """One tab: evaluate script, move the mouse, take screenshots; collects what went wrong."""

    def __init__(self, browser, session, url):
        self.browser = browser
        self.session = session
        self.url = url
        self._errors = []
        self._requests = []

    def _drain(self):
        keep = []
        for s, method, p in self.browser.events:
            if s != self.session:
                keep.append((s, method, p))
            elif method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                text = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
                self._errors.append("console.%s: %s" % (p["type"], text))
            elif method == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                self._errors.append("exception: %s %s" % (d.get("text", ""), d.get("exception", {}).get("description", "")))
            elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                self._errors.append("log: " + p["entry"].get("text", ""))
            elif method == "Network.requestWillBeSent":
                self._requests.append(p.get("request", {}).get("url", "?"))
        self.browser.events = keep

    @property
    def errors(self):
        self._drain()
        return list(self._errors)

    @property
    def requests(self):
        """Every URL the page asked for, its own included."""
        self._drain()
        return list(self._requests)

    def send(self, method, params=None):
        return self.browser.send(method, params, session=self.session)

    def evaluate(self, expression):
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            raise ProtocolError("evaluating %r: %s" % (expression, result["exceptionDetails"].get("text")))
        return result["result"].get("value")

    def wait_for(self, expression, timeout=30.0):
        """Poll until expression is truthy; returns its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise ProtocolError("timed out waiting for " + expression)
            time.sleep(0.02)

    def resize(self, width, height):
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def move_mouse(self, x, y):
        self.send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})

    def click(self, x, y):
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})

    def screenshot(self, path, full_page=False, clip=None):
        """The viewport, the whole page, or clip = (x, y, width, height) of the page."""
        params = {"format": "png"}
        if clip:
            params["clip"] = {"x": clip[0], "y": clip[1], "width": clip[2], "height": clip[3], "scale": 1}
        elif full_page:
            size = self.send("Page.getLayoutMetrics")["cssContentSize"]
            params["clip"] = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
            params["captureBeyondViewport"] = True
        data = self.send("Page.captureScreenshot", params)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
