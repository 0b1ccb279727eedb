#!/usr/bin/env python3
"""Calls tools through the official MCP Python SDK and says which raised.

  contract_client.py [--unlisted] [TOOL:CASE ...] -- CMD ARGS...
  contract_client.py [--unlisted] [TOOL:CASE ...] --url URL

The SDK's ClientSession checks every non-error result of a tool that
declared an outputSchema and raises RuntimeError when structuredContent is
missing or breaks the schema, although the server answered with success.
This client initializes, lists the tools (unless --unlisted: then the SDK
lists them itself, after the first result it has to check), makes each call
and prints one JSON line per call, in order. TOOL:CASE passes the tool's one
required argument the value CASE, TOOL:ARGUMENT=CASE names the argument;
with no calls on the command line, it reads one JSON object a line from
stdin: {"tool", "case", "arguments"}. A line:

  {"tool": ..., "case": ..., "raised": true|false, "is_error": ..., "failure": ...}

raised: the SDK raised because the result broke the declared outputSchema
(or lacked structuredContent). is_error: the result was an isError result
(the SDK checks none of those); null when there was no result. failure:
null, or what else went wrong: "invalid-schema" (the SDK refused the
schema itself, e.g. a $ref it cannot resolve offline), "jsonrpc <code>",
or an exception's type name. Messages are left out: they quote values.

The server is CMD over stdio with this process's whole environment (so
MCPEVAL_HOME reaches a capture in the chain), or a Streamable HTTP URL.
"""
import json
import os
import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

# The SDK's messages for a result that breaks its tool's outputSchema
# (mcp/client/session.py, validate_tool_result), as opposed to
# "Invalid schema for tool ...", which blames the schema.
BROKEN = (" has an output schema but did not return structured content",
          "Invalid structured content returned by tool ")


def planned_calls(argv):
    """[(tool, case, arguments or None)]: None asks for the tool's one
    required argument to carry the case."""
    calls = []
    for spec in argv:
        tool, _, case = spec.partition(":")
        name, equals, value = case.partition("=")
        calls.append((tool, value, {name: value}) if equals else (tool, case, None))
    if calls:
        return calls
    for line in sys.stdin:
        if line.strip():
            step = json.loads(line)
            calls.append((step["tool"], step.get("case"), step.get("arguments", {})))
    return calls


def classify(err):
    """(raised, failure) for an exception from call_tool."""
    if isinstance(err, MCPError):
        return False, f"jsonrpc {err.error.code}"
    if isinstance(err, RuntimeError):
        message = str(err)
        if any(part in message for part in BROKEN):
            return True, None
        if message.startswith("Invalid schema for tool "):
            return False, "invalid-schema"
    return False, type(err).__name__


async def call(session, tool, case, arguments):
    """One call's JSON line, as a dict."""
    line = {"tool": tool, "case": case, "raised": False, "is_error": None, "failure": None}
    try:
        result = await session.call_tool(tool, arguments)
        line["is_error"] = bool(result.is_error)
    except Exception as err:  # noqa: BLE001 - every raise is reported, by kind
        line["raised"], line["failure"] = classify(err)
    return line


def required_argument(tools, name):
    for tool in tools or []:
        if tool.name == name:
            required = tool.input_schema.get("required") or []
            if len(required) == 1:
                return required[0]
    sys.exit(f"contract_client: {name} has no single required argument to carry a case"
             " (name it: TOOL:ARGUMENT=CASE)")


async def run(session, calls, listed):
    await session.initialize()
    tools = (await session.list_tools()).tools if listed else []
    for tool, case, arguments in calls:
        if arguments is None:
            arguments = {required_argument(tools, tool): case}
        line = await call(session, tool, case, arguments)
        print(json.dumps(line), flush=True)


async def main():
    argv = sys.argv[1:]
    listed = argv[:1] != ["--unlisted"]
    argv = argv if listed else argv[1:]
    if "--url" in argv:
        at = argv.index("--url")
        url, specs = argv[at + 1], argv[:at]
        from mcp.client.streamable_http import streamable_http_client

        async with streamable_http_client(url) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await run(session, planned_calls(specs), listed)
        return
    split = argv.index("--")
    cmd, specs = argv[split + 1:], argv[:split]
    params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await run(session, planned_calls(specs), listed)


if __name__ == "__main__":
    anyio.run(main)
