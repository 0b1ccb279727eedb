#!/usr/bin/env python3
"""A fast stdio MCP echo server for the CPU bench: answers each request
line at once (every request with "fail":true as a tool error with one
templated text), reading and writing in large blocks, so that what it costs
is mostly the pipes. At end of input it writes its own CPU time (user and
system seconds) to the file named by its first argument.

A second argument makes its successes structured: "structured" returns
structuredContent beside the text, "checked" does the same and declares
the tool's outputSchema in tools/list, so a client (and capture) checks
every success against it."""
import re
import resource
import sys

inp = sys.stdin.buffer
out = sys.stdout.buffer
request_id = re.compile(rb'"id":([^,}]*)')
OK = b',"result":{"content":[{"type":"text","text":"sunny"}]}}\n'
FAIL = (b',"result":{"content":[{"type":"text","text":'
        b'"no forecast for city \'Atlantis\' in 3 days"}],"isError":true}}\n')
INIT = (b',"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},'
        b'"serverInfo":{"name":"echo","version":"1"}}}\n')
mode = sys.argv[2] if len(sys.argv) > 2 else "plain"
SCHEMA = (b',"outputSchema":{"type":"object","properties":{"forecast":{"type":"string",'
          b'"enum":["sunny","rain"]},"days":{"type":"integer","minimum":1}},'
          b'"required":["forecast"]}' if mode == "checked" else b"")
LIST = (b',"result":{"tools":[{"name":"get_forecast","inputSchema":{"type":"object",'
        b'"properties":{"city":{"type":"string"},"days":{"type":"integer"},'
        b'"fail":{"type":"boolean"}}}' + SCHEMA + b'}]}}\n')
if mode != "plain":
    OK = (b',"result":{"content":[{"type":"text","text":"sunny"}],'
          b'"structuredContent":{"forecast":"sunny","days":3}}}\n')
rest = b""
while True:
    chunk = inp.read1(65536)
    if not chunk:
        break
    lines = (rest + chunk).split(b"\n")
    rest = lines.pop()
    answers = []
    for line in lines:
        found = request_id.search(line)
        if not found:
            continue
        if b'"initialize"' in line:
            tail = INIT
        elif b'"tools/list"' in line:
            tail = LIST
        elif b'"fail":true' in line:
            tail = FAIL
        else:
            tail = OK
        answers.append(b'{"jsonrpc":"2.0","id":' + found.group(1) + tail)
    out.write(b"".join(answers))
    out.flush()
usage = resource.getrusage(resource.RUSAGE_SELF)
with open(sys.argv[1], "w") as report:
    report.write(f"{usage.ru_utime} {usage.ru_stime}\n")
