/* SPDX-License-Identifier: MIT */
/*
 * A program named through $PATH is not always the ELF file that runs: it
 * may be a script (#!/usr/bin/python3), a wrapper (a shell script whose
 * last line is `exec ./app "$@"`) or a version manager's shim (pyenv's
 * python3: `exec "/root/.pyenv/libexec/pyenv" exec "$program" "$@"`). The
 * probes must go into the file that does the work, so a script is
 * followed to it where that can be told from the script alone:
 *
 *   #!INTERP [ARG]        INTERP itself, unless it is a shell; through
 *                         /usr/bin/env, the program env finds in $PATH
 *   a shell script        its one `exec PROGRAM` whose PROGRAM is a
 *                         literal name or path; or, for a shim, what its
 *                         manager says the shim runs (`MANAGER which
 *                         NAME`, as pyenv, rbenv, nodenv and asdf answer)
 *
 * Anything else (a PROGRAM in a variable, several exec lines) is not
 * guessed at: the caller says so and how to name the program instead.
 * What the kernel does is the same walk (an interpreter may itself be a
 * script), so it is bounded as the kernel bounds it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "symtab.h"

#define MAX_DEPTH 4       /* the kernel's binfmt recursion limit */
#define SCRIPT_MAX 65536  /* the part of a script read for its exec lines */
#define MAX_WORDS 8

static bool is_elf(const char *path)
{
	unsigned char m[4];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool elf = fd >= 0 && read(fd, m, 4) == 4 && !memcmp(m, "\177ELF", 4);
	if (fd >= 0)
		close(fd);
	return elf;
}

static const char *base_of(const char *path)
{
	const char *b = strrchr(path, '/');
	return b ? b + 1 : path;
}

static bool is_shell(const char *interp)
{
	static const char *const shells[] = {"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash"};
	for (size_t i = 0; i < sizeof(shells) / sizeof(*shells); i++)
		if (!strcmp(base_of(interp), shells[i]))
			return true;
	return false;
}

/* The script's text, NUL-terminated (at most SCRIPT_MAX bytes), or NULL. */
static char *read_head(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *buf = fd >= 0 ? malloc(SCRIPT_MAX + 1) : NULL;
	ssize_t n = buf ? read(fd, buf, SCRIPT_MAX) : -1;
	if (fd >= 0)
		close(fd);
	if (n < 0) {
		free(buf);
		return NULL;
	}
	buf[n] = 0;
	return buf;
}

/* Shell words of a line, quotes removed; a word with $ or ` in it is kept
 * as written (it is not literal). How many, at most MAX_WORDS. */
static int split_line(const char *line, char words[MAX_WORDS][PATH_MAX])
{
	int n = 0;
	const char *p = line;
	while (n < MAX_WORDS) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p || *p == '\n' || *p == '#' || *p == ';' || *p == '&' || *p == '|')
			break;
		size_t len = 0;
		char q = 0;
		for (; *p && *p != '\n' && (q || (*p != ' ' && *p != '\t' && *p != ';')); p++) {
			if ((*p == '"' || *p == '\'') && (!q || q == *p)) {
				q = q ? 0 : *p;
				continue;
			}
			if (len + 1 < PATH_MAX)
				words[n][len++] = *p;
		}
		words[n++][len] = 0;
	}
	return n;
}

static bool literal(const char *w)
{
	return w[0] && !strpbrk(w, "$`*?[<>");
}

/* A name as the shell finds it: with a '/', as is; else in $PATH. */
static int find_program(const char *name, char *out, size_t len)
{
	if (strchr(name, '/')) {
		if (access(name, X_OK))
			return -errno;
		return snprintf(out, len, "%s", name) < (int)len ? 0 : -ENAMETOOLONG;
	}
	const char *env = getenv("PATH");
	char *dirs = strdup(env && *env ? env : "/usr/local/bin:/usr/bin:/bin"), *save = NULL;
	int rc = -ENOENT;
	for (char *d = dirs ? strtok_r(dirs, ":", &save) : NULL; d && rc; d = strtok_r(NULL, ":", &save)) {
		struct stat sb;
		if (snprintf(out, len, "%s/%s", d, name) < (int)len && stat(out, &sb) == 0 &&
		    S_ISREG(sb.st_mode) && access(out, X_OK) == 0)
			rc = 0;
	}
	free(dirs);
	return rc;
}

#define MAX_EXPORTS 8

struct exec_target {
	char path[PATH_MAX];
	const char *how; /* for the note */
	int found;       /* distinct literal targets */
	bool unclear;    /* an exec of something not literal */
	/* the script's `export NAME=VALUE` with literal values, which a shim
	 * sets before it runs its manager (PYENV_ROOT) */
	char exports[MAX_EXPORTS][PATH_MAX];
	int nexports;
};

/* `manager which name`: the path it prints on its first line. */
static int ask_manager(const char *manager, const char *name, const struct exec_target *t,
		       char *out, size_t len)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		dup2(fds[1], STDOUT_FILENO);
		if (null >= 0)
			dup2(null, STDERR_FILENO), dup2(null, STDIN_FILENO);
		for (int i = 0; i < t->nexports; i++)
			putenv((char *)t->exports[i]);
		execl(manager, manager, "which", name, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	ssize_t n = 0, r;
	while (pid > 0 && (size_t)n + 1 < len && (r = read(fds[0], out + n, len - 1 - (size_t)n)) > 0)
		n += r;
	close(fds[0]);
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		return -ENOENT;
	out[n] = 0;
	out[strcspn(out, "\n")] = 0;
	return out[0] == '/' ? 0 : -ENOENT;
}

static void consider_exec(const char *script, char words[MAX_WORDS][PATH_MAX], int n,
			  struct exec_target *t)
{
	char path[PATH_MAX];
	if (n >= 2 && !strcmp(words[0], "export") && strchr(words[1], '=') &&
	    literal(strchr(words[1], '=') + 1) && t->nexports < MAX_EXPORTS) {
		snprintf(t->exports[t->nexports++], PATH_MAX, "%s", words[1]);
		return;
	}
	if (n < 2 || strcmp(words[0], "exec") || words[1][0] == '-' || strchr("<>0123456789", words[1][0]))
		return; /* not an exec, or exec with options or only redirections */
	/* a shim: exec MANAGER exec PROGRAM: ask the manager what it runs */
	if (n >= 4 && !strcmp(words[2], "exec") && literal(words[1]) &&
	    find_program(words[1], path, sizeof(path)) == 0) {
		const char *name = literal(words[3]) ? words[3] : base_of(script);
		if (ask_manager(path, name, t, t->path, sizeof(t->path)) == 0) {
			t->found++;
			t->how = "the program its version manager runs";
			return;
		}
	}
	if (!literal(words[1])) {
		t->unclear = true;
		return;
	}
	if (find_program(words[1], path, sizeof(path)))
		return;
	if (t->found && !strcmp(path, t->path))
		return;
	snprintf(t->path, sizeof(t->path), "%s", path);
	t->how = "the program it execs";
	t->found++;
}

/* The one program a shell script execs, or -ENOEXEC with the reason. */
static int shell_target(const char *script, char *out, size_t len, const char **how, char *err,
			size_t errlen)
{
	char *text = read_head(script), words[MAX_WORDS][PATH_MAX];
	static struct exec_target t; /* large: not on the stack */
	memset(&t, 0, sizeof(t));
	for (char *line = text; line && *line;) {
		char *end = strchr(line, '\n');
		int n = split_line(line, words);
		consider_exec(script, words, n, &t);
		line = end ? end + 1 : line + strlen(line);
	}
	free(text);
	if (t.found == 1 && !t.unclear) {
		*how = t.how;
		return snprintf(out, len, "%s", t.path) < (int)len ? 0 : -ENAMETOOLONG;
	}
	snprintf(err, errlen, "%s is a shell script, not an ELF file, and which program it runs "
			      "cannot be told from it (%s): name that program's file in the spec "
			      "(PATH:SYMBOL)", script,
		 t.found > 1 ? "it execs several" : t.unclear ? "it execs a program named by a variable"
							 : "it execs no program");
	return -ENOEXEC;
}

/* #!INTERP [ARG]: 0 with the interpreter (and its argument), 1 when the
 * file is no script. */
static int shebang(const char *path, char *interp, size_t ilen, char *arg, size_t alen)
{
	char line[256] = "";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, line, sizeof(line) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n < 2 || line[0] != '#' || line[1] != '!')
		return 1;
	line[n] = 0;
	line[strcspn(line, "\n")] = 0;
	char *p = line + 2 + strspn(line + 2, " \t"), *sp = p + strcspn(p, " \t");
	char *a = *sp ? sp + 1 + strspn(sp + 1, " \t") : sp;
	*sp = 0;
	snprintf(interp, ilen, "%s", p);
	snprintf(arg, alen, "%s", a);
	return interp[0] ? 0 : 1;
}

/* env's program: the first word of its argument that is no option (-S,
 * -i) and no NAME=VALUE. */
static const char *env_program(char *arg)
{
	for (char *save, *w = strtok_r(arg, " \t", &save); w; w = strtok_r(NULL, " \t", &save))
		if (w[0] != '-' && !strchr(w, '='))
			return w;
	return NULL;
}

int np_follow_script(const char *path, char *out, size_t len, char *note, size_t notelen,
		     char *err, size_t errlen)
{
	char cur[PATH_MAX], next[PATH_MAX], interp[256], arg[256];
	const char *how = NULL;
	snprintf(cur, sizeof(cur), "%s", path);
	if (note && notelen)
		note[0] = 0;
	for (int depth = 0; depth <= MAX_DEPTH; depth++) {
		if (is_elf(cur) || shebang(cur, interp, sizeof(interp), arg, sizeof(arg))) {
			if (depth && note)
				snprintf(note, notelen, "%s is a script: probes go into %s, %s", path,
					 cur, how);
			return snprintf(out, len, "%s", cur) < (int)len ? 0 : -ENAMETOOLONG;
		}
		int rc = 0;
		char run[PATH_MAX]; /* the interpreter itself, found through env */
		const char *prog = !strcmp(base_of(interp), "env") ? env_program(arg) : interp;
		if (!prog || find_program(prog, run, sizeof(run))) {
			rc = -ENOENT;
		} else if (is_shell(run)) { /* what the shell script runs, not the shell */
			rc = shell_target(cur, next, sizeof(next), &how, err, errlen);
			if (rc == -ENOEXEC)
				return rc;
		} else {
			snprintf(next, sizeof(next), "%s", run);
			how = "its interpreter";
		}
		if (rc) {
			snprintf(err, errlen, "%s is a script whose interpreter (%s%s%s) is not found",
				 cur, interp, arg[0] ? " " : "", arg);
			return -ENOEXEC;
		}
		char real[PATH_MAX];
		snprintf(cur, sizeof(cur), "%s", realpath(next, real) ? real : next);
	}
	snprintf(err, errlen, "%s: scripts run scripts more than %d deep", path, MAX_DEPTH);
	return -ELOOP;
}

int np_resolve_program(const char *name, pid_t pid, char *out, size_t outlen, char *note,
		       size_t notelen, char *err, size_t errlen)
{
	char found[PATH_MAX], why[512];
	int rc = np_resolve_path(name, pid, found, sizeof(found), err, errlen);
	if (note && notelen)
		note[0] = 0;
	if (rc)
		return rc;
	/* a script not followed is still the program started: what cannot be
	 * told from it is said when its symbols are needed (np_symtab_load) */
	if (np_follow_script(found, out, outlen, note, notelen, why, sizeof(why)))
		return snprintf(out, outlen, "%s", found) < (int)outlen ? 0 : -ENAMETOOLONG;
	return 0;
}
