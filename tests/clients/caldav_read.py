"""A CalDAV calendar read by a client that is not hearth's (`caldav`).

usage: caldav_read.py COLLECTION_URL USER PASSWORD
Prints {"events": [{"uid", "summary", "start"}, ...]}, sorted by uid.
"""

import json
import sys

import caldav
import icalendar

url, user, password = sys.argv[1:4]
client = caldav.DAVClient(url=url, username=user, password=password)
found = []
for ev in client.calendar(url=url).events():
    for e in icalendar.Calendar.from_ical(ev.data).walk("VEVENT"):
        found.append({
            "uid": str(e["UID"]),
            "summary": str(e["SUMMARY"]),
            "start": e.decoded("DTSTART").isoformat(),
        })
print(json.dumps({"events": sorted(found, key=lambda e: e["uid"])}))
