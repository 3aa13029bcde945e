"""Check the built book in a real browser: pages load, links resolve, diagrams render.

`make docs-check` builds the site and runs this script on it. Each HTML page
of the site is loaded by headless Chromium from a server on 127.0.0.1 and
given ten seconds of virtual time for its JavaScript (Mermaid) to run; then:

- the page loaded: it has a <title> and an <h1>, and no script threw;
- every link into the site reaches a page or file that exists, and its
  #anchor an element id of the target page as the browser built it;
- every Mermaid block became an <svg>, and none says "Syntax error".

Material for MkDocs draws each diagram into a *closed* shadow root, which
`chromium --dump-dom` does not print. So instead of one `--dump-dom` run per
page, the script drives one Chromium over the DevTools protocol (JSON
messages on a pipe) and asks for the DOM with shadow roots included. Every
host but 127.0.0.1 is made unresolvable, so the book is checked as a student
without network sees it. Screenshots of the landing page and one chapter
land beside the log, to look at.

Usage: python scripts/docs_check.py SITE_DIR OUT_DIR
"""

import base64
import fcntl
import functools
import http.server
import json
import os
import pathlib
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import unquote, urljoin, urlsplit

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    "--remote-debugging-pipe",
]
VIRTUAL_TIME_MS = 10_000
WINDOW = {"width": 1280, "height": 2000}
SCREENSHOTS = {"/": "index.png", "/stage5_inductor_cpp/": "stage5_inductor_cpp.png"}
# A screenshot shows the page's first diagram: scrolled to it unless it is in view.
SCROLL_TO_DIAGRAM = """
const diagram = document.querySelector("div.mermaid");
if (diagram && diagram.getBoundingClientRect().bottom > innerHeight) {
    scrollTo(0, scrollY + diagram.getBoundingClientRect().top - 150);
}
"""
# Base URL for resolving links; any origin works, links to another are external.
SITE_ORIGIN = "http://site"


@dataclass
class Page:
    """What the check needs from one page's DOM, shadow roots included."""

    title: str = ""
    h1: str = ""
    ids: set[str] = field(default_factory=set)
    links: list[str] = field(default_factory=list)
    diagrams: list[str] = field(default_factory=list)  # per block: "" if drawn, else why not
    problems: list[str] = field(default_factory=list)


# -- Reading a DOM tree as DOM.getDocument(depth=-1, pierce=True) returns it --


def attributes(node):
    flat = node.get("attributes", [])
    return dict(zip(flat[::2], flat[1::2], strict=True))


def children(node):
    """Child nodes, shadow roots first (that is where Material puts a diagram)."""
    return node.get("shadowRoots", []) + node.get("children", [])


def elements(node):
    yield node
    for child in children(node):
        yield from elements(child)


def text(node):
    """The text a reader sees in `node` (style sheets and scripts are not text)."""
    if node.get("nodeType") == 3:
        return node.get("nodeValue", "")
    if node.get("localName") in ("style", "script"):
        return ""
    return "".join(text(child) for child in children(node))


def diagram_problem(block):
    """Why a Mermaid block was not drawn, or "" if it holds an <svg>."""
    words = " ".join(text(block).split())
    if "Syntax error" in words:
        return f"Mermaid says: {words[:80]}"
    if not any(node.get("localName") == "svg" for node in elements(block)):
        return f"not drawn, still the source text {words[:60]!r}"
    return ""


def read_page(document):
    page = Page()
    stack = [document]
    while stack:
        node = stack.pop()
        attrs = attributes(node)
        name = node.get("localName")
        if "id" in attrs:
            page.ids.add(attrs["id"])
        if name == "a" and "href" in attrs:
            page.links.append(attrs["href"])
        if name == "title" and not page.title:
            page.title = text(node).strip()
        if name == "h1" and not page.h1:
            page.h1 = text(node).strip()
        if name == "svg" and "Syntax error" in text(node):
            # Mermaid appends its "Syntax error in text" bomb to the end of <body>.
            page.problems.append("Mermaid drew its 'Syntax error in text' picture")
        if "mermaid" in attrs.get("class", "").split():
            page.diagrams.append(diagram_problem(node))
            continue  # a diagram's own ids and text are not the page's
        stack.extend(reversed(children(node)))
    return page


# -- Links --


def page_key(path):
    """The URL path a page is known by: `/stage4_fx/index.html` is `/stage4_fx/`."""
    return path.removesuffix("index.html")


def link_target(page_path, href):
    """(path, anchor) of an href on the page at `page_path`, or None if it leaves the site."""
    url = urlsplit(urljoin(SITE_ORIGIN + page_path, href))
    if f"{url.scheme}://{url.netloc}" != SITE_ORIGIN:
        return None
    return page_key(unquote(url.path)), unquote(url.fragment)


def link_problem(pages, site, page_path, href):
    """Why an href on a page is broken, or "" if it works (or leaves the site)."""
    target = link_target(page_path, href)
    if target is None:
        return ""
    path, anchor = target
    if path not in pages:
        file = site / path.lstrip("/")
        return "" if file.is_file() or (file / "index.html").is_file() else f"no page {path}"
    if anchor and anchor not in pages[path].ids:
        return f"no id #{anchor} in {path}"
    return ""


# -- Chromium over the DevTools protocol --


class Chromium:
    """One headless Chromium; `call` sends a DevTools command and returns its result.

    With --remote-debugging-pipe, Chromium reads commands from fd 3 and writes
    replies and events to fd 4, one JSON object per NUL-terminated message.
    """

    def __init__(self, exe, profile, log):
        to_chromium, self._commands = os.pipe()
        self._replies, from_chromium = os.pipe()

        def use_fds_3_and_4():
            # Moved out of the way first, so neither is clobbered by the other.
            read_end = fcntl.fcntl(to_chromium, fcntl.F_DUPFD, 10)
            write_end = fcntl.fcntl(from_chromium, fcntl.F_DUPFD, 10)
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)

        # preexec_fn is unsafe with threads: start Chromium before the server.
        self.process = subprocess.Popen(
            [exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            close_fds=False,
            preexec_fn=use_fds_3_and_4,
        )
        os.close(to_chromium)
        os.close(from_chromium)
        self._unread = b""
        self._last_id = 0
        self.session = None
        self.events = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Network"):
            self.call(f"{domain}.enable")
        self.call("Emulation.setDeviceMetricsOverride", deviceScaleFactor=1, mobile=False, **WINDOW)

    def call(self, method, **params):
        self._last_id += 1
        message = {"id": self._last_id, "method": method, "params": params}
        if self.session:
            message["sessionId"] = self.session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        reply = self._next(lambda m: m.get("id") == self._last_id, method)
        if "error" in reply:
            raise RuntimeError(f"Chromium refused {method}: {reply['error']['message']}")
        return reply["result"]

    def wait_for(self, event):
        return self._next(lambda m: m.get("method") == event, event)

    def _next(self, wanted, what, timeout=60):
        """Read messages until one is `wanted`; keep the events on the way."""
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" in self._unread:
                raw, self._unread = self._unread.split(b"\0", 1)
                message = json.loads(raw)
                if wanted(message):
                    return message
                if "method" in message:
                    self.events.append(message)
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._replies], [], [], left)[0]:
                raise TimeoutError(f"Chromium did not answer {what} in {timeout} s")
            chunk = os.read(self._replies, 1 << 20)
            if not chunk:
                raise RuntimeError(f"Chromium exited (code {self.process.wait()}) during {what}")
            self._unread += chunk

    def load(self, url):
        """Open `url`, let its scripts run for VIRTUAL_TIME_MS, return (DOM, events)."""
        self.events = []
        self.call("Emulation.setVirtualTimePolicy", policy="pause")
        error = self.call("Page.navigate", url=url).get("errorText")
        if error:
            raise RuntimeError(f"Chromium could not open {url}: {error}")
        self.call(
            "Emulation.setVirtualTimePolicy",
            policy="pauseIfNetworkFetchesPending",
            budget=VIRTUAL_TIME_MS,
        )
        self.wait_for("Emulation.virtualTimeBudgetExpired")
        return self.call("DOM.getDocument", depth=-1, pierce=True)["root"], self.events

    def screenshot(self, path):
        self.call("Runtime.evaluate", expression=SCROLL_TO_DIAGRAM)
        path.write_bytes(base64.b64decode(self.call("Page.captureScreenshot")["data"]))

    def close(self):
        os.close(self._commands)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


# -- The check --


def serve(site):
    """Serve the site on a free port of 127.0.0.1, in a daemon thread; return its origin."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_port}"


def page_paths(site):
    """URL paths of the site's HTML pages: `/`, `/stage4_fx/`, `/404.html`, ..."""
    files = [file.relative_to(site) for file in sorted(site.rglob("*.html"))]
    return ["/" + page_key(file.as_posix()) for file in files if file.parts[0] != "assets"]


def script_errors(events):
    for event in events:
        if event["method"] == "Runtime.exceptionThrown":
            details = event["params"]["exceptionDetails"]
            description = details.get("exception", {}).get("description") or details["text"]
            message = [line for line in description.splitlines() if not line.startswith("    at ")]
            yield "script error: " + " / ".join(message)[:300]


def outside_hosts(events, origin):
    for event in events:
        if event["method"] == "Network.requestWillBeSent":
            url = urlsplit(event["params"]["request"]["url"])
            if url.scheme in ("http", "https") and f"{url.scheme}://{url.netloc}" != origin:
                yield url.netloc


def check(site, out, chromium):
    log = open(out / "chromium.log", "w")  # noqa: SIM115  (open as long as Chromium runs)
    with tempfile.TemporaryDirectory() as profile:
        browser = Chromium(chromium, profile, log)
        origin = serve(site)
        pages, hosts = {}, set()
        try:
            for path in page_paths(site):
                document, events = browser.load(origin + path)
                page = pages[path] = read_page(document)
                page.problems += script_errors(events)
                hosts.update(outside_hosts(events, origin))
                if path in SCREENSHOTS:
                    browser.screenshot(out / SCREENSHOTS[path])
        finally:
            browser.close()
            log.close()
    return pages, hosts


def report(pages, site, out, hosts):
    """Print a line per page and a summary; return the number of failed pages."""
    failed = links = 0
    for path, page in pages.items():
        if not page.title or not page.h1:
            page.problems.insert(0, f"empty page (title {page.title!r}, h1 {page.h1!r})")
        for number, problem in enumerate(page.diagrams, 1):
            if problem:
                page.problems.append(f"diagram {number}: {problem}")
        for href in page.links:
            links += link_target(path, href) is not None
            problem = link_problem(pages, site, path, href)
            if problem:
                page.problems.append(f"broken link {href!r}: {problem}")
        drawn = page.diagrams.count("")
        counts = f"{len(page.links)} links, {drawn}/{len(page.diagrams)} diagrams drawn"
        if page.problems:
            failed += 1
            print(f"FAIL {path}  ({counts})")
            for problem in dict.fromkeys(page.problems):
                print(f"       {problem}")
        else:
            print(f"ok   {path}  ({counts})")
    diagrams = sum(len(p.diagrams) for p in pages.values())
    print(
        f"\n{len(pages)} pages, {failed} failed; {links} links into the site, "
        f"{diagrams} Mermaid diagrams checked."
    )
    if hosts:
        print(f"Blocked (checked offline), the pages asked for: {', '.join(sorted(hosts))}.")
    shots = ", ".join(str(out / name) for path, name in SCREENSHOTS.items() if path in pages)
    print(f"Screenshots ({WINDOW['width']}x{WINDOW['height']}): {shots}")
    return failed


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__.rsplit("\n\n", 1)[-1].strip())
    site, out = pathlib.Path(argv[1]), pathlib.Path(argv[2])
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("docs-check: no chromium on PATH (on Debian: apt-get install chromium)")
    out.mkdir(parents=True, exist_ok=True)
    try:
        pages, hosts = check(site, out, chromium)
    except (RuntimeError, TimeoutError, BrokenPipeError) as error:
        sys.exit(f"docs-check: {error} (Chromium's own messages: {out / 'chromium.log'})")
    return 1 if report(pages, site, out, hosts) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
