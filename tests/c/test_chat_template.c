/* test_chat_template.c — the chat-template interpreter from C: SmolLM2's
 * ChatML template renders its default system prompt and the generation
 * header (texts as Jinja2 renders them, tests/data/chat_templates),
 * bos_token / eos_token come from a GGUF file's special ids, and bad
 * templates — unknown statements, unclosed tags, runaway nesting,
 * raise_exception — are errors naming the line, never a crash. */
#include "harness.h"
#include "tmpfiles.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char smollm2[] =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\\n' }}"
    "{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/* apply and compare with want (NULL: expect failure with status st and sub) */
static void expect(const tm_chat_template *t, const tm_chat_msg *m, int n, bool gen, const char *want,
                   tm_status st, const char *sub, int line)
{
    size_t len = 0;
    tm_clear_error();
    char *s = tm_chat_template_apply(t, m, n, gen, &len);
    if (want) {
        if (!s)
            tt_fail(__FILE__, line, "apply failed: %s", tm_last_error());
        else if (len != strlen(want) || strcmp(s, want) != 0)
            tt_fail(__FILE__, line, "got \"%s\", expected \"%s\"", s, want);
    } else if (s) {
        tt_fail(__FILE__, line, "expected an error, got \"%s\"", s);
    } else if (tm_last_status() != st || !strstr(tm_last_error(), sub)) {
        tt_fail(__FILE__, line, "expected %s with \"%s\", got %s", tm_status_name(st), sub, tm_last_error());
    }
    free(s);
}

TEST(chat_template_smollm2)
{
    tm_chat_template *t = tm_chat_template_new(smollm2);
    REQUIRE(t != NULL);
    tm_chat_msg one[] = {{"user", "Hello!"}};
    expect(t, one, 1, true,
           "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
           "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n", 0, NULL, __LINE__);
    tm_chat_msg two[] = {{"system", "Be brief."}, {"user", "Hi"}};
    expect(t, two, 2, false, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n", 0, NULL,
           __LINE__);
    expect(t, NULL, 0, true, "<|im_start|>assistant\n", 0, NULL, __LINE__);
    tm_chat_msg bad[] = {{"user", NULL}};
    expect(t, bad, 1, false, NULL, TM_EINVAL, "msgs[0].content is NULL", __LINE__);
    tm_chat_template_free(t);
}

TEST(chat_template_tokens_from_gguf)
{
    char dir[TT_PATH_MAX], path[TT_PATH_MAX];
    if (!tt_tmpdir(dir))
        return;
    tt_path(path, dir, "t.gguf");
    tm_gguf_writer *w = tm_gguf_writer_new();
    REQUIRE(w != NULL);
    const char *tokens[] = {"<s>", "</s>", "a"};
    CHECK_INT(tm_gguf_set_str_array(w, "tokenizer.ggml.tokens", tokens, 3), TM_OK);
    CHECK_INT(tm_gguf_set_u32(w, "tokenizer.ggml.bos_token_id", 0), TM_OK);
    CHECK_INT(tm_gguf_set_u32(w, "tokenizer.ggml.eos_token_id", 1), TM_OK);
    CHECK_INT(tm_gguf_set_str(w, "tokenizer.chat_template",
                              "{{ bos_token }}{% for m in messages %}[{{ m.content }}]{{ eos_token }}{% endfor %}",
                              SIZE_MAX), TM_OK);
    CHECK_INT(tm_gguf_writer_write(w, path), TM_OK);
    tm_gguf_writer_free(w);
    tm_gguf *g = tm_gguf_open(path);
    tt_rmdir(dir);
    REQUIRE(g != NULL);
    tm_chat_template *t = tm_chat_template_from_gguf(g);
    tm_gguf_close(g);
    REQUIRE(t != NULL);
    tm_chat_msg m[] = {{"user", "x"}, {"assistant", "y"}};
    expect(t, m, 2, false, "<s>[x]</s>[y]</s>", 0, NULL, __LINE__);
    tm_chat_template_free(t);
    tm_clear_error();
    CHECK(tm_chat_template_from_gguf(NULL) == NULL);
}

/* parsing src fails with st and a message containing sub */
static void expect_parse_error(const char *src, tm_status st, const char *sub, int line)
{
    tm_clear_error();
    tm_chat_template *t = tm_chat_template_new(src);
    if (t) {
        tt_fail(__FILE__, line, "expected a parse error for \"%s\"", src);
        tm_chat_template_free(t);
    } else if (tm_last_status() != st || !strstr(tm_last_error(), sub)) {
        tt_fail(__FILE__, line, "expected %s with \"%s\", got %s", tm_status_name(st), sub, tm_last_error());
    }
}

TEST(chat_template_errors)
{
    expect_parse_error("a\n{% macro m() %}{% endmacro %}", TM_EUNSUPPORTED, "line 2: the \"macro\" statement", __LINE__);
    expect_parse_error("{% if x %}y", TM_EFORMAT, "\"if\" without \"endif\"", __LINE__);
    expect_parse_error("{% for x in y %}", TM_EFORMAT, "\"for\" without \"endfor\"", __LINE__);
    expect_parse_error("{{ x ", TM_EFORMAT, "unclosed \"{{\"", __LINE__);
    expect_parse_error("{% endif %}", TM_EFORMAT, "\"endif\" without its opening tag", __LINE__);
    expect_parse_error("{{ 'abc }}", TM_EFORMAT, "unclosed", __LINE__);
    expect_parse_error("{{ x y }}", TM_EFORMAT, "unexpected text after the expression", __LINE__);
    expect_parse_error("{{ a ** 2 }}", TM_EUNSUPPORTED, "\"**\"", __LINE__);
    expect_parse_error("{{ '\\u12' }}", TM_EFORMAT, "escape", __LINE__);
    /* runaway nesting is refused, not a stack overflow */
    char *deep = malloc(20000);
    REQUIRE(deep != NULL);
    size_t k = 0;
    k += (size_t)sprintf(deep + k, "{{ ");
    for (int i = 0; i < 5000; i++)
        deep[k++] = '(';
    deep[k++] = '1';
    for (int i = 0; i < 5000; i++)
        deep[k++] = ')';
    strcpy(deep + k, " }}");
    expect_parse_error(deep, TM_EUNSUPPORTED, "nested more than 200 deep", __LINE__);
    k = 0;
    for (int i = 0; i < 100; i++)
        k += (size_t)sprintf(deep + k, "{%% if 1 %%}");
    deep[k] = 0;
    expect_parse_error(deep, TM_EUNSUPPORTED, "nested more than 64 deep", __LINE__);
    free(deep);
    tm_clear_error();
    CHECK(tm_chat_template_new(NULL) == NULL);
    CHECK_INT(tm_last_status(), TM_EINVAL);

    tm_chat_template *t = tm_chat_template_new("ok\n{% if messages | length > 1 %}{{ raise_exception('one only') }}{% endif %}");
    REQUIRE(t != NULL);
    tm_chat_msg m[] = {{"user", "a"}, {"user", "b"}};
    expect(t, m, 1, false, "ok\n", 0, NULL, __LINE__);
    expect(t, m, 2, false, NULL, TM_EINVAL, "line 2: the template raised an exception: one only", __LINE__);
    tm_chat_template_free(t);
    t = tm_chat_template_new("{{ messages[0].content | wordcount }}");
    REQUIRE(t != NULL);
    expect(t, m, 1, false, NULL, TM_EUNSUPPORTED, "the filter \"wordcount\" is not supported", __LINE__);
    expect(t, NULL, 0, false, NULL, TM_EINVAL, "undefined", __LINE__);
    tm_chat_template_free(t);
    CHECK(tm_chat_template_apply(NULL, m, 1, false, NULL) == NULL);
    tm_chat_template_free(NULL);
}
