"""Drives `hearth acp` as an editor does, with the Agent Client Protocol's
own Python SDK (`agent-client-protocol`), whose models check every message
hearth sends against the protocol's schema.

Usage: acp_client.py HEARTH CONFIG PROMPT ANSWER [PNG]
Runs initialize, session/new and one session/prompt (with the picture in
the file PNG as an image block before the text, when given, and hearth's
pipeline logging each model round's token counts to stderr); answers every
permission question with ANSWER (an option id: once, always or deny).
Prints JSON: the stop reason, each session/update and each permission
question as the SDK parsed them (by their wire names), and hearth's exit
code and stderr once stdin is closed."""

import asyncio
import base64
import json
import sys

from acp import PROTOCOL_VERSION, image_block, spawn_agent_process, text_block
from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse


class Editor:
    def __init__(self, answer):
        self.answer = answer
        self.updates = []
        self.permissions = []

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        self.permissions.append(
            {
                "toolCall": tool_call.model_dump(by_alias=True, exclude_none=True),
                "options": [o.model_dump(by_alias=True, exclude_none=True) for o in options],
            }
        )
        if self.answer == "cancel":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=self.answer)
        )

    async def session_update(self, session_id, update, **kwargs):
        self.updates.append(update.model_dump(by_alias=True, exclude_none=True))

    async def write_text_file(self, *args, **kwargs):
        raise NotImplementedError

    async def read_text_file(self, *args, **kwargs):
        raise NotImplementedError

    async def create_terminal(self, *args, **kwargs):
        raise NotImplementedError

    async def terminal_output(self, *args, **kwargs):
        raise NotImplementedError

    async def release_terminal(self, *args, **kwargs):
        raise NotImplementedError

    async def wait_for_terminal_exit(self, *args, **kwargs):
        raise NotImplementedError

    async def kill_terminal(self, *args, **kwargs):
        raise NotImplementedError

    async def ext_method(self, method, params):
        return {}

    async def ext_notification(self, method, params):
        return None


async def main(hearth, config, prompt, answer, picture=None):
    editor = Editor(answer)
    result = {}
    blocks = [text_block(prompt)]
    if picture:
        with open(picture, "rb") as f:
            data = base64.b64encode(f.read()).decode()
        blocks.insert(0, image_block(data, "image/png"))
    # The SDK passes the agent a small default environment, and this on top.
    async with spawn_agent_process(
        editor, hearth, "--config", config, "acp", env={"RUST_LOG": "hearth::pipeline=debug"}
    ) as (conn, process):
        init = await conn.initialize(protocol_version=PROTOCOL_VERSION)
        result["imageCapability"] = bool(
            init.agent_capabilities.prompt_capabilities.image
        )
        session = await conn.new_session(cwd="/tmp", mcp_servers=[])
        response = await asyncio.wait_for(
            conn.prompt(session_id=session.session_id, prompt=blocks), 120
        )
        result["stopReason"] = response.stop_reason
        # Let the last notifications arrive before stdin closes.
        await asyncio.sleep(0.5)
        process.stdin.close()
        result["exit"] = await asyncio.wait_for(process.wait(), 60)
        result["stderr"] = (await process.stderr.read()).decode(errors="replace")
    result["updates"] = editor.updates
    result["permissions"] = editor.permissions
    print(json.dumps(result))


asyncio.run(main(*sys.argv[1:6]))
