"""Renders chat templates as Hugging Face's transformers does
(`apply_chat_template`: jinja2's sandbox with trim_blocks, lstrip_blocks
and loop controls, its `tojson`, `raise_exception` and `strftime_now`),
without transformers. Reads {"templates": [{"name", "source", "vars"}]}
on stdin; writes {name: text} (or {"error": ...}) on stdout."""

import json
import sys
import types
from datetime import datetime

import jinja2
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    # transformers' own filter: json.dumps keeping the order and the
    # characters (no HTML escapes), unlike jinja2's built-in one. A
    # generator (`tools | map(...)`, in llama.cpp's own templates) is
    # written as the list llama.cpp's template engine writes; transformers
    # itself would fail on it.
    if isinstance(x, types.GeneratorType):
        x = list(x)
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


class Generation(Extension):
    """transformers' `{% generation %}` block, rendered as its body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.Scope(body, lineno=lineno)


def main():
    request = json.load(sys.stdin)
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[Generation, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda f: datetime.now().strftime(f)
    out = {}
    for t in request["templates"]:
        try:
            out[t["name"]] = env.from_string(t["source"]).render(**t["vars"])
        except Exception as e:  # a template's own refusal is an answer too
            out[t["name"]] = {"error": f"{type(e).__name__}: {e}"}
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
