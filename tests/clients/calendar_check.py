"""The calendar feed read by software that is not hearth's.

Reads two versions of hearth's iCalendar feed (before and after a due date
moved), parses each with the `icalendar` package, checks what RFC 5545
requires of them, imports the second into a real Radicale (started here on
127.0.0.1, no auth, in a temporary folder) as a whole calendar, and reads it
back through the `caldav` client. Prints one JSON object of what it found.

usage: calendar_check.py FEED_BEFORE FEED_AFTER
"""

import json
import socket
import subprocess
import sys
import tempfile
import time

import caldav
import icalendar
import requests


def events(path):
    with open(path, "rb") as f:
        raw = f.read()
    cal = icalendar.Calendar.from_ical(raw)
    problems = []
    for key in ("VERSION", "PRODID"):
        if key not in cal:
            problems.append(f"no {key}")
    found = {}
    for e in cal.walk("VEVENT"):
        for key in ("UID", "DTSTAMP", "DTSTART", "SUMMARY"):
            if key not in e:
                problems.append(f"an event without {key}")
        uid = str(e["UID"])
        if uid in found:
            problems.append(f"UID {uid} twice")
        start = e.decoded("DTSTART")
        found[uid] = {
            "summary": str(e["SUMMARY"]),
            "start": start.isoformat(),
            "modified": e.decoded("LAST-MODIFIED").isoformat() if "LAST-MODIFIED" in e else None,
        }
    for line in raw.split(b"\r\n"):
        if len(line) > 75:
            problems.append(f"a line of {len(line)} octets")
    if b"\n" in raw.replace(b"\r\n", b""):
        problems.append("a bare LF")
    return raw, found, problems


AUTH = ("student", "any")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def radicale_round_trip(raw):
    folder = tempfile.mkdtemp()
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "radicale",
         "--storage-filesystem-folder", folder,
         "--server-hosts", f"127.0.0.1:{port}",
         # Any password passes; the user owns /student/ (owner_only).
         "--auth-type", "none", "--rights-type", "owner_only"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200):
            try:
                requests.get(base + "/", timeout=1)
                break
            except requests.RequestException:
                time.sleep(0.1)
        if server.poll() is not None:
            raise SystemExit("radicale did not start: " + server.stderr.read().decode())
        # A whole calendar uploaded to a new collection: Radicale's import.
        put = requests.put(f"{base}/student/deadlines/", data=raw, auth=AUTH,
                           headers={"Content-Type": "text/calendar"}, timeout=30)
        # A second, independent client reads it back.
        client = caldav.DAVClient(url=f"{base}/student/", username=AUTH[0], password=AUTH[1])
        cal = client.calendar(url=f"{base}/student/deadlines/")
        read = []
        for ev in cal.events():
            comp = icalendar.Calendar.from_ical(ev.data)
            for e in comp.walk("VEVENT"):
                read.append({"uid": str(e["UID"]), "summary": str(e["SUMMARY"])})
        return {"put_status": put.status_code, "read": read}
    finally:
        server.terminate()
        server.wait(timeout=10)


def main():
    _, before, problems_before = events(sys.argv[1])
    raw, after, problems_after = events(sys.argv[2])
    print(json.dumps({
        "before": before,
        "after": after,
        "problems": problems_before + problems_after,
        "radicale": radicale_round_trip(raw),
    }))


main()
