"""Drives `hearth mcp serve` with the official MCP Python SDK's stdio client.

    mcp_client.py HEARTH CONFIG DATA_DIR HOME CALLS_JSON

CALLS_JSON is a list of [tool, arguments]; each is called in turn. Prints
JSON: the tools listed (name, description, input schema) and each call's
result (text, isError).
"""

import asyncio
import json
import sys

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


async def main(hearth, config, data_dir, home, calls):
    params = StdioServerParameters(
        command=hearth,
        args=["--config", config, "mcp", "serve"],
        env={"HEARTH_DATA_DIR": data_dir, "HOME": home, "RUST_LOG": "warn"},
    )
    out = {"tools": [], "calls": []}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            out["server"] = init.server_info.name
            listed = await session.list_tools()
            out["tools"] = [
                {"name": t.name, "description": t.description, "schema": t.input_schema}
                for t in listed.tools
            ]
            for name, arguments in calls:
                print(f"calling {name}", file=sys.stderr, flush=True)
                r = await session.call_tool(name, arguments)
                text = "\n".join(c.text for c in r.content if getattr(c, "type", "") == "text")
                out["calls"].append({"tool": name, "text": text, "is_error": bool(r.is_error)})
    print(json.dumps(out))


if __name__ == "__main__":
    a = sys.argv[1:]
    asyncio.run(main(a[0], a[1], a[2], a[3], json.loads(a[4])))
