#!/usr/bin/env python3
"""The reference for archc's chat templates: jinja2 in the environment
Hugging Face transformers renders them in (apply_chat_template): a sandbox
with trim_blocks, lstrip_blocks and loop controls, raise_exception and
strftime_now as globals, tojson as json.dumps without ensure_ascii.

  reference.py TEMPLATE CONTEXT.json      prints the rendering
  reference.py --config tokenizer_config.json CONTEXT.json
                                          the config's chat_template, with
                                          its special tokens (as
                                          special_tokens_map) where the
                                          context has none

A template that raises prints 'error: MESSAGE' to stderr and exits 1.
"""
import json
import sys
from datetime import datetime

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment


def environment():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None,
               sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent,
                          separators=separators, sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True,
        extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda f: datetime.now().strftime(f)
    return env


SPECIAL_KEYS = ("bos_token", "eos_token", "unk_token", "sep_token",
                "pad_token", "cls_token", "mask_token")


def main():
    args = sys.argv[1:]
    specials = {}
    if args[0] == "--config":
        with open(args[1], encoding="utf-8") as f:
            config = json.load(f)
        source = config["chat_template"]
        if isinstance(source, list):
            source = {t["name"]: t["template"] for t in source}["default"]
        for key in SPECIAL_KEYS:
            value = config.get(key)
            if isinstance(value, dict):  # an AddedToken
                value = value.get("content")
            if isinstance(value, str):
                specials[key] = value
        args = args[2:]
    else:
        with open(args[0], encoding="utf-8", newline="") as f:
            source = f.read()
        args = args[1:]
    with open(args[0], encoding="utf-8") as f:
        context = json.load(f)
    if isinstance(context, list):
        context = {"messages": context}
    context = {**specials, **context}
    try:
        text = environment().from_string(source).render(**context)
    except Exception as e:  # jinja2's and the template's own errors
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
