#!/usr/bin/env python3
"""A scripted session with a real server, calling every tool that declares
an outputSchema with valid arguments, through the official MCP Python SDK.

  contract_sessions.py SERVER [--root DIR] -- CMD ARGS...

SERVER names the script: everything, filesystem, memory or time (the
servers of scripts/test-deps). For filesystem, DIR is the directory the
server was given: the script fills it with a few files before it starts
the server, and every path it passes lies in it. memory keeps its graph
where the server's MEMORY_FILE_PATH says (the environment passes through).

The SDK validates each result of a tool with an outputSchema, so a real
server that keeps its contracts makes it raise nothing. Prints one JSON
line per call as contract_client.py does, then a summary line
{"server", "tools", "schema_tools", "called"}; exits 1 (saying why on
stderr) when any call raised, failed or was an isError result, or when a
tool with an outputSchema went uncalled.
"""
import base64
import json
import os
import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

# The sibling client's call(), imported without leaving a __pycache__ in
# the source tree.
sys.dont_write_bytecode = True
from contract_client import call  # noqa: E402

# A 1x1 PNG, for read_media_file.
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")


def everything(_root):
    return [
        ("get-structured-content", {"location": "Chicago"}),
        ("get-structured-content", {"location": "New York"}),
        # Two tools without an outputSchema, for contrast.
        ("echo", {"message": "hello"}),
        ("get-sum", {"a": 2, "b": 3}),
    ]


def filesystem(root):
    os.makedirs(os.path.join(root, "docs"), exist_ok=True)
    files = {"notes.txt": "one\ntwo\nthree\n", "docs/plan.md": "# Plan\n\ndraft\n"}
    for name, text in files.items():
        with open(os.path.join(root, name), "w") as f:
            f.write(text)
    with open(os.path.join(root, "pixel.png"), "wb") as f:
        f.write(PIXEL)

    def at(name):
        return os.path.join(root, name)

    return [
        ("list_allowed_directories", {}),
        ("read_file", {"path": at("notes.txt")}),
        ("read_text_file", {"path": at("notes.txt"), "head": 2}),
        ("read_text_file", {"path": at("notes.txt"), "tail": 1}),
        ("read_media_file", {"path": at("pixel.png")}),
        ("read_multiple_files", {"paths": [at("notes.txt"), at("docs/plan.md")]}),
        ("write_file", {"path": at("new.txt"), "content": "a draft\n"}),
        ("edit_file", {"path": at("new.txt"),
                       "edits": [{"oldText": "draft", "newText": "final"}]}),
        ("edit_file", {"path": at("docs/plan.md"), "dryRun": True,
                       "edits": [{"oldText": "draft", "newText": "done"}]}),
        ("create_directory", {"path": at("archive")}),
        ("list_directory", {"path": root}),
        ("list_directory_with_sizes", {"path": root, "sortBy": "size"}),
        ("directory_tree", {"path": root}),
        ("move_file", {"source": at("new.txt"), "destination": at("archive/new.txt")}),
        ("search_files", {"path": root, "pattern": "**/*.md"}),
        ("get_file_info", {"path": at("docs/plan.md")}),
    ]


def memory(_root):
    entities = [
        {"name": "Ada", "entityType": "person", "observations": ["writes notes"]},
        {"name": "Engine", "entityType": "machine", "observations": ["analytical"]},
    ]
    relation = {"from": "Ada", "to": "Engine", "relationType": "programs"}
    return [
        ("create_entities", {"entities": entities}),
        ("create_relations", {"relations": [relation]}),
        ("add_observations", {"observations": [
            {"entityName": "Ada", "contents": ["likes tables"]}]}),
        ("read_graph", {}),
        ("search_nodes", {"query": "Engine"}),
        ("open_nodes", {"names": ["Ada"]}),
        ("delete_observations", {"deletions": [
            {"entityName": "Ada", "observations": ["likes tables"]}]}),
        ("delete_relations", {"relations": [relation]}),
        ("delete_entities", {"entityNames": ["Ada", "Engine"]}),
        ("read_graph", {}),
    ]


def time(_root):
    return [
        ("get_current_time", {"timezone": "Europe/London"}),
        ("convert_time", {"source_timezone": "America/New_York", "time": "16:30",
                          "target_timezone": "Asia/Tokyo"}),
    ]


SCRIPTS = {"everything": everything, "filesystem": filesystem, "memory": memory, "time": time}


async def main():
    argv = sys.argv[1:]
    split = argv.index("--")
    mine, cmd = argv[:split], argv[split + 1:]
    root = mine[mine.index("--root") + 1] if "--root" in mine else None
    steps = SCRIPTS[mine[0]](root)
    params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=dict(os.environ))
    wrong = []
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            tools = (await session.list_tools()).tools
            schema_tools = sorted(t.name for t in tools if t.output_schema is not None)
            called = set()
            for tool, arguments in steps:
                line = await call(session, tool, None, arguments)
                print(json.dumps(line), flush=True)
                if line["raised"] or line["failure"] or line["is_error"]:
                    wrong.append(line)
                called.add(tool)
    print(json.dumps({"server": init.server_info.name, "tools": len(tools),
                      "schema_tools": schema_tools, "called": sorted(called)}))
    uncalled = sorted(set(schema_tools) - called)
    if wrong or uncalled:
        sys.exit(f"contract_sessions: {len(wrong)} call(s) went wrong: {wrong}; "
                 f"uncalled tools with an outputSchema: {uncalled}")


anyio.run(main)
