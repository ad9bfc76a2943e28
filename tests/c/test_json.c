/* test_json.c — the strict JSON parser behind Foundry's file readers
 * (io/json.h): what it accepts, what it decodes, and what it refuses. */
#include "harness.h"

#include "../../io/json.h"

static tm_status parse(tm__json_doc *d, const char *text)
{
    return tm__json_parse(d, text, strlen(text), "test", "");
}

/* `text` is refused with TM_EFORMAT and a message containing `substr`. */
#define CHECK_JSON_BAD(text, substr)                                          \
    do {                                                                      \
        tm__json_doc d_;                                                      \
        tm_clear_error();                                                     \
        tm_status s_ = tm__json_parse(&d_, (text), sizeof(text) - 1, "test",  \
                                      "");                                    \
        tt_check_error(__FILE__, __LINE__, #text, s_ == TM_EFORMAT,           \
                       TM_EFORMAT, (substr));                                 \
        if (!s_) tm__json_free(&d_);                                          \
    } while (0)

#define CHECK_JSON_OK(text)                                                   \
    do {                                                                      \
        tm__json_doc d_;                                                      \
        tm_status s_ = tm__json_parse(&d_, (text), sizeof(text) - 1, "test",  \
                                      "");                                    \
        if (s_)                                                               \
            tt_fail(__FILE__, __LINE__, "%s refused: %s", #text,              \
                    tm_last_error());                                         \
        else tm__json_free(&d_);                                              \
    } while (0)

TEST(json_parses_a_nested_document)
{
    tm__json_doc d;
    REQUIRE(!parse(&d, " {\"a\" : [1, -2, {\"b\": null}], \"c\":\"x\",\n"
                      "\t\"d\": true, \"e\": 1.5e2, \"f\": false, \"g\": {}}\r"));
    const tm__json_node *n = d.nodes;
    CHECK_INT(n[0].type, TM__JSON_OBJECT);
    CHECK_INT(n[0].count, 6);
    CHECK_INT(n[0].next, d.n);
    const tm__json_node *a = tm__json_get(&d, 0, "a");
    REQUIRE(a && a->type == TM__JSON_ARRAY && a->count == 3);
    size_t ai = (size_t)(a - n);
    CHECK_INT(n[ai + 1].type, TM__JSON_INT);
    CHECK_INT(n[ai + 1].i, 1);
    CHECK_INT(n[n[ai + 1].next].i, -2);
    const tm__json_node *inner = &n[n[n[ai + 1].next].next];
    CHECK_INT(inner->type, TM__JSON_OBJECT);
    CHECK_INT(tm__json_get(&d, (size_t)(inner - n), "b")->type,
              TM__JSON_NULL);
    const tm__json_node *c = tm__json_get(&d, 0, "c");
    CHECK(c && c->type == TM__JSON_STRING && !strcmp(c->str, "x"));
    CHECK_INT(tm__json_get(&d, 0, "d")->i, 1);
    CHECK_INT(tm__json_get(&d, 0, "f")->i, 0);
    CHECK_INT(tm__json_get(&d, 0, "e")->type, TM__JSON_FLOAT);
    CHECK_NEAR(tm__json_get(&d, 0, "e")->f, 150.0, 0);
    CHECK_INT(tm__json_get(&d, 0, "g")->count, 0);
    CHECK(tm__json_get(&d, 0, "zz") == NULL);
    CHECK(tm__json_get(&d, ai, "a") == NULL); /* not an object */
    tm__json_free(&d);
}

TEST(json_decodes_string_escapes)
{
    tm__json_doc d;
    REQUIRE(!parse(&d, "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\u20AC"
                       "\\ud83d\\ude00\\u0000z\""));
    const char want[] = "\"\\/\b\f\n\r\t\xc3\xa9\xe2\x82\xac"
                        "\xf0\x9f\x98\x80\0z";
    CHECK_INT(d.nodes[0].len, sizeof want - 1);
    CHECK(!memcmp(d.nodes[0].str, want, sizeof want));
    tm__json_free(&d);
    /* raw UTF-8 passes through */
    REQUIRE(!parse(&d, "[\"caf\xc3\xa9 \xf0\x9f\x98\x80\"]"));
    CHECK(!strcmp(d.nodes[1].str, "caf\xc3\xa9 \xf0\x9f\x98\x80"));
    tm__json_free(&d);
}

TEST(json_refuses_bad_surrogates_and_escapes)
{
    CHECK_JSON_BAD("\"\\ud83d\"", "unpaired high surrogate \\uD83D");
    CHECK_JSON_BAD("\"\\ud83dx\"", "unpaired high surrogate");
    CHECK_JSON_BAD("\"\\ude00\"", "unpaired low surrogate \\uDE00");
    CHECK_JSON_BAD("\"\\ud83d\\u0041\"", "not a low surrogate");
    CHECK_JSON_BAD("\"\\x\"", "invalid escape '\\x'");
    CHECK_JSON_BAD("\"\\u12g4\"", "invalid \\u escape");
    CHECK_JSON_BAD("\"\\u12\"", "truncated \\u escape");
    CHECK_JSON_BAD("\"a\tb\"", "raw control character 0x09");
    CHECK_JSON_BAD("\"abc", "unterminated string at byte 0");
}

TEST(json_refuses_invalid_utf8)
{
    CHECK_JSON_BAD("\"\xff\"", "invalid UTF-8 in a string at byte 1");
    CHECK_JSON_BAD("\"\xc0\x80\"", "invalid UTF-8");         /* overlong */
    CHECK_JSON_BAD("\"\xe0\x80\xaf\"", "invalid UTF-8");     /* overlong */
    CHECK_JSON_BAD("\"\xed\xa0\x80\"", "invalid UTF-8");     /* surrogate */
    CHECK_JSON_BAD("\"\xf4\x90\x80\x80\"", "invalid UTF-8"); /* > U+10FFFF */
    CHECK_JSON_BAD("\"\xe2\x82\"", "invalid UTF-8");         /* truncated */
    CHECK_JSON_BAD("\"\x80\"", "invalid UTF-8");             /* stray */
    CHECK_JSON_BAD("\xc3\xa9", "unexpected byte 0xC3");
}

TEST(json_utf8_validator)
{
    size_t bad = 99;
    const char ok[] = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf";
    CHECK(tm__utf8_valid((const unsigned char *)ok, sizeof ok - 1, &bad));
    CHECK(tm__utf8_valid((const unsigned char *)"", 0, &bad));
    CHECK(!tm__utf8_valid((const unsigned char *)"ab\xc3", 3, &bad));
    CHECK_INT(bad, 2);
    CHECK(!tm__utf8_valid((const unsigned char *)"\xc3\xa9\xf8", 3, &bad));
    CHECK_INT(bad, 2);
}

TEST(json_numbers_follow_the_grammar)
{
    CHECK_JSON_BAD("NaN", "unexpected character 'N'");
    CHECK_JSON_BAD("Infinity", "unexpected character 'I'");
    CHECK_JSON_BAD("-Infinity", "invalid number");
    CHECK_JSON_BAD("01", "leading zero");
    CHECK_JSON_BAD("-01", "leading zero");
    CHECK_JSON_BAD("+1", "unexpected character '+'");
    CHECK_JSON_BAD(".5", "unexpected character '.'");
    CHECK_JSON_BAD("1.", "invalid number");
    CHECK_JSON_BAD("1e", "invalid number");
    CHECK_JSON_BAD("1e+", "invalid number");
    CHECK_JSON_BAD("0x10", "unexpected data after the value at byte 1");
    CHECK_JSON_BAD("1e400", "out of the range of double");
    CHECK_JSON_BAD("9223372036854775808", "does not fit int64");
    CHECK_JSON_BAD("-9223372036854775809", "does not fit int64");
    tm__json_doc d;
    REQUIRE(!parse(&d, "[9223372036854775807,-9223372036854775808,-0,0,"
                       "-1.25E-2,1e-400,"
                       "0.10000000000000000000000000000000000000000000000000"
                       "00000000000000000000001]"));
    CHECK_INT(d.nodes[1].i, INT64_MAX);
    CHECK(d.nodes[2].i == INT64_MIN);
    CHECK_INT(d.nodes[3].type, TM__JSON_INT);
    CHECK_INT(d.nodes[3].i, 0);
    CHECK_NEAR(d.nodes[5].f, -0.0125, 0);
    CHECK_NEAR(d.nodes[6].f, 0, 0);
    CHECK_NEAR(d.nodes[7].f, 0.1, 0);
    tm__json_free(&d);
}

TEST(json_refuses_trailing_commas_and_garbage)
{
    CHECK_JSON_BAD("[1,]", "trailing comma in an array");
    CHECK_JSON_BAD("{\"a\":1,}", "trailing comma in an object");
    CHECK_JSON_BAD("[1 2]", "expected ',' or ']'");
    CHECK_JSON_BAD("{\"a\" 1}", "expected ':' after a key");
    CHECK_JSON_BAD("{a:1}", "expected a string key");
    CHECK_JSON_BAD("{} x", "unexpected data after the value at byte 3");
    CHECK_JSON_BAD("[1] [2]", "unexpected data after the value");
    CHECK_JSON_BAD("", "unexpected end of input at byte 0");
    CHECK_JSON_BAD("  \n", "unexpected end of input");
    CHECK_JSON_BAD("[1,", "unexpected end of input");
    CHECK_JSON_BAD("// c\n{}", "unexpected character '/'");
    CHECK_JSON_BAD("['a']", "unexpected character '''");
    CHECK_JSON_BAD("\f{}", "unexpected byte 0x0C");
    CHECK_JSON_BAD("{}\xc2\xa0", "unexpected data after the value");
    CHECK_JSON_BAD("tru", "invalid literal");
    CHECK_JSON_BAD("nul", "invalid literal");
    CHECK_JSON_BAD("[true false]", "expected ',' or ']'");
    CHECK_JSON_OK(" \t\r\n{ \"a\" : [ ] } \n");
}

TEST(json_refuses_duplicate_keys)
{
    CHECK_JSON_BAD("{\"a\":1,\"b\":2,\"a\":3}", "duplicate key \"a\" at byte 17");
    /* larger objects are checked by sorting */
    CHECK_JSON_BAD("{\"k0\":0,\"k1\":1,\"k2\":2,\"k3\":3,\"k4\":4,\"k5\":5,"
                   "\"k6\":6,\"k7\":7,\"k8\":8,\"k9\":9,\"k3\":10}",
                   "duplicate key \"k3\"");
    /* same key in different objects, and keys that differ only in length */
    CHECK_JSON_OK("{\"a\":{\"a\":1},\"b\":{\"a\":2},\"ab\":0,\"a\\u0000\":1}");
    /* an escaped spelling is the same key */
    CHECK_JSON_BAD("{\"a\":1,\"\\u0061\":2}", "duplicate key \"a\"");
}

TEST(json_limits_nesting_depth)
{
    char deep[2 * TM__JSON_MAX_DEPTH + 3];
    for (int depth = TM__JSON_MAX_DEPTH; depth <= TM__JSON_MAX_DEPTH + 1;
         depth++) {
        int k = 0;
        for (int i = 0; i < depth; i++) deep[k++] = '[';
        for (int i = 0; i < depth; i++) deep[k++] = ']';
        tm__json_doc d;
        tm_clear_error();
        tm_status st = tm__json_parse(&d, deep, (size_t)k, "test", "");
        if (depth == TM__JSON_MAX_DEPTH) {
            CHECK_INT(st, TM_OK);
            if (!st) tm__json_free(&d);
        } else {
            CHECK_INT(st, TM_EFORMAT);
            CHECK(strstr(tm_last_error(), "nesting deeper than 64 levels"));
        }
    }
}

TEST(json_message_carries_function_and_prefix)
{
    tm__json_doc d;
    tm_clear_error();
    CHECK_INT(tm__json_parse(&d, "[1,,2]", 6, "my_reader", "f.json: "),
              TM_EFORMAT);
    CHECK(!strcmp(tm_last_error(),
                  "my_reader: f.json: invalid JSON: unexpected character ',' "
                  "at byte 3"));
}

TEST(json_fmt_name_escapes_and_truncates)
{
    char buf[16];
    CHECK(!strcmp(tm__fmt_name(buf, sizeof buf, "a\nb\\", 4), "a\\x0ab\\x5c"));
    tm__fmt_name(buf, sizeof buf, "abcdefghijklmnopqrstuvwxyz", 26);
    CHECK(strlen(buf) < sizeof buf && strstr(buf, "..."));
    /* a multi-byte character is never cut */
    tm__fmt_name(buf, sizeof buf, "abcdefgh\xe2\x82\xac\xe2\x82\xacxyz", 17);
    CHECK(tm__utf8_valid((const unsigned char *)buf, strlen(buf), NULL));
}

static tm_status parse_big(void)
{
    /* >16 nodes (array growth), an object of >8 keys (sorted duplicate
     * check) and a number of >64 characters (heap copy for strtod) */
    static const char text[] =
        "{\"k0\":0,\"k1\":1,\"k2\":2,\"k3\":3,\"k4\":4,\"k5\":5,\"k6\":6,"
        "\"k7\":7,\"k8\":8,\"k9\":[1,2,3,4,5,6,7,8,9,10],\"f\":"
        "0.1000000000000000000000000000000000000000000000000000000000000001}";
    tm__json_doc d;
    tm_status st = tm__json_parse(&d, text, sizeof text - 1, "test", "");
    if (!st) tm__json_free(&d);
    return st;
}

TEST(json_every_allocation_failure_is_clean)
{
    CHECK_EVERY_ALLOC_FAILURE(parse_big, 4);
}
