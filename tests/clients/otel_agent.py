#!/usr/bin/env python3
"""Agent sessions through the official MCP Python SDK, each one trace.

  otel_agent.py SCRIPT.json SESSIONS -- CMD ARGS...

For each of SESSIONS sessions, starts the server command anew over stdio,
initializes, and makes SCRIPT's calls ({"tool": name, "arguments": {...}})
in order, all inside one parent span ("agent session"), as an agent
framework traces an agent's run. The SDK's client spans are children of it,
and the trace context goes to the server in each request's _meta.

Run it under `opentelemetry-instrument` with OTEL_* variables to export the
spans; without a configured SDK the spans go nowhere and the sessions run
the same (the capture side of the comparison). The server gets this
process's environment.
"""
import json
import os
import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from opentelemetry import trace

tracer = trace.get_tracer("otel-agent")


async def session(script, cmd, env):
    params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as client:
            await client.initialize()
            for step in script:
                try:
                    await client.call_tool(step["tool"], step.get("arguments", {}))
                except MCPError:
                    pass


async def main():
    script = json.load(open(sys.argv[1]))
    sessions = int(sys.argv[2])
    split = sys.argv.index("--")
    cmd = sys.argv[split + 1:]
    env = dict(os.environ)
    for n in range(sessions):
        with tracer.start_as_current_span("agent session", attributes={"agent.run": n}):
            await session(script, cmd, env)


anyio.run(main)
