#!/usr/bin/env python3
"""Writes the synthetic seed corpus: journals plus the labels naming which
failure groups are real defects.

  python3 corpus/seed/generate.py [OUT_DIR]   (default: beside this script)

Deterministic: a fixed seed drives a splitmix64 generator written out here,
so the bytes do not depend on the Python version. The corpus mixes real
defects of every class with what must not become a finding: one-off noise,
single-session bursts, failures that stopped long ago, and low-rate
background errors. The default promotion threshold is calibrated on it.
"""
import json
import os
import sys
from datetime import datetime, timedelta, timezone

SEED = 0x6D637065
AS_OF = datetime(2026, 11, 1, tzinfo=timezone.utc)
DAY = timedelta(days=1)


class Rng:
    """splitmix64: tiny, fast and identical everywhere."""

    def __init__(self, seed):
        self.state = seed & 0xFFFFFFFFFFFFFFFF

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        return z ^ (z >> 31)

    def random(self):
        return (self.next() >> 11) / float(1 << 53)

    def below(self, n):
        return self.next() % n

    def choice(self, items):
        return items[self.below(len(items))]

    def hex(self, digits):
        return "".join("%016x" % self.next() for _ in range((digits + 15) // 16))[:digits]

    def uuid(self):
        h = self.hex(32)
        return "%s-%s-4%s-%s%s-%s" % (h[:8], h[8:12], h[13:16], "89ab"[int(h[16], 16) % 4], h[17:20], h[20:32])


# Servers and their tools with argument shapes.
SERVERS = {
    "weather": {"get_forecast": {"city": "string", "days": "integer"},
                "get_alerts": {"region": "string"},
                "geocode": {"query": "string"},
                "history": {"city": "string", "from": "string", "to": "string"}},
    "tickets": {"create_ticket": {"title": "string", "body": "string", "labels": ["string"]},
                "get_ticket": {"id": "string"},
                "search_tickets": {"q": "string", "limit": "integer"},
                "close_ticket": {"id": "string", "reason": "string"},
                "assign": {"id": "string", "user": "string"}},
    "files": {"read_file": {"path": "string"},
              "write_file": {"path": "string", "content": "string"},
              "list_dir": {"path": "string", "recursive": "boolean"},
              "stat": {"path": "string"}},
    "payments": {"charge": {"amount": "number", "currency": "string", "customer": "string"},
                 "refund": {"charge_id": "string", "amount": "number"},
                 "get_balance": {},
                 "list_charges": {"customer": "string", "limit": "integer"}},
    "search": {"web_search": {"q": "string", "n": "integer"},
               "fetch_page": {"url": "string"},
               "summarize": {"url": "string", "max_words": "integer"}},
    "calendar": {"list_events": {"from": "string", "to": "string"},
                 "create_event": {"title": "string", "start": "string", "attendees": ["string"]},
                 "find_slot": {"duration_min": "integer", "attendees": ["string"]},
                 "delete_event": {"id": "string"}},
}

# Real defects: (server, tool, class, failure rate, first day ago, last day ago, extra).
# Rates are per call to the tool while the defect is live.
DEFECTS = [
    ("weather", "history", "invalid-arguments", 0.30, 50, 0, {}),
    ("weather", "geocode", "transient", 0.12, 40, 1, {}),
    ("tickets", "assign", "unknown-tool", 0.60, 30, 0, {"unadvertised": True}),
    ("tickets", "search_tickets", "error-honesty", 0.15, 45, 2, {}),
    ("tickets", "create_ticket", "tool-error", 0.08, 35, 0, {}),
    ("files", "write_file", "internal-error", 0.10, 25, 0, {}),
    ("files", "list_dir", "malformed-result", 0.20, 20, 1, {}),
    ("payments", "refund", "invalid-arguments", 0.25, 30, 3, {}),
    ("payments", "charge", "transient", 0.06, 55, 0, {"code": -32001}),
    ("search", "fetch_page", "tool-error", 0.35, 40, 0, {}),
    ("search", "summarize", "internal-error", 0.05, 30, 2, {}),
    ("calendar", "find_slot", "error-honesty", 0.20, 28, 1, {}),
    ("calendar", "create_event", "false-success", 0.10, 30, 0, {}),
    ("weather", "get_alerts", "false-success", 0.15, 25, 2, {}),
    ("files", "read_file", "tool-error", 0.03, 58, 0, {}),
    ("payments", "list_charges", "malformed-result", 0.07, 40, 5, {}),
]

# Failures that look like defects but must not be promoted.
DISTRACTORS = [
    # Fixed long ago: failed often, but not for seven weeks.
    ("old", "search", "web_search", 0.30, 88, 50),
    ("old", "calendar", "delete_event", 0.40, 85, 55),
    ("old", "tickets", "close_ticket", 0.25, 80, 45),
]

CODES = {"invalid-arguments": -32602, "unknown-tool": -32601, "internal-error": -32603,
         "tool-error": None, "error-honesty": 500, "transient": 503}


def shape_of(args):
    return json.loads(json.dumps(args))


def ts(t):
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (t.microsecond // 1000)


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    rng = Rng(SEED)
    journal_dir = os.path.join(out_dir, "journals")
    os.makedirs(journal_dir, exist_ok=True)

    templates = {}  # group key → template id

    def template(key):
        if key not in templates:
            templates[key] = "t-" + rng.hex(16)
        return templates[key]

    defects = {}
    for server, tool, cls, rate, first, last, extra in DEFECTS:
        defects[(server, tool)] = (cls, rate, first, last, extra)
    distractors = {(s, t): (rate, first, last) for _, s, t, rate, first, last in DISTRACTORS}

    sessions = []
    for n in range(480):
        server = rng.choice(sorted(SERVERS))
        day = rng.below(90)
        start = AS_OF - day * DAY - timedelta(seconds=rng.below(86000) + 60)
        sessions.append((start, server, n))
    sessions.sort()

    # Single-session bursts: one session hammers one template many times.
    burst_sessions = {sessions[i][2] for i in (17, 88, 160, 240, 333, 401)}

    records_by_file = {}
    labels = {}
    false_success_calls = []
    for start, server, n in sessions:
        token = "s-" + rng.hex(16)
        t = start
        tools = sorted(SERVERS[server])
        count = 5 + rng.below(26)
        burst_tool = rng.choice(tools) if n in burst_sessions else None
        burst_template = "t-" + rng.hex(16) if burst_tool else None
        age_days = (AS_OF - start).total_seconds() / 86400
        for seq in range(1, count + 1):
            tool = burst_tool if burst_tool and rng.random() < 0.6 else rng.choice(tools)
            t = t + timedelta(milliseconds=200 + rng.below(5000))
            rec = {"schema": "mcpeval.call/1",
                   "identity": {"event_id": rng.uuid(), "session": token, "seq": seq},
                   "origin": "capture", "transport": "stdio" if rng.random() < 0.8 else "http",
                   "server": server, "tool": tool, "started_at": ts(t),
                   "duration_ms": 5 + rng.below(900), "advertised": True,
                   "args_shape": shape_of(SERVERS[server][tool]), "outcome": "ok"}
            error = None
            defect = defects.get((server, tool))
            distractor = distractors.get((server, tool))
            roll = rng.random()
            if tool == burst_tool and roll < 0.7:
                error = {"channel": "tool", "code": None, "template_id": burst_template, "retryable": False}
                labels[("error", server, tool, burst_template)] = ("burst", False, None)
            elif defect and defect[2] >= age_days >= defect[3] and roll < defect[1]:
                cls, extra = defect[0], defect[4]
                if cls == "false-success":
                    false_success_calls.append(rec["identity"]["event_id"])
                    labels[("false-success", server, tool, None)] = ("defect", True, cls)
                elif cls == "malformed-result":
                    rec["outcome"] = "unknown"
                    rec["unknown"] = "malformed"
                    labels[("malformed", server, tool, None)] = ("defect", True, cls)
                else:
                    key = (server, tool, cls)
                    code = extra.get("code", CODES[cls])
                    retryable = {"transient": True, "error-honesty": rng.choice([True, False, None])}.get(cls, False)
                    if cls in ("tool-error",):
                        retryable = None
                    channel = "jsonrpc" if code is not None and code < 0 else "tool"
                    tid = template(key)
                    error = {"channel": channel, "code": code, "template_id": tid, "retryable": retryable}
                    if extra.get("unadvertised"):
                        rec["advertised"] = False
                    labels[("error", server, tool, tid)] = ("defect", True, cls)
            elif distractor and distractor[1] >= age_days >= distractor[2] and roll < distractor[0]:
                tid = template((server, tool, "old"))
                error = {"channel": "jsonrpc", "code": -32603, "template_id": tid, "retryable": False}
                labels[("error", server, tool, tid)] = ("old", False, None)
            elif roll > 0.995:
                # Low-rate background noise from a small pool of templates,
                # so some recur across sessions without being a defect.
                tid = template((server, tool, "noise", rng.below(3)))
                error = {"channel": "tool", "code": None, "template_id": tid, "retryable": None}
                labels.setdefault(("error", server, tool, tid), ("noise", False, None))
            if error:
                rec["outcome"] = "error"
                rec["error"] = error
            # One journal per capture day, named as capture names them.
            fname = "%s-%s.jsonl" % (start.strftime("%Y%m%dT000000.000Z"), "%08x" % (hash_day(start) & 0xFFFFFFFF))
            records_by_file.setdefault(fname, []).append(rec)

    for fname in sorted(records_by_file):
        with open(os.path.join(journal_dir, fname), "w") as f:
            for rec in records_by_file[fname]:
                f.write(json.dumps(rec, separators=(",", ":")) + "\n")

    groups = []
    for (kind, server, tool, tid), (why, defect, cls) in sorted(labels.items(), key=lambda kv: tuple(str(x) for x in kv[0])):
        groups.append({"kind": kind, "server": server, "tool": tool, "template_id": tid,
                       "defect": defect, "class": cls, "why": why})
    with open(os.path.join(out_dir, "labels.json"), "w") as f:
        json.dump({"as_of": ts(AS_OF), "groups": groups}, f, indent=1, sort_keys=True)
        f.write("\n")
    with open(os.path.join(out_dir, "annotations.json"), "w") as f:
        json.dump([{"event_id": e, "kind": "false-success"} for e in false_success_calls], f, indent=1)
        f.write("\n")


def hash_day(t):
    """A stable 32-bit tag for a day, so file names do not depend on the run."""
    x = t.year * 10000 + t.month * 100 + t.day
    return Rng(x).next()


main()
