"""Talks to hearth's `/ws/chat` with the `websockets` package, as the README
tells a user to: the URL first, the token in an `Authorization` header.

Usage: ws_client.py HOST:PORT TOKEN CHAT TEXT. Prints one JSON object:
`health` (the status of GET /health without a token), `refused` (the HTTP
status a token-less upgrade got, or null if it was let in), `wrong_token`
(the same with a wrong token), and `frames` (every frame of one turn on a
socket opened with the token, up to its `done`).
"""

import asyncio
import json
import sys
import urllib.request

from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus


async def refused_status(url, headers):
    try:
        async with connect(url, additional_headers=headers, open_timeout=10):
            return None
    except InvalidStatus as e:
        return e.response.status_code


async def main():
    addr, token, chat, text = sys.argv[1:5]
    url = f"ws://{addr}/ws/chat?chat={chat}"
    with urllib.request.urlopen(f"http://{addr}/health", timeout=10) as r:
        health = r.status
    refused = await refused_status(url, {})
    wrong = await refused_status(url, {"Authorization": "Bearer not-the-token"})
    frames = []
    headers = {"Authorization": f"Bearer {token}"}
    async with connect(url, additional_headers=headers, open_timeout=10) as ws:
        await ws.send(json.dumps({"type": "message", "text": text}))
        while True:
            frame = json.loads(await asyncio.wait_for(ws.recv(), 120))
            frames.append(frame)
            if frame.get("type") == "done":
                break
    print(json.dumps({"health": health, "refused": refused, "wrong_token": wrong, "frames": frames}))


asyncio.run(main())
