"""hearth's web page in a real browser: Debian's Chromium, headless, driven
by Selenium. Signs in, chats (streaming, stop, a new conversation, reopening
the old one), answers tool calls that ask, and tries what a hostile page
open in the same browser would: send a message, answer a question (even
knowing its id) and read the box from another origin. Prints what it saw as
JSON; the Rust test (tests/web_page.rs) checks the daemon's side.

Usage: web_page.py GATEWAY_URL TOKEN SHOTS_DIR [expiry-sign-in|expiry-later|box|questions]
"""

import http.server
import json
import sys
import threading
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

GATEWAY, TOKEN, SHOTS = sys.argv[1], sys.argv[2], sys.argv[3]
MODE = sys.argv[4] if len(sys.argv) > 4 else "full"
WAIT = 60


def log(*what):
    print(*what, file=sys.stderr, flush=True)


def browser(width=1280, height=860):
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu",
                "--disable-dev-shm-usage", f"--window-size={width},{height}"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    return webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))


def until(driver, check, what):
    try:
        # The box refreshes itself: an element may be replaced while looked at.
        return WebDriverWait(driver, WAIT, poll_frequency=0.05, ignored_exceptions=(
            StaleElementReferenceException, NoSuchElementException, AttributeError)).until(lambda d: check(d))
    except Exception as e:
        raise AssertionError(f"waited {WAIT} s for {what}; the page shows: "
                             f"{driver.find_element(By.TAG_NAME, 'body').text[:2000]!r}") from e


def press(driver, find, what):
    """Clicks what `find` finds, again if the page replaced it meanwhile."""
    until(driver, lambda d: find(d).click() or True, f"the {what} button")


def visible(driver, element_id):
    return driver.find_element(By.ID, element_id).is_displayed()


def network(driver):
    """Every request of the browser's log since the last call, with bytes."""
    requests, sizes = {}, {}
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        params = message.get("params", {})
        if message["method"] == "Network.requestWillBeSent":
            requests[params["requestId"]] = params["request"]["url"]
        elif message["method"] == "Network.webSocketCreated":
            requests[params["requestId"]] = params["url"]
        elif message["method"] == "Network.loadingFinished":
            sizes[params["requestId"]] = params.get("encodedDataLength", 0)
    return [{"url": url, "bytes": sizes.get(rid, 0)} for rid, url in requests.items()]


def sign_in(driver, token):
    driver.get(GATEWAY + "/")
    until(driver, lambda d: visible(d, "signin"), "the sign-in form")
    field = driver.find_element(By.ID, "token")
    field.clear()
    field.send_keys(token)
    driver.find_element(By.CSS_SELECTOR, "#signin-form button").click()


# The hint a new conversation opens with (not a message of it).
HINT = "A new conversation:"


def all_items(driver):
    # Read in one step: the page may replace an item while it is read.
    return [tuple(item) for item in driver.execute_script(
        "return [...document.querySelectorAll('#messages > li')]"
        ".map((li) => [li.className, li.innerText.trim()]);")]


def texts(driver, css):
    """The text of each element `css` finds, read in one step (the page
    redraws its lists when a reply ends)."""
    return driver.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map((e) => e.innerText.trim());", css)


def messages(driver):
    return [(k, t) for k, t in all_items(driver) if not (k == "notice" and t.startswith(HINT))]


def say(driver, text):
    box = driver.find_element(By.ID, "input")
    driver.execute_script("arguments[0].value = arguments[1]", box, text)
    driver.find_element(By.ID, "send").click()


def idle(driver, what):
    until(driver, lambda d: not visible(d, "stop") and d.find_element(By.ID, "send").is_enabled(),
          f"the end of the turn ({what})")


def shot(driver, name):
    driver.save_screenshot(f"{SHOTS}/{name}.png")


def call(name, args):
    return "CALL <tool_call>" + json.dumps({"name": name, "arguments": args}) + "</tool_call>"


class Hostile(http.server.BaseHTTPRequestHandler):
    """A page of another origin (localhost, not 127.0.0.1) that tries the gateway."""
    page = ""

    def do_GET(self):
        body = Hostile.page.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


HOSTILE = """<!doctype html><title>evil</title><pre id="out"></pre><script>
const G = "%s", ID = new URLSearchParams(location.search).get("id") || "none";
const seen = {};
async function attempt(name, run) {
  try { seen[name] = await run(); } catch (e) { seen[name] = "blocked: " + e.name; }
}
(async () => {
  await attempt("json_message", async () => {
    const r = await fetch(G + "/v1/message", {method: "POST", credentials: "include",
      headers: {"Content-Type": "application/json"}, body: JSON.stringify({text: "evil json message"})});
    return "read " + r.status + " " + await r.text();
  });
  await attempt("simple_message", async () => {
    const r = await fetch(G + "/v1/message", {method: "POST", mode: "no-cors", credentials: "include",
      headers: {"Content-Type": "text/plain"}, body: JSON.stringify({text: "evil simple message"})});
    return "opaque " + r.type;
  });
  await attempt("approve", async () => {
    const r = await fetch(G + "/v1/approval", {method: "POST", mode: "no-cors", credentials: "include",
      headers: {"Content-Type": "text/plain"}, body: JSON.stringify({id: ID, answer: "always"})});
    return "opaque " + r.type;
  });
  await attempt("answer_on_the_page", async () => {
    const r = await fetch(G + "/ui/api/questions/" + ID, {method: "POST", mode: "no-cors", credentials: "include",
      headers: {"Content-Type": "text/plain"}, body: JSON.stringify({answer: "always"})});
    return "opaque " + r.type;
  });
  await attempt("read_questions", async () => {
    const r = await fetch(G + "/ui/api/questions", {credentials: "include"});
    return "read " + r.status + " " + await r.text();
  });
  await attempt("read_box", async () => {
    const r = await fetch(G + "/ui/api/box", {credentials: "include"});
    return "read " + r.status + " " + await r.text();
  });
  await attempt("read_conversations", async () => {
    const r = await fetch(G + "/ui/api/conversations", {credentials: "include"});
    return "read " + r.status + " " + await r.text();
  });
  await attempt("socket", () => new Promise((resolve) => {
    const ws = new WebSocket(G.replace("http", "ws") + "/ws/chat?chat=evil", ["hearth"]);
    ws.onopen = () => {
      ws.send(JSON.stringify({type: "message", text: "evil socket message"}));
      ws.send(JSON.stringify({type: "approval", id: ID, answer: "always"}));
      setTimeout(() => resolve("open"), 1500);
    };
    ws.onerror = () => resolve("refused");
  }));
  document.getElementById("out").textContent = JSON.stringify(seen);
  document.title = "done";
})();
</script>"""


def hostile_server():
    Hostile.page = HOSTILE % GATEWAY
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://localhost:{server.server_address[1]}/"


def hostile_visit(driver, url):
    """Opens `url` in a new tab of the signed-in browser; what it managed."""
    main = driver.current_window_handle
    driver.switch_to.new_window("tab")
    driver.get(url)
    until(driver, lambda d: d.title == "done", "the hostile page's attempts")
    seen = json.loads(driver.find_element(By.ID, "out").text)
    driver.close()
    driver.switch_to.window(main)
    return seen


def tiny_png():
    """A 2x2 red PNG in the screenshots folder; its path."""
    import struct
    import zlib

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * 2 for _ in range(2))
    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
    path = f"{SHOTS}/tiny.png"
    with open(path, "wb") as f:
        f.write(png)
    return path


def wide_enough(driver):
    return driver.execute_script(
        "return document.documentElement.scrollWidth <= window.innerWidth")


def full():
    seen = {}
    driver = browser()
    try:
        # The first load: what it transfers, and from where.
        driver.get(GATEWAY + "/")
        until(driver, lambda d: visible(d, "signin"), "the sign-in form")
        seen["first_load"] = network(driver)
        shot(driver, "sign-in")
        # Hostile: a wrong token.
        sign_in(driver, "not-the-token-0123456789")
        until(driver, lambda d: d.find_element(By.ID, "signin-error").text, "the wrong token's error")
        seen["wrong_token"] = {"error": driver.find_element(By.ID, "signin-error").text,
                               "app_shown": visible(driver, "app")}
        # Sign in; the token is in no URL, storage or page afterwards.
        sign_in(driver, TOKEN)
        until(driver, lambda d: visible(d, "app"), "the chat after signing in")
        seen["cookies"] = driver.get_cookies()
        seen["token_left"] = driver.execute_script(
            "return [location.href, JSON.stringify(localStorage), JSON.stringify(sessionStorage),"
            " document.documentElement.outerHTML].some(s => s.includes(arguments[0]))", TOKEN)
        # A message streams in pieces.
        say(driver, "the quick brown fox jumps over the lazy dog " * 3)
        lengths = []
        deadline = time.time() + WAIT
        while time.time() < deadline:
            replies = driver.find_elements(By.CSS_SELECTOR, "#messages > li.assistant")
            lengths.append(len(replies[-1].text) if replies else 0)
            if not visible(driver, "stop"):
                break
            time.sleep(0.03)
        idle(driver, "the first message")
        seen["stream_lengths"] = sorted(set(lengths))
        seen["first_chat"] = messages(driver)
        first_chat = driver.execute_script("return document.querySelector('#conversations li[aria-current]')?.dataset.chat")
        # The model repeats hearth's markup (and then the control, without it):
        # every text the reply showed while streaming, and at the end.
        for asked in ("ECHO TAGS", "ECHO PLAIN"):
            say(driver, asked)
            shown = set()
            deadline = time.time() + WAIT
            while time.time() < deadline:
                replies = driver.find_elements(By.CSS_SELECTOR, "#messages > li.assistant")
                if replies:
                    shown.add(replies[-1].text)
                if not visible(driver, "stop"):
                    break
                time.sleep(0.01)
            idle(driver, asked)
            seen[asked] = {"streamed": sorted(shown), "last": messages(driver)[-1][1]}
        shot(driver, "chat")
        # Stop a long reply.
        say(driver, "stop me " + "word " * 400)
        until(driver, lambda d: any(c == "assistant" and t for c, t in messages(d)[-1:]), "the long reply to start")
        driver.find_element(By.ID, "stop").click()
        idle(driver, "the stopped reply")
        seen["stopped_chat"] = messages(driver)
        # XSS: markup in a message, its reply, the list and a tool question.
        xss = '<img src=x onerror="document.title=\'pwned\'"><script>document.title="pwned"</script><b>bold</b>'
        say(driver, xss)
        idle(driver, "the markup message")
        # A tool call that asks: allowed once, then one denied.
        say(driver, call("file_write", {"path": "allowed.txt", "content": xss}))
        until(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "li.approval button"), "the first question")
        question = driver.find_element(By.CSS_SELECTOR, "li.approval")
        seen["question"] = question.text
        shot(driver, "approval")
        question.find_element(By.CSS_SELECTOR, "button[data-answer=once]").click()
        idle(driver, "the allowed call")
        say(driver, call("file_write", {"path": "evil.txt", "content": "evil"}))
        until(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "li.approval:last-of-type button:enabled"),
              "the second question")
        question_id = driver.find_elements(By.CSS_SELECTOR, "li.approval")[-1].get_attribute("data-id")
        # Hostile: another origin's page in the same browser, even knowing the question's id.
        seen["hostile"] = hostile_visit(driver, hostile_server() + "?id=" + question_id)
        for key in ("json_message", "read_box", "read_conversations", "read_questions"):
            assert seen["hostile"][key].startswith("blocked"), f"{key}: {seen['hostile']}"
        driver.find_elements(By.CSS_SELECTOR, "li.approval")[-1].find_element(
            By.CSS_SELECTOR, "button[data-answer=deny]").click()
        idle(driver, "the denied call")
        seen["after_calls"] = messages(driver)
        seen["title"] = driver.title
        seen["markup_elements"] = len(driver.find_elements(By.CSS_SELECTOR, "#messages img, #messages script, #messages b, #conversations img, #conversations b"))
        # A new conversation, then the old one reopened.
        driver.find_element(By.ID, "new-chat").click()
        until(driver, lambda d: not messages(d) and all_items(d), "a new conversation, its hint alone")
        say(driver, xss)
        idle(driver, "the second conversation")
        seen["second_chat"] = messages(driver)
        # A picture goes with a message.
        driver.find_element(By.ID, "pictures").send_keys(tiny_png())
        until(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#picked img"), "the picked picture's preview")
        say(driver, "what is in this picture?")
        idle(driver, "the picture's message")
        seen["picture_shown"] = len(driver.find_elements(By.CSS_SELECTOR, "#messages li.user img.picture"))
        seen["picture_chat"] = messages(driver)
        press(driver, lambda d: d.find_element(By.CSS_SELECTOR, f'#conversations li[data-chat="{first_chat}"]'),
              "old conversation's")
        until(driver, lambda d: any("quick brown fox" in t for _, t in messages(d)), "the old conversation")
        seen["reopened"] = messages(driver)
        seen["list"] = texts(driver, "#conversations li")
        # The box.
        driver.find_element(By.ID, "tab-box").click()
        until(driver, lambda d: d.find_element(By.ID, "box-engine").text, "the box")
        seen["box"] = driver.find_element(By.ID, "box").text
        shot(driver, "box")
        # A reload keeps the session (the cookie), and what it transfers.
        network(driver)
        driver.get(GATEWAY + "/")
        until(driver, lambda d: visible(d, "app") and d.find_elements(By.CSS_SELECTOR, "#conversations li"), "the signed-in reload")
        time.sleep(0.5)
        seen["signed_in_load"] = network(driver)
        # A phone's width.
        driver.set_window_size(390, 844)
        time.sleep(0.3)
        width = driver.execute_script("return window.innerWidth")
        seen["phone"] = {"width": width, "chat_fits": wide_enough(driver),
                         "composer_shown": visible(driver, "input")}
        shot(driver, "phone-chat")
        driver.find_element(By.ID, "menu").click()
        seen["phone"]["list_shown"] = visible(driver, "conversations")
        shot(driver, "phone-conversations")
        driver.find_element(By.CSS_SELECTOR, f'#conversations li[data-chat="{first_chat}"]').click()
        driver.find_element(By.ID, "tab-box").click()
        until(driver, lambda d: d.find_element(By.ID, "box-engine").text, "the box on a phone")
        seen["phone"]["box_fits"] = wide_enough(driver)
        shot(driver, "phone-box")
        # Sign out: the cookie no longer opens anything.
        driver.find_element(By.ID, "signout").click()
        until(driver, lambda d: visible(d, "signin"), "the sign-in form after signing out")
        seen["phone"]["signin_fits"] = wide_enough(driver)
        shot(driver, "phone-sign-in")
        driver.get(GATEWAY + "/")
        until(driver, lambda d: visible(d, "signin"), "the sign-in form after a reload")
        seen["console"] = [e["message"] for e in driver.get_log("browser")]
    finally:
        driver.quit()
    return seen


def expiry_sign_in():
    """Signs in with a one-minute session; the cookie it got, for expiry_later."""
    seen = {}
    driver = browser()
    try:
        sign_in(driver, TOKEN)
        until(driver, lambda d: visible(d, "app"), "the chat after signing in")
        cookie = driver.get_cookie("hearth_session")
        seen["cookie"] = {k: cookie[k] for k in ("httpOnly", "sameSite", "expiry", "value") if k in cookie}
        seen["fresh"] = driver.execute_script(
            "return fetch('/ui/api/box').then(r => r.status)")
    finally:
        driver.quit()
    return seen


def expiry_later():
    """Offers the cookie on stdin, taken more than a minute before, to a new browser."""
    value = sys.stdin.read().strip()
    seen = {}
    driver = browser()
    try:
        driver.get(GATEWAY + "/")
        driver.add_cookie({"name": "hearth_session", "value": value, "path": "/"})
        seen["expired"] = driver.execute_script(
            "return fetch('/ui/api/box').then(r => r.status)")
        driver.get(GATEWAY + "/")
        until(driver, lambda d: visible(d, "signin"), "the sign-in form for an expired session")
        seen["signin_shown"] = True
    finally:
        driver.quit()
    return seen


def text_of(driver, element_id):
    return driver.find_element(By.ID, element_id).text


def job_item(driver, job_id):
    found = driver.find_elements(By.CSS_SELECTOR, f'#box-jobs li[data-job="{job_id}"]')
    return found[0] if found else None


def box():
    """The box of a real daemon: engine, LMS error, jobs paused and resumed,
    memory searched and deleted, a document sent in a chat then listed and
    deleted. JOBS (comma-separated ids) come as argv[5], the document's
    path as argv[6]."""
    keep, drop = sys.argv[5].split(",")
    seen = {}
    driver = browser()
    try:
        sign_in(driver, TOKEN)
        until(driver, lambda d: visible(d, "app"), "the chat after signing in")
        # A document goes with a message, from the same + as pictures.
        driver.find_element(By.ID, "pictures").send_keys(sys.argv[6])
        until(driver, lambda d: "document to send: reader.pdf" in text_of(d, "picked"), "the picked document")
        say(driver, "What happens to late submissions?")
        idle(driver, "the document's message")
        seen["document_chat"] = messages(driver)
        driver.find_element(By.ID, "tab-box").click()
        until(driver, lambda d: "authentication failed" in text_of(d, "box-lms"), "the LMS source's error")
        until(driver, lambda d: "decode" in text_of(d, "box").lower() and "tokens/s" in text_of(d, "chart-decode-last"),
              "the speed of the reply")
        seen["engine"] = text_of(driver, "box-engine")
        seen["ram"] = text_of(driver, "box-ram")
        seen["speed"] = text_of(driver, "chart-decode-last") + " | " + text_of(driver, "chart-ttft-last")
        seen["cache"] = text_of(driver, "box-cache")
        seen["lms"] = text_of(driver, "box-lms")
        seen["errors"] = text_of(driver, "box-errors")
        seen["channels"] = text_of(driver, "box-channels") + " | " + text_of(driver, "box-queue")
        driver.set_window_size(1280, 2000)
        time.sleep(0.3)
        shot(driver, "box-daemon")
        driver.set_window_size(1280, 860)
        # Pause, then resume; delete the other.
        press(driver, lambda d: job_item(d, keep).find_element(By.CSS_SELECTOR, "button[data-action=pause]"), "pause")
        until(driver, lambda d: "Paused." in job_item(d, keep).text, "the job to show paused")
        seen["paused"] = job_item(driver, keep).text
        press(driver, lambda d: job_item(d, keep).find_element(By.CSS_SELECTOR, "button[data-action=resume]"), "resume")
        until(driver, lambda d: "Next:" in job_item(d, keep).text, "the job to show resumed")
        seen["resumed"] = job_item(driver, keep).text
        press(driver, lambda d: job_item(d, drop).find_element(By.CSS_SELECTOR, "button[data-action=delete]"), "delete")
        until(driver, lambda d: job_item(d, drop) is None, "the deleted job to go")
        seen["jobs"] = text_of(driver, "box-jobs")
        # Memory: search, delete.
        field = driver.find_element(By.ID, "memory-q")
        field.send_keys("marmalade")
        driver.find_element(By.CSS_SELECTOR, "#memory-search button").click()
        until(driver, lambda d: "marmalade" in text_of(d, "box-memories"), "the memory found")
        seen["memory_found"] = text_of(driver, "box-memories")
        press(driver, lambda d: d.find_element(By.CSS_SELECTOR, "#box-memories button[data-action=forget]"),
              "forget the memory")
        until(driver, lambda d: "Nothing found." in text_of(d, "box-memories"), "the memory deleted")
        # Documents: listed with whose they are, then deleted.
        until(driver, lambda d: "reader.pdf" in text_of(d, "box-documents"), "the document listed")
        seen["documents"] = text_of(driver, "box-documents")
        press(driver, lambda d: d.find_element(By.CSS_SELECTOR, "#box-documents button[data-action=forget-document]"),
              "delete the document")
        until(driver, lambda d: "No documents yet" in text_of(d, "box-documents"), "the document deleted")
        driver.set_window_size(390, 844)
        time.sleep(0.3)
        seen["phone_fits"] = wide_enough(driver)
        shot(driver, "phone-box-daemon")
    finally:
        driver.quit()
    return seen


def questions():
    """The Approvals tab: the questions listed, and the first allowed once."""
    seen = {}
    driver = browser()
    try:
        sign_in(driver, TOKEN)
        until(driver, lambda d: visible(d, "app"), "the chat after signing in")
        until(driver, lambda d: d.find_element(By.ID, "question-count").text == "1", "the count of open questions")
        driver.find_element(By.ID, "tab-questions").click()
        until(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#question-list li.question"), "the question")
        seen["listed"] = texts(driver, "#question-list li")
        shot(driver, "approvals")
        press(driver, lambda d: d.find_element(By.CSS_SELECTOR, "li.question button[data-answer=once]"), "allow once")
        until(driver, lambda d: "Nothing is waiting" in text_of(d, "question-list"), "the answered question to go")
        seen["after"] = text_of(driver, "question-list")
        seen["count_after"] = driver.find_element(By.ID, "question-count").text
    finally:
        driver.quit()
    return seen


MODES = {"expiry-sign-in": expiry_sign_in, "expiry-later": expiry_later, "box": box, "full": full, "questions": questions}
if __name__ == "__main__":
    print(json.dumps(MODES[MODE]()))
