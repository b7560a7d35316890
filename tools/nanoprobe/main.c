/* SPDX-License-Identifier: MIT */
/* nanoprobe: a table of verbs, as bpftool is. Each verb describes itself
 * (cli.h): its synopsis, its summary and its options, from which its
 * --help and its parser are made. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "output/output.h"
#include "suggest.h"

static const struct cli_verb *const verbs[] = {
	&verb_trace, &verb_count, &verb_latency, &verb_run, &verb_watch, &verb_list, &verb_analyze,
#ifdef NP_HAVE_BENCH /* x86-64 only so far (tools/nanoprobe/meson.build) */
	&verb_bench,
#endif
};
#define NVERBS (sizeof(verbs) / sizeof(*verbs))

static int usage(FILE *f, int status)
{
	fprintf(f, "usage: nanoprobe VERB [OPTIONS] ...\n\n"
		   "Probes in Linux user-space programs, at the cost of a jump.\n\nverbs:\n");
	for (size_t i = 0; i < NVERBS; i++)
		fprintf(f, "  %-9s %s\n", verbs[i]->name, verbs[i]->summary);
	fprintf(f, "  %-9s %s\n  %-9s %s\n\n", "help", "this help; 'help VERB': a verb's, as VERB --help",
		"version", "the version of nanoprobe (also --version)");
	fprintf(f, "A session verb (trace, count, latency, watch, run) starts a program with\n"
		   "-- CMD ARGS..., or attaches to a running one with -p PID.\n"
		   "'nanoprobe VERB --help' lists a verb's options; see nanoprobe(1) (man nanoprobe).\n");
	return status;
}

static const struct cli_verb *find_verb(const char *name)
{
	for (size_t i = 0; i < NVERBS; i++)
		if (!strcmp(name, verbs[i]->name))
			return verbs[i];
	return NULL;
}

static int unknown_verb(const char *word)
{
	struct suggest s;
	char hint[256], all[256] = "";
	suggest_init(&s, word);
	for (size_t i = 0, n = 0; i < NVERBS; i++) {
		suggest_consider(&s, verbs[i]->name);
		n += (size_t)snprintf(all + n, sizeof(all) - n, "%s%s", i ? ", " : "",
				      verbs[i]->name);
	}
	suggest_format(&s, "", hint, sizeof(hint));
	if (word[0] == '-')
		cli_error("'%s' is not a verb: the verb comes first, nanoprobe VERB [OPTIONS] (%s)",
			  word, all);
	else
		cli_error("unknown verb '%s'%s%s (%s)", word, hint[0] ? "; " : "", hint, all);
	return 2;
}

/* -h, --help or --version among the verb's own words: not as the value of
 * an option (-o --help writes to a file so named), nor after --. */
static const char *std_option(const struct cli_verb *v, int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help") ||
		    !strcmp(argv[i], "--version"))
			return argv[i];
		if (cli_takes_value(v->opts, argv[i]))
			i++;
	}
	return NULL;
}

static int run_verb(const struct cli_verb *v, int argc, char **argv)
{
	const char *std = std_option(v, argc, argv);
	cli_verb = v->name;
	if (std && !strcmp(std, "--version"))
		return printf("%s\n", cli_version()), 0;
	if (std) {
		cli_help(stdout, v);
		return 0;
	}
	return v->run(argc, argv);
}

int main(int argc, char **argv)
{
	const struct cli_verb *v;
	int rc;
	cli_init();
	if (argc < 2)
		return usage(stderr, 2);
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		rc = printf("%s\n", cli_version()) < 0;
	} else if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
		   !strcmp(argv[1], "help")) {
		if (argc > 2 && !(v = find_verb(argv[2])))
			return unknown_verb(argv[2]);
		if (argc > 2)
			cli_verb = v->name, cli_help(stdout, v);
		else
			usage(stdout, 0);
		rc = 0;
	} else if ((v = find_verb(argv[1]))) {
		rc = run_verb(v, argc - 1, argv + 1);
	} else {
		return unknown_verb(argv[1]);
	}
	/* what the verb printf()ed: a full disk must not pass for success */
	output_check_stdout();
	return output_exit() ? 1 : rc;
}
