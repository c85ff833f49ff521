"""One headless chromium, driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`).

`chromium --screenshot` and `--dump-dom` start a browser and load the page for every picture and every dump: the
report browser test took its ten screenshots of the ~3 MB report page that way, each ~1 s of browser start and ~2.5 s
of page load, after a dump of the same page with its probe script (18-24 s of wall on 2 cores, 2026-12-06). Here one
browser serves every tab; a tab loads its page once and is then restyled and photographed, and tabs load at once.
Standard library only: the protocol is JSON messages, each ended by a NUL byte, read by the browser on its fd 3
(commands) and written on its fd 4 (replies and events).
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import signal
import time
from typing import Any

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run", "--disable-extensions",
         # every tab but one is a background tab: without these its timers are throttled to one a second (the probe
         # script waits 200 ms after expanding every row) and a hidden page paints nothing
         "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
         "--disable-backgrounding-occluded-windows")

# Resolves with the page's address once it has loaded: an evaluation that reached the tab's previous page (before
# the navigation committed) answers with that page's address instead, and is asked again
_LOADED = ("new Promise(function (done) { if (document.readyState === 'complete') { done(location.href); } "
           "else { window.addEventListener('load', function () { done(location.href); }); } })")


class ChromiumError(RuntimeError):
    pass


class Chromium:
    """A browser for `timeout` seconds at most (every call after that raises ChromiumError); a context manager."""

    def __init__(self, binary: str, timeout: float) -> None:
        self.deadline = time.monotonic() + timeout
        to_browser, self._out = os.pipe()
        self._in, from_browser = os.pipe()
        # Above 3 and 4 first, so that neither DUP2 below overwrites the other end (a pipe's fds may be 3 and 4)
        ends = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (to_browser, from_browser)]
        null = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
        # posix_spawn, not Popen with a preexec_fn to place the fds: an xdist worker runs threads
        self.pid = os.posix_spawn(binary, [binary, *FLAGS, "--remote-debugging-pipe"], dict(os.environ),
                                  file_actions=[(os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, null, 1),
                                                (os.POSIX_SPAWN_DUP2, null, 2), (os.POSIX_SPAWN_DUP2, ends[0], 3),
                                                (os.POSIX_SPAWN_DUP2, ends[1], 4)])
        for fd in (to_browser, from_browser, *ends, null):
            os.close(fd)
        self._buffer, self._last_id = b"", 0
        self._events: list[dict[str, Any]] = []

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _message(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = self.deadline - time.monotonic()
            if left <= 0 or not select.select([self._in], [], [], left)[0]:
                raise ChromiumError("chromium did not answer in time")
            chunk = os.read(self._in, 1 << 20)
            if not chunk:
                raise ChromiumError("chromium closed its DevTools pipe (it exited)")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        """Send one command (to a tab's session, or to the browser) and return its result; events that arrive
        meanwhile are kept for event()."""
        self._last_id += 1
        message: dict[str, Any] = {"id": self._last_id, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        data = json.dumps(message).encode() + b"\0"
        while data:
            data = data[os.write(self._out, data):]
        while True:
            reply = self._message()
            if reply.get("id") == self._last_id:
                if "error" in reply:
                    raise ChromiumError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self._events.append(reply)

    def open(self, url: str, size: tuple[int, int] | None = None) -> str:
        """A new tab navigating to `url` (its viewport `size` in CSS pixels, else the browser's default); returns
        its session at once, so that several tabs load together (loaded() waits)."""
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        if size is not None:
            self.call("Emulation.setDeviceMetricsOverride", session, width=size[0], height=size[1],
                      deviceScaleFactor=1, mobile=False)
        self.call("Page.navigate", session, url=url)
        return session

    def loaded(self, session: str, url: str) -> None:
        """Wait until the tab's page at `url` (fragment aside) has loaded."""
        while self.evaluate(session, _LOADED).split("#")[0] != url.split("#")[0]:
            time.sleep(0.05)

    def evaluate(self, session: str, expression: str) -> Any:
        """The value of a JavaScript expression in the tab (a promise is awaited)."""
        result = self.call("Runtime.evaluate", session, expression=expression, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in result:
            raise ChromiumError(f"{expression[:80]}...: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, session: str) -> bytes:
        """The tab's viewport as a PNG."""
        self.call("Page.bringToFront", session)
        return base64.b64decode(self.call("Page.captureScreenshot", session, format="png")["data"])

    def close(self) -> None:
        self.deadline = min(self.deadline, time.monotonic() + 10)
        try:
            self.call("Browser.close")
        except ChromiumError:
            pass  # it exits as it answers, or is gone already
        finally:
            os.close(self._in)
            os.close(self._out)
            end = time.monotonic() + 30
            while os.waitpid(self.pid, os.WNOHANG) == (0, 0):
                if time.monotonic() > end:
                    os.kill(self.pid, signal.SIGKILL)
                    os.waitpid(self.pid, 0)
                    break
                time.sleep(0.05)
