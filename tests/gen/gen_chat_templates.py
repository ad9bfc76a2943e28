"""Writes tests/data/chat_templates/expected.json: every template of
templates.json rendered by Jinja2 exactly as Hugging Face's
apply_chat_template renders it (ImmutableSandboxedEnvironment with
trim_blocks, lstrip_blocks and the loopcontrols extension; raise_exception
and a json.dumps tojson as globals/filters), over a set of conversations,
with and without the generation prompt.  A render that raises is recorded
as {"error": message}.

    python3 tests/gen/gen_chat_templates.py
"""
import json
import pathlib

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = pathlib.Path(__file__).resolve().parent
DATA = HERE.parent / "data" / "chat_templates"

CONVERSATIONS = {
    "one_user": [{"role": "user", "content": "Hello!"}],
    "system_multi": [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "4"},
        {"role": "user", "content": "And 3+3?"},
    ],
    "unicode_spaces": [
        {"role": "user", "content": "Write a haiku about  rain\n"},
        {"role": "assistant", "content": "  Drops on the tin roof\ttap  "},
        {"role": "user", "content": "Ещё раз, s'il vous plaît 🌧️ <|im_start|> \"quoted\" x"},
    ],
    "tool_turns": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "Checking."},
        {"role": "tool", "content": "{\"temp\": 20}"},
        {"role": "tool", "content": "sunny"},
        {"role": "user", "content": "Thanks, Hello there"},
    ],
    "two_users": [
        {"role": "user", "content": "a"},
        {"role": "user", "content": "b"},
    ],
    "empty": [],
}

SPECIAL = {"bos_token": "<s>", "eos_token": "</s>"}


def environment():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env


def render(env, source, messages, add_generation_prompt):
    try:
        return {"text": env.from_string(source).render(
            messages=messages, add_generation_prompt=add_generation_prompt, **SPECIAL)}
    except jinja2.exceptions.TemplateError as e:
        return {"error": str(e)}


def main():
    templates = json.loads((DATA / "templates.json").read_text())
    env = environment()
    cases = []
    for name, source in templates.items():
        for conv, messages in CONVERSATIONS.items():
            for agp in (False, True):
                cases.append({"template": name, "conversation": conv, "add_generation_prompt": agp,
                              **render(env, source, messages, agp)})
    out = {"generator": "tests/gen/gen_chat_templates.py", "jinja2": jinja2.__version__,
           "special_tokens": SPECIAL, "conversations": CONVERSATIONS, "cases": cases}
    (DATA / "expected.json").write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n")
    print(f"{len(cases)} cases, {sum('error' in c for c in cases)} errors")


if __name__ == "__main__":
    main()
