/* SPDX-License-Identifier: MIT */
/*
 * What every verb of the command shares with the others: one prefix on its
 * messages ("nanoprobe VERB: ..."), and its options described once, in a
 * table from which getopt's tables, --help, the unknown-option message with
 * its "did you mean" and the completion scripts' tests are all made, so
 * that none of them can forget an option the parser takes.
 */
#ifndef NP_CLI_CLI_H
#define NP_CLI_CLI_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* The verb running, for messages; NULL before one is chosen. */
extern const char *cli_verb;

/* "nanoprobe VERB: " + the message + "\n" on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One option. A list of them ends with an entry whose val is 0. */
struct cli_opt {
	int val;          /* the short letter, or >= 256 for a long-only option */
	const char *name; /* the long name without "--", NULL if none */
	const char *arg;  /* the value's name in help ("PID"), NULL: a flag */
	const char *help; /* one line */
};

/* A verb as main dispatches it and --help describes it. */
struct cli_verb {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *synopsis; /* after "nanoprobe ": the verb, its options, operands */
	const char *summary;  /* one line */
	const char *details;  /* lines after the options in --help, or NULL */
	const struct cli_opt *const *opts; /* option lists, NULL-terminated */
};

/* -h/--help and --version: every verb's, handled by main. */
extern const struct cli_opt cli_opts_std[];

/* getopt's tables for the lists (NULL-terminated): shortopts starts with ':'
 * (missing values reported as ':'). 0, or -1 when a table is too small. */
struct option;
int cli_getopt_tables(const struct cli_opt *const *lists, char *shortopts, size_t slen,
		      struct option *longs, size_t nlongs);
/* After getopt_long returned '?' or ':' for argv[optind - 1]: the message,
 * with the closest long options when one was mistyped. Returns 2. */
int cli_bad_option(int opt, char **argv, const struct cli_opt *const *lists);
/* Does argv word `w` take the next word as its value? */
bool cli_takes_value(const struct cli_opt *const *lists, const char *w);
/* The verb's help: usage, summary, every option with its line, details. */
void cli_help(FILE *f, const struct cli_verb *v);
/* "nanoprobe VERSION (git DESCRIBE)" */
const char *cli_version(void);

/* The dispositions nanoprobe was started with (cli_init) of the signals a
 * session takes over (SIGPIPE, SIGINT, SIGTERM, SIGHUP): what a program
 * started with -- gets back (cli_restore_signals), and whether EPIPE ends
 * nanoprobe by the signal or by a message (cli_sigpipe_ignored). */
void cli_init(void);
bool cli_sigpipe_ignored(void);
void cli_restore_signals(void);
#endif
