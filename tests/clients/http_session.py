#!/usr/bin/env python3
"""A scripted Streamable HTTP session through the official MCP Python SDK.

  http_session.py SCRIPT.json URL

SCRIPT is a JSON list of {"tool": name, "arguments": {...}}. The client
initializes, lists tools, makes each call in order (asking for progress
notifications, which arrive as SSE events) and closes the session, which
sends DELETE. It prints one JSON transcript on stdout: server name, tool
names, and every call's progress notifications and result (content,
structured content, isError) or error. Session ids stay out of it, so a
direct session and one through mcpeval-capture compare equal.
"""
import json
import sys

import anyio
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError


async def main():
    script = json.load(open(sys.argv[1]))
    url = sys.argv[2]
    transcript = {"calls": []}
    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            transcript["server"] = init.server_info.name
            tools = await session.list_tools()
            transcript["tools"] = sorted(t.name for t in tools.tools)
            for step in script:
                progress = []

                async def on_progress(value, total, message, progress=progress):
                    progress.append([value, total])

                entry = {"tool": step["tool"]}
                try:
                    result = await session.call_tool(
                        step["tool"], step.get("arguments", {}), progress_callback=on_progress
                    )
                    entry.update({
                        "is_error": bool(result.is_error),
                        "content": [c.model_dump(mode="json") for c in result.content],
                        "structured": result.structured_content,
                    })
                except MCPError as err:
                    entry.update({"error_code": err.error.code, "error_message": err.error.message})
                entry["progress"] = progress
                transcript["calls"].append(entry)
    json.dump(transcript, sys.stdout, sort_keys=True)


anyio.run(main)
