"""Chat templates: Foundry's Jinja2-subset interpreter renders SmolLM2's,
Qwen2.5's, Llama-3's, Zephyr's and Mistral's templates (and one exercising
the whole subset) exactly as Hugging Face's apply_chat_template does with
Jinja2 — the expected texts were written by Jinja2 itself
(tests/gen/gen_chat_templates.py), errors included; when jinja2 is
installed the same renders are also redone live.  Constructs outside the
subset are refused by name."""
import json
import pathlib

import pytest

from foundry.tokenizers import ChatTemplate

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "chat_templates"
TEMPLATES = json.loads((DATA / "templates.json").read_text())
EXPECTED = json.loads((DATA / "expected.json").read_text())
SPECIAL = EXPECTED["special_tokens"]


def _case_id(c):
    return f"{c['template']}-{c['conversation']}-{'gen' if c['add_generation_prompt'] else 'nogen'}"


@pytest.mark.parametrize("case", EXPECTED["cases"], ids=_case_id)
def test_matches_jinja2_fixture(case):
    t = ChatTemplate(TEMPLATES[case["template"]], SPECIAL["bos_token"], SPECIAL["eos_token"])
    msgs = EXPECTED["conversations"][case["conversation"]]
    if "error" in case:
        with pytest.raises(Exception) as e:
            t.apply(msgs, case["add_generation_prompt"])
        if "raise" in TEMPLATES[case["template"]] and "alternate" in case["error"]:
            assert case["error"] in str(e.value)  # raise_exception's own message
    else:
        assert t.apply(msgs, case["add_generation_prompt"]) == case["text"]


def test_matches_jinja2_live():
    jinja2 = pytest.importorskip("jinja2")
    import importlib.util
    import sys
    spec = importlib.util.spec_from_file_location(
        "gen_chat_templates", DATA.parents[1] / "gen" / "gen_chat_templates.py")
    gen = importlib.util.module_from_spec(spec)
    sys.modules["gen_chat_templates"] = gen
    spec.loader.exec_module(gen)
    env = gen.environment()
    n = 0
    for name, src in TEMPLATES.items():
        t = ChatTemplate(src, SPECIAL["bos_token"], SPECIAL["eos_token"])
        for msgs in gen.CONVERSATIONS.values():
            for agp in (False, True):
                want = gen.render(env, src, msgs, agp)
                if "text" in want:
                    assert t.apply(msgs, agp) == want["text"], (name, msgs, agp)
                    n += 1
    assert n > 50 and jinja2


def test_whitespace_control_rules():
    # trim_blocks, lstrip_blocks, "-" and "+" as HF's Jinja2 environment
    # (the expected text is Jinja2 3.1.6's render of src)
    src = "a\n  {% if true %}\n  b\n  {%- endif %}\n{%+ if true %}c{% endif %}\n  {{ 'd' }}  \n{# note #}\ne\n"
    assert ChatTemplate(src).apply([]) == "a\n  bc  d  \ne"


@pytest.mark.parametrize("src, what", [
    ("{% macro m() %}x{% endmacro %}", '"macro" statement'),
    ("{% for a, b in messages %}{% endfor %}", "tuple unpacking"),
    ("{{ {'a': 1} }}", "dict literals"),
    ("{{ 1.5 }}", "float literals"),
    ("{% set x %}y{% endset %}", "set name = value"),
])
def test_unsupported_constructs_are_named(src, what):
    with pytest.raises(NotImplementedError, match=what):
        ChatTemplate(src)


@pytest.mark.parametrize("src, what", [
    ("{% if true %}x", '"if" without "endif"'),
    ("{{ 'x' ", 'unclosed "{{"'),
    ("x{% endfor %}", '"endfor" without its opening tag'),
    ("{{ 'abc }}", "unclosed"),
])
def test_syntax_errors(src, what):
    with pytest.raises(ValueError, match=what):
        ChatTemplate(src)


def test_runtime_errors():
    with pytest.raises(NotImplementedError, match='filter "wordcount"'):
        ChatTemplate("{{ 'a b' | wordcount }}").apply([])
    with pytest.raises(ValueError, match="raised an exception: nope"):
        ChatTemplate("{{ raise_exception('nope') }}").apply([])
    with pytest.raises(ValueError, match="'foo' is undefined"):
        ChatTemplate("{{ 'a' + foo }}").apply([])
    # undefined prints empty and iterates as empty, as Jinja2's Undefined
    assert ChatTemplate("[{{ foo }}]{% for x in foo %}y{% endfor %}").apply([]) == "[]"
    with pytest.raises(NotImplementedError, match="keys other than role and content"):
        ChatTemplate("x").apply([{"role": "user", "content": "a", "tool_calls": []}])


def test_mutated_templates_never_crash():
    """2000 seeded random mutations of the fixture templates: each parses
    and renders or fails with a FoundryError, never a crash or a hang."""
    import random
    import foundry
    r = random.Random(7)
    sources = list(TEMPLATES.values())
    pieces = ["{%", "%}", "{{", "}}", "{#", "#}", "-", "'", '"', "(", ")", "[", "]", "|", ".", " if ", " else ",
              " for ", " in ", " not ", "endif", "endfor", "loop", "\\", "\n", "ns.", "=", "~", "%", "//", ":"]
    msgs = EXPECTED["conversations"]["tool_turns"]
    ok = 0
    for _ in range(2000):
        s = list(r.choice(sources))
        for _ in range(r.randint(1, 4)):
            i = r.randrange(len(s) + 1)
            if r.random() < 0.5 and s:
                del s[i:i + r.randint(1, 6)]
            else:
                s[i:i] = r.choice(pieces)
        try:
            t = ChatTemplate("".join(s), "<s>", "</s>")
            t.apply(msgs, r.random() < 0.5)
            ok += 1
        except foundry.FoundryError:
            pass
    assert ok > 0
