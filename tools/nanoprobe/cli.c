/* SPDX-License-Identifier: MIT */
#include "cli.h"

#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>

#include "suggest.h"
#include "version.h"

const char *cli_verb;

void cli_error(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "nanoprobe%s%s: ", cli_verb ? " " : "", cli_verb ? cli_verb : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

enum { OPT_VERSION = 4000 };

const struct cli_opt cli_opts_std[] = {
	{'h', "help", NULL, "this help"},
	{OPT_VERSION, "version", NULL, "the version of nanoprobe"},
	{0},
};

const char *cli_version(void)
{
	return "nanoprobe " NP_VERSION " (git " NP_GIT_DESCRIBE ")";
}

/* --- getopt ---------------------------------------------------------------- */

int cli_getopt_tables(const struct cli_opt *const *lists, char *shortopts, size_t slen,
		      struct option *longs, size_t nlongs)
{
	size_t ns = 0, nl = 0;
	if (slen < 2 || !nlongs)
		return -1;
	shortopts[ns++] = ':';
	for (; *lists; lists++)
		for (const struct cli_opt *o = *lists; o->val; o++) {
			if (o->val < 256) {
				if (ns + 3 >= slen)
					return -1;
				shortopts[ns++] = (char)o->val;
				if (o->arg)
					shortopts[ns++] = ':';
			}
			if (o->name) {
				if (nl + 1 >= nlongs)
					return -1;
				longs[nl++] = (struct option){o->name,
							      o->arg ? required_argument : no_argument,
							      NULL, o->val};
			}
		}
	shortopts[ns] = 0;
	longs[nl] = (struct option){0};
	return 0;
}

int cli_bad_option(int opt, char **argv, const struct cli_opt *const *lists)
{
	const char *word = argv[optind - 1];
	char shown[64], hint[256] = "";
	if (strncmp(word, "--", 2) && optopt > 0 && optopt < 256) /* maybe in a cluster: -jx */
		snprintf(shown, sizeof(shown), "-%c", optopt);
	else
		snprintf(shown, sizeof(shown), "%.*s", (int)strcspn(word, "="), word);
	if (opt == ':') {
		cli_error("option '%s' wants a value", shown);
		return 2;
	}
	if (!strncmp(shown, "--", 2)) {
		struct suggest s;
		suggest_init(&s, shown + 2);
		for (const struct cli_opt *const *l = lists; *l; l++)
			for (const struct cli_opt *o = *l; o->val; o++)
				if (o->name)
					suggest_consider(&s, o->name);
		suggest_format(&s, "--", hint, sizeof(hint));
	}
	cli_error("unknown option '%s'%s%s", shown, hint[0] ? "; " : "", hint);
	return 2;
}

static const struct cli_opt *find_long(const struct cli_opt *const *lists, const char *name,
				       size_t len)
{
	for (; *lists; lists++)
		for (const struct cli_opt *o = *lists; o->val; o++)
			if (o->name && strlen(o->name) == len && !memcmp(o->name, name, len))
				return o;
	return NULL;
}

static const struct cli_opt *find_short(const struct cli_opt *const *lists, int c)
{
	for (; *lists; lists++)
		for (const struct cli_opt *o = *lists; o->val; o++)
			if (o->val == c)
				return o;
	return NULL;
}

bool cli_takes_value(const struct cli_opt *const *lists, const char *w)
{
	if (w[0] != '-' || !w[1])
		return false;
	if (w[1] == '-') {
		const struct cli_opt *o = find_long(lists, w + 2, strlen(w + 2));
		return o && o->arg; /* --name=value has no '=' match here */
	}
	for (const char *c = w + 1; *c; c++) { /* -jp PID, -p123 */
		const struct cli_opt *o = find_short(lists, (unsigned char)*c);
		if (!o)
			return false;
		if (o->arg)
			return !c[1];
	}
	return false;
}

/* --- help ------------------------------------------------------------------ */

static void flags_of(const struct cli_opt *o, char *buf, size_t len)
{
	int n = 0;
	if (o->val < 256)
		n = snprintf(buf, len, "-%c%s", o->val, o->name ? ", " : "");
	else
		n = snprintf(buf, len, "    ");
	if (o->name && n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, "--%s", o->name);
	if (o->arg && n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, " %s", o->arg);
}

static void print_list(FILE *f, const struct cli_opt *l, int width)
{
	char flags[96];
	for (const struct cli_opt *o = l; o->val; o++) {
		flags_of(o, flags, sizeof(flags));
		if ((int)strlen(flags) > width)
			fprintf(f, "  %s\n  %-*s  %s\n", flags, width, "", o->help);
		else
			fprintf(f, "  %-*s  %s\n", width, flags, o->help);
	}
}

void cli_help(FILE *f, const struct cli_verb *v)
{
	const int width = 26;
	fprintf(f, "usage: nanoprobe %s\n\n%s\n\noptions:\n", v->synopsis, v->summary);
	for (const struct cli_opt *const *l = v->opts; l && *l; l++)
		print_list(f, *l, width);
	print_list(f, cli_opts_std, width);
	if (v->details)
		fprintf(f, "\n%s", v->details);
	fprintf(f, "\nSee nanoprobe(1) (man nanoprobe) for more.\n");
}

/* --- signals the command takes over ---------------------------------------- */

/* The signals a session catches or ignores for itself (session.c). A
 * caught signal goes back to its default across exec, an ignored one stays
 * ignored: either way, not what the program would have had without us
 * (`nohup nanoprobe ... -- prog` must leave prog deaf to SIGHUP). */
static const int taken[] = {SIGPIPE, SIGINT, SIGTERM, SIGHUP};
static bool ignored_at_start[sizeof(taken) / sizeof(*taken)];

void cli_init(void)
{
	for (size_t i = 0; i < sizeof(taken) / sizeof(*taken); i++) {
		struct sigaction sa;
		ignored_at_start[i] = sigaction(taken[i], NULL, &sa) == 0 &&
				      sa.sa_handler == SIG_IGN;
	}
}

bool cli_sigpipe_ignored(void)
{
	return ignored_at_start[0]; /* taken[0] */
}

void cli_restore_signals(void)
{
	for (size_t i = 0; i < sizeof(taken) / sizeof(*taken); i++)
		signal(taken[i], ignored_at_start[i] ? SIG_IGN : SIG_DFL);
}
