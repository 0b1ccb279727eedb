#!/usr/bin/env python3
"""Renders markdown files as GitHub does, with cmark-gfm (the cmarkgfm
package: the table, autolink, strikethrough and tagfilter extensions),
parses the HTML with html.parser and prints what a reader would get, as
one JSON object per file, one per line:

  {"file", "elements": [tag names in document order],
   "code": [text of each <code> element],
   "text": [every other run of text, outside any <code>],
   "html": the rendered HTML}

Raw HTML is let through (cmark's unsafe option), so any markup a name
smuggled into the markdown shows up as an element rather than as an
"omitted" comment; GitHub sanitizes such HTML but keeps links.
"""
import json
import sys
from html.parser import HTMLParser

import cmarkgfm
from cmarkgfm.cmark import Options


class Reader(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.elements = []
        self.code = []
        self.text = []
        self.depth = 0

    def handle_starttag(self, tag, attrs):
        self.elements.append(tag)
        if tag == "code":
            self.depth += 1
            self.code.append("")

    def handle_startendtag(self, tag, attrs):
        self.elements.append(tag)

    def handle_endtag(self, tag):
        if tag == "code" and self.depth:
            self.depth -= 1

    def handle_data(self, data):
        if self.depth:
            self.code[-1] += data
        else:
            self.text.append(data)


for path in sys.argv[1:]:
    with open(path, encoding="utf-8") as f:
        markdown = f.read()
    html = cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)
    reader = Reader()
    reader.feed(html)
    reader.close()
    print(json.dumps({"file": path, "elements": reader.elements, "code": reader.code,
                      "text": reader.text, "html": html}))
