/* SPDX-License-Identifier: MIT */
/* The uprobe_events grammar, one form per test, and where errors point. */
#include <errno.h>
#include <string.h>

#include "symbols/spec.h"
#include "test.h"

static struct spec s;
static char err[512];

static int parse(const char *text)
{
	err[0] = 0;
	return spec_parse(text, &s, err, sizeof(err));
}

TEST(bare_symbol_is_an_entry_probe_in_the_traced_program)
{
	CHECK_EQ(parse("malloc"), 0);
	CHECK(!s.is_return);
	CHECK_STR(s.path, "");
	CHECK_STR(s.symbol, "malloc");
	CHECK_EQ(s.nargs, 0);
}

TEST(kernel_form_with_group_event_path_symbol_offset)
{
	CHECK_EQ(parse("p:grp/ev /bin/bash:readline+0x10"), 0);
	CHECK_STR(s.group, "grp");
	CHECK_STR(s.event, "ev");
	CHECK_STR(s.path, "/bin/bash");
	CHECK_STR(s.symbol, "readline");
	CHECK_EQ(s.offset, 16);
}

TEST(return_probes_by_r_or_percent_return)
{
	CHECK_EQ(parse("r c:malloc"), 0);
	CHECK(s.is_return);
	CHECK_EQ(parse("c:malloc%return"), 0);
	CHECK(s.is_return);
	CHECK_STR(s.symbol, "malloc");
}

TEST(path_and_file_offset)
{
	CHECK_EQ(parse("/usr/bin/x:0x4a0"), 0);
	CHECK_STR(s.path, "/usr/bin/x");
	CHECK_STR(s.symbol, "");
	CHECK_EQ(s.offset, 0x4a0);
}

TEST(fetch_args_registers_arguments_stack_and_return_value)
{
	CHECK_EQ(parse("r f a=%di b=$arg2:s32 c=$stack3:u16 d=$stack e=$retval:x8"), 0);
	CHECK_EQ(s.nargs, 5);
	CHECK_EQ(s.args[0].f.base, NP_FB_REG);
	CHECK_EQ(s.args[0].f.type, NP_FT_X); /* the default, x64 */
	CHECK_EQ(s.args[0].f.size, 8);
	CHECK_EQ(s.args[1].f.base, NP_FB_ARG);
	CHECK_EQ(s.args[1].f.index, 1); /* $arg2 is the second: index 1 */
	CHECK_EQ(s.args[1].f.type, NP_FT_S);
	CHECK_EQ(s.args[1].f.size, 4);
	CHECK_EQ(s.args[2].f.base, NP_FB_STACK);
	CHECK_EQ(s.args[2].f.index, 3);
	CHECK_EQ(s.args[3].f.base, NP_FB_SP);
	CHECK_EQ(s.args[4].f.base, NP_FB_RETVAL);
	CHECK_STR(s.args[4].f.name, "e");
}

TEST(unnamed_args_are_arg1_arg2_by_position)
{
	CHECK_EQ(parse("f %si $arg1"), 0);
	CHECK_STR(s.args[0].f.name, "arg1");
	CHECK_STR(s.args[1].f.name, "arg2");
}

TEST(nested_dereferences_innermost_first)
{
	CHECK_EQ(parse("f x=+8(-16(%bp)):string"), 0);
	CHECK_EQ(s.args[0].f.base, NP_FB_REG);
	CHECK_EQ(s.args[0].f.nderef, 2);
	CHECK_EQ(s.args[0].f.off[0], -16);
	CHECK_EQ(s.args[0].f.off[1], 8);
	CHECK_EQ(s.args[0].f.type, NP_FT_STRING);
}

TEST(memory_at_an_address_a_symbol_or_a_file_offset)
{
	CHECK_EQ(parse("f a=@0x601040:u32 b=@counter+8 c=@+0x1040"), 0);
	CHECK_EQ(s.args[0].f.base, NP_FB_IMM);
	CHECK_EQ(s.args[0].f.imm, 0x601040);
	CHECK_EQ(s.args[0].f.nderef, 1);
	CHECK_EQ(s.args[1].f.base, NP_FB_MODREL);
	CHECK_STR(s.args[1].sym, "counter");
	CHECK_EQ(s.args[1].f.imm, 8);
	CHECK(s.args[2].file_offset);
	CHECK_EQ(s.args[2].f.imm, 0x1040);
}

TEST(errors_name_the_token_and_point_at_it)
{
	CHECK_EQ(parse("p c:malloc size=%zz"), -EINVAL);
	CHECK(strstr(err, "unknown register '%zz'") != NULL);
	CHECK(strstr(err, "\n  p c:malloc size=%zz\n                  ^~~") != NULL);
	CHECK_EQ(parse("f x=%di:u7"), -EINVAL);
	CHECK(strstr(err, "unknown type 'u7'") != NULL);
	CHECK_EQ(parse("f x=$arg9"), -EINVAL);
	CHECK(strstr(err, "unknown variable '$arg9'") != NULL);
	CHECK_EQ(parse("f x=$retval"), -EINVAL);
	CHECK(strstr(err, "$retval needs a return probe") != NULL);
	CHECK_EQ(parse("r f+4"), -EINVAL);
	CHECK(strstr(err, "function entry") != NULL);
	CHECK_EQ(parse("c:malloc%retrun"), -EINVAL);
	CHECK(strstr(err, "unknown suffix") != NULL);
	CHECK_EQ(parse("f x=+8(%di"), -EINVAL);
	CHECK(strstr(err, "bad dereference") != NULL);
	CHECK_EQ(parse(":malloc"), -EINVAL);
	CHECK_EQ(parse("   "), -EINVAL);
}

TEST(too_many_args_or_dereferences_are_refused)
{
	char text[512] = "f";
	for (int i = 0; i <= NP_MAX_ARGS; i++)
		strcat(text, " %di");
	CHECK_EQ(parse(text), -EINVAL);
	CHECK(strstr(err, "fetch arguments") != NULL);
	CHECK_EQ(parse("f x=+1(+1(+1(+1(+1(%di)))))"), -EINVAL);
	CHECK(strstr(err, "nested dereferences") != NULL);
}

TEST_MAIN()
