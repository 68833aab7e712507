"""The web page as a new user first meets it, in Debian's Chromium on a
phone's screen (390 CSS pixels, set through the DevTools protocol: a
headless window is never narrower than 500): sign in with the token, see
a new conversation of the page's own, say hello, read the reply, then look
at the box. Prints JSON of what it saw, and whether anything is wider than
the screen or a word is broken across two lines. Used by
tests/readme_recipes.rs.

Usage: page_first_use.py PAGE_URL TOKEN SHOTS_DIR
"""

import json
import os
import sys

import web_page
from web_page import all_items, browser, idle, messages, say, sign_in, texts, until, visible
from selenium.webdriver.common.by import By

URL, TOKEN, SHOTS = sys.argv[1].rstrip("/"), sys.argv[2], sys.argv[3]
web_page.GATEWAY = URL

# Elements wider than the screen, and words drawn on two lines (a word's
# range with client rectangles on more than one line).
LAYOUT = """
const width = document.documentElement.clientWidth;
const wide = [...document.querySelectorAll('body *')]
  .filter((e) => e.offsetParent !== null && e.getBoundingClientRect().right > width + 1)
  .map((e) => e.tagName + (e.id ? '#' + e.id : '') + ': ' + (e.textContent || '').slice(0, 40));
const broken = [];
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
for (let node = walker.nextNode(); node; node = walker.nextNode()) {
  if (!node.parentElement || node.parentElement.offsetParent === null) continue;
  for (const m of node.textContent.matchAll(/\\S+/g)) {
    const range = document.createRange();
    range.setStart(node, m.index);
    range.setEnd(node, m.index + m[0].length);
    const tops = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
    if (tops.size > 1) broken.push(m[0]);
  }
}
return { wide, broken, scroll: document.documentElement.scrollWidth > width, width };
"""


driver = browser()
driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                       {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True})
seen = {}
try:
    sign_in(driver, TOKEN)
    until(driver, lambda d: visible(d, "app"), "the app after signing in")
    until(driver, lambda d: all_items(d), "the new conversation's hint")
    seen["opened"] = all_items(driver)
    seen["chat_layout"] = driver.execute_script(LAYOUT)
    driver.save_screenshot(os.path.join(SHOTS, "first-use-chat.png"))
    say(driver, "Hello!")
    until(driver, lambda d: any(k == "assistant" and t for k, t in messages(d)), "a reply")
    idle(driver, "hello")
    seen["messages"] = messages(driver)
    driver.find_element(By.ID, "menu").click()
    until(driver, lambda d: visible(d, "sidebar"), "the list of conversations")
    # The list as the reply's end redrew it: the open conversation in it.
    until(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#conversations > li[aria-current]"),
          "the open conversation in the list")
    seen["own"] = texts(driver, "#conversations > li")
    seen["other"] = texts(driver, "#other-conversations > li")
    seen["list_layout"] = driver.execute_script(LAYOUT)
    driver.save_screenshot(os.path.join(SHOTS, "first-use-list.png"))
    driver.find_element(By.ID, "menu").click()
    driver.find_element(By.ID, "tab-box").click()
    until(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#box-cache tbody tr"), "the box")
    seen["header_rows"] = driver.execute_script(
        "const r = [...document.querySelectorAll('header button')]"
        ".filter((b) => b.offsetParent !== null).map((b) => b.getBoundingClientRect());"
        "const first = Math.min(...r.map((x) => x.bottom));"
        "return r.some((x) => x.top >= first) ? 2 : 1;")
    seen["box_layout"] = driver.execute_script(LAYOUT)
    # Read in one step: the page redraws the box's tables while it is open,
    # which left an element read row by row stale (seen on a slow machine).
    seen["cache_rows"] = driver.execute_script(
        "return [...document.querySelectorAll('#box-cache tbody tr')].map((tr) => tr.innerText);")
    driver.save_screenshot(os.path.join(SHOTS, "first-use-box.png"))
    print(json.dumps(seen))
finally:
    driver.quit()
