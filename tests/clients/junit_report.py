#!/usr/bin/env python3
"""Reads a JUnit XML report the way CI test reporters do, with junitparser,
and prints what it understood as one JSON object:

  {"suites": [{"name", "tests", "failures", "errors", "time",
               "cases": [{"classname", "name", "time", "result": [{"tag", "type", "message", "text"}],
                          "system_out"}]}],
   "verify": 0 or 1}

"verify" is junitparser's own CLI verdict (1 when a case failed or
errored). The report is first validated against the common JUnit XML
schema (tests/fixtures/junit.xsd) with xmlschema; a report that does not
validate, or that junitparser cannot parse, makes this script fail.
"""
import json
import os
import subprocess
import sys

import xmlschema
from junitparser import Error, Failure, JUnitXml

path = sys.argv[1]
schema = os.path.join(os.path.dirname(__file__), "..", "fixtures", "junit.xsd")
xmlschema.XMLSchema(schema).validate(path)
xml = JUnitXml.fromfile(path)
suites = []
for suite in xml:
    cases = []
    for case in suite:
        cases.append({
            "classname": case.classname,
            "name": case.name,
            "time": case.time,
            "result": [
                {"tag": "failure" if isinstance(r, Failure) else "error" if isinstance(r, Error) else "other",
                 "type": r.type, "message": r.message, "text": r.text}
                for r in case.result
            ],
            "system_out": case.system_out,
        })
    suites.append({"name": suite.name, "tests": suite.tests, "failures": suite.failures,
                   "errors": suite.errors, "time": suite.time, "cases": cases})
verify = subprocess.run([sys.executable, "-m", "junitparser", "verify", path]).returncode
print(json.dumps({"suites": suites, "verify": verify}))
