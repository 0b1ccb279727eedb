#!/usr/bin/env python3
"""Drives an MCP server through the official Python SDK's high-level Client.

  serve_client.py MODE SCRIPT.json -- CMD ARGS...

MODE is the SDK's connect mode: "auto" (probes server/discover, the modern
era, and falls back to initialize) or "legacy" (initialize only). SCRIPT is
a JSON list of {"tool": name, "arguments": {...}}. Prints one JSON object:
the negotiated protocol version, the server's name, every tool as listed
(name, inputSchema, outputSchema, annotations) and each call's result
(isError, text, structuredContent) or JSON-RPC error. The SDK validates
structured content against each tool's outputSchema, so a schema the
server breaks fails the call here.
"""
import json
import os
import sys

import anyio
from mcp import Client, MCPError, StdioServerParameters


async def main():
    mode = sys.argv[1]
    script = json.load(open(sys.argv[2]))
    cmd = sys.argv[sys.argv.index("--") + 1:]
    params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=dict(os.environ))
    out = {"calls": []}
    async with Client(params, mode=mode) as client:
        out["protocol_version"] = client.protocol_version
        info = client.server_info
        out["server"] = info.name if info else None
        listed = await client.list_tools()
        out["tools"] = [
            {"name": t.name,
             "input_schema": t.input_schema,
             "output_schema": t.output_schema,
             "annotations": t.annotations.model_dump(mode="json", by_alias=True, exclude_none=True) if t.annotations else None}
            for t in listed.tools
        ]
        for step in script:
            try:
                r = await client.call_tool(step["tool"], step.get("arguments", {}))
                out["calls"].append({
                    "tool": step["tool"],
                    "is_error": bool(r.is_error),
                    "text": "\n".join(c.text for c in r.content if getattr(c, "type", "") == "text"),
                    "structured": r.structured_content,
                })
            except MCPError as err:
                out["calls"].append({"tool": step["tool"], "error_code": err.error.code,
                                     "error_message": err.error.message})
    json.dump(out, sys.stdout)


anyio.run(main)
