#!/usr/bin/env python3
"""The demo's MCP server: a small job tracker with a bug that can be fixed.

  jobs_server.py MODE_FILE

MODE_FILE holds `buggy` or `repaired`, read at start-up. Buggy, get_status
fails with an unhandled internal error (JSON-RPC -32603) for every job;
repaired, it answers with the job's status. list_jobs always works.

Plain JSON-RPC over stdio, no SDK: it speaks the legacy handshake
(initialize) and answers anything it does not know, server/discover
included, with "method not found", as many deployed servers do.
"""
import json
import sys

JOBS = {"job_1": "done", "job_2": "running", "job_3": "queued"}
TOOLS = [
    {"name": "list_jobs", "description": "List the known job ids.",
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "get_status", "description": "The status of one job.",
     "inputSchema": {"type": "object", "properties": {"job": {"type": "string"}},
                     "required": ["job"]}},
]

with open(sys.argv[1]) as f:
    MODE = f.read().strip()


def result(rid, value):
    return {"jsonrpc": "2.0", "id": rid, "result": value}


def error(rid, code, message):
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


def text(structured):
    return {"content": [{"type": "text", "text": json.dumps(structured)}],
            "structuredContent": structured}


def call(rid, name, args):
    if name == "list_jobs":
        return result(rid, text({"jobs": sorted(JOBS)}))
    if name == "get_status":
        job = args.get("job")
        if MODE != "repaired":
            # The bug: a cache lookup that was never populated.
            return error(rid, -32603, "Internal error: KeyError: 'cache/%s'" % job)
        if job not in JOBS:
            return result(rid, {"isError": True, "content": [
                {"type": "text", "text": "unknown job; call list_jobs for the valid ids"}]})
        return result(rid, text({"job": job, "status": JOBS[job]}))
    return error(rid, -32602, "Unknown tool: %s" % name)


def answer(msg):
    method, rid = msg.get("method"), msg.get("id")
    params = msg.get("params") or {}
    if method == "initialize":
        return result(rid, {
            "protocolVersion": params.get("protocolVersion", "2025-11-25"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "jobs", "version": "1.0.0"}})
    if method == "ping":
        return result(rid, {})
    if method == "tools/list":
        return result(rid, {"tools": TOOLS})
    if method == "tools/call":
        return call(rid, params.get("name"), params.get("arguments") or {})
    return error(rid, -32601, "Method not found")


for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if not isinstance(msg, dict) or "method" not in msg or "id" not in msg:
        continue  # notifications and replies need no answer
    sys.stdout.write(json.dumps(answer(msg)) + "\n")
    sys.stdout.flush()
