/* SPDX-License-Identifier: MIT */
/* The script front end's verdicts (tools/nanoprobe/script/): programs
 * that parse and type-check, and programs refused with bpftrace's
 * message, line and columns. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/vm_run.h"
#include "script/compile.h"

static const struct {
	const char *prog;
	const char *error; /* NULL: accepted; else in the first line of the message */
} cases[] = {
	{"uprobe:a:f { @ = count(); }", NULL},
	{"u:c:malloc /arg0 > 4096/ { @big[ustack(5)] = count(); }", NULL},
	{"uprobe:a:f { @s[tid] = nsecs; } uretprobe:a:f /@s[tid]/ { @us = hist((nsecs - @s[tid]) / 1000); delete(@s[tid]); }", NULL},
	{"uprobe:a:f { $x = arg0; if ($x > 1) { @a[$x, \"k\"] = sum($x); } else { @b = max($x); } }", NULL},
	{"BEGIN { printf(\"%d %s\\n\", 1, \"a\"); exit(); } END { print(@x); } uprobe:a:f { @x = count(); }", NULL},
	{"interval:ms:100 { print(@c, 3, 10); clear(@c); } uprobe:a:f { @c[comm] = count(); }", NULL},
	{"uprobe:a:f { @l = lhist(arg0, 0, 100, 10); @t = stats(arg1); @v = avg(arg2); @m = min(sarg0); }", NULL},
	{"uprobe:a:f { @[str(arg0, 8) == \"x\" ? 1 : 2, usym(arg1), func, probe] = count(); }", NULL},
	{"uprobe:a:f { unroll(3) { @n++; } return; }", NULL},
	{"uprobe:a:f { @x = foo(1); }", "stdin:1:19-25: ERROR: Unknown function: foo"},
	{"uprobe:a:f { @x = $y; }", "stdin:1:19-21: ERROR: Undefined or undeclared variable: $y"},
	{"uprobe:a:f {\n  @x = bogus;\n}", "stdin:2:8-13: ERROR: Unknown identifier: 'bogus'"},
	{"kprobe:do_nanosleep { @ = count(); }", "kprobe probes are not supported"},
	{"tracepoint:syscalls:sys_enter_read { }", "tracepoint probes are not supported"},
	{"uprobe:a:f { @ = kstack; }", "kstack is not supported"},
	{"uprobe:a:f { system(\"ls\"); }", "system() is not supported"},
	{"uretprobe:a:f { @ = arg0; }", "The arg0 builtin can only be used with 'uprobe' and 'usdt'"},
	{"uprobe:a:f { @ = retval; }", "retval builtin can only be used with 'uretprobe'"},
	{"uprobe:a:f { @x = 1; @x = \"s\"; }", "Type mismatch for @x"},
	{"uprobe:a:f { @x = count(); @x = sum(1); }", "Type mismatch for @x"},
	{"uprobe:a:f { @x[1] = 1; @x[\"a\"] = 2; }", "Argument mismatch for @x"},
	{"uprobe:a:f { printf(\"%d\\n\", \"s\"); }", "%d specifier expects a value of type integer"},
	{"uprobe:a:f { printf(\"%d %d\\n\", 1); }", "Not enough arguments"},
	{"uprobe:a:f { count(); }", "count() should be directly assigned to a map"},
	{"uprobe:a:f { while (1) { } }", "while loops are not supported"},
	{"uprobe:a:f /arg0 > / { }", "syntax error"},
	{"uprobe:a:f { @x = 1 }}", "syntax error"},
	{"uprobe:a:f { @c = count(); if (@c > 1) { } }", "holds an aggregation"},
	{"usdt:a { }", "usdt probe must be usdt:PATH:[PROVIDER:]NAME"},
	{"usdt:a:p:n:x { }", "usdt probe must be usdt:PATH:[PROVIDER:]NAME"},
	{"usdt:a:p: { }", "usdt probe must be usdt:PATH:[PROVIDER:]NAME"},
	{"usdt:a:p:n { @ = arg12; }", "arg12: a USDT probe has at most 12 arguments"},
	{"usdt:a:p:n, uprobe:a:f { @ = arg6; }", "only arg0..arg5 are in registers"},
	{"usdt:a:p:n { @[func] = count(); }", "The func builtin can not be used with 'usdt' probes"},
	{"usdt:a:p:n { @ = sarg0; }", "The sarg0 builtin can only be used with 'uprobe' probes"},
	{"interval:m:5 { }", "interval probe must be"},
	{"uprobe:a:f { @x = \"" "0123456789012345678901234567890123456789012345678901234567890123456789" "\"; }", "String is too long"},
};

int main(void)
{
	int failed = 0;
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		char *err = NULL;
		size_t len = 0;
		script_err_stream = open_memstream(&err, &len);
		struct program p = {0};
		struct compiled c;
		struct compile_opts o = {0};
		int rc = script_parse(&p, "stdin", cases[i].prog) || script_check(&p) ||
			 script_compile(&p, &o, &c);
		fclose(script_err_stream);
		script_err_stream = NULL;
		bool ok = cases[i].error ? rc && err && strstr(err, cases[i].error) &&
						   strstr(err, "~")
					 : !rc;
		if (!cases[i].error && !rc) {
			char why[200];
			ok = ok && np_vm_verify(c.prog, c.prog->size, why, sizeof(why)) == 0;
		}
		if (!rc)
			compiled_free(&c);
		printf("%s %zu: %s\n", ok ? "ok" : "not ok", i + 1, cases[i].prog);
		if (!ok)
			printf("# got rc=%d: %s\n", rc, err ? err : "");
		failed += !ok;
		free(err);
		program_free(&p);
	}
	printf("1..%zu\n", sizeof(cases) / sizeof(*cases));
	return failed != 0;
}
