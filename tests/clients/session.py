#!/usr/bin/env python3
"""A scripted session through the official MCP Python SDK.

  session.py SCRIPT.json [--sdk-env] -- CMD ARGS...

SCRIPT is a JSON list of {"tool": name, "arguments": {...}}. The client
initializes, lists tools, makes each call in order and prints one JSON
transcript on stdout: server name, tool names and every call's result
(content, structured content, isError) or error. Comparing the transcript
of a direct session with one through mcpeval-capture shows capture changes
nothing the client sees.

The server gets this process's whole environment, unless --sdk-env: then
the SDK's default environment alone (HOME, LOGNAME, PATH, SHELL, TERM and
USER), as a client configured without an "env" map starts it.
"""
import json
import os
import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError


async def main():
    script = json.load(open(sys.argv[1]))
    split = sys.argv.index("--")
    cmd = sys.argv[split + 1:]
    # Pass the whole environment: the SDK otherwise keeps only a few
    # variables, and MCPEVAL_HOME must reach a capture in the chain.
    env = None if "--sdk-env" in sys.argv[2:split] else dict(os.environ)
    params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=env)
    transcript = {"calls": []}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            transcript["server"] = init.server_info.name
            tools = await session.list_tools()
            transcript["tools"] = sorted(t.name for t in tools.tools)
            for step in script:
                try:
                    result = await session.call_tool(step["tool"], step.get("arguments", {}))
                    transcript["calls"].append({
                        "tool": step["tool"],
                        "is_error": bool(result.is_error),
                        "content": [c.model_dump(mode="json") for c in result.content],
                        "structured": result.structured_content,
                    })
                except MCPError as err:
                    transcript["calls"].append({
                        "tool": step["tool"], "error_code": err.error.code,
                        "error_message": err.error.message})
    json.dump(transcript, sys.stdout, sort_keys=True)


anyio.run(main)
