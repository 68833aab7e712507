"""An MCP server with many tools of a home (30), for `hearth bench --prompt`:
tools a small model should not be shown when a message is not about them.
Run by hearth over stdio with the `mcp` SDK (target/pyclients)."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("house")

ROOMS = ["kitchen", "living_room", "bedroom", "bathroom", "office", "garage"]
DEVICES = [
    ("light", "Switch the {room} light on or off, or set its brightness in percent.",
     {"on": bool, "brightness": int}),
    ("thermostat", "Set the {room} thermostat to a temperature in degrees Celsius.",
     {"celsius": float}),
    ("blinds", "Open or close the {room} blinds, or set them to a position in percent.",
     {"position": int}),
    ("speaker", "Play, pause or set the volume of the {room} speaker.",
     {"action": str, "volume": int}),
    ("camera", "Take a snapshot with the {room} camera and describe what it shows.",
     {"resolution": str}),
]


def register(room: str, device: str, text: str, params: dict) -> None:
    name = f"{room}_{device}"
    args = ", ".join(f"{key}: {kind.__name__} | None = None" for key, kind in params.items())
    source = f"def {name}({args}) -> str:\n    return '{device} in {room}: ' + repr(locals())\n"
    scope: dict = {}
    exec(source, scope)
    handler = scope[name]
    handler.__doc__ = text.format(room=room.replace("_", " "))
    server.tool()(handler)


for room in ROOMS:
    for device, text, params in DEVICES:
        register(room, device, text, params)

if __name__ == "__main__":
    server.run("stdio")
