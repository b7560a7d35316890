/* SPDX-License-Identifier: MIT */
/*
 * The streams results go to: stdout, -o FILE, --export-trace FILE. Two
 * promises to whoever reads them.
 *
 * A line is never cut. Every write(2) carries whole lines, at most
 * PIPE_BUF bytes of them unless one line alone is longer, so a pipe gives
 * each write to its reader in one piece: what a program started with --
 * writes to the same stream lands between two of our lines, never inside
 * one (the stream's buffer holds a line until its end is written).
 *
 * A failed write is not lost. The first error of each stream is kept with
 * the stream's name; the session polls output_flush() and ends on an
 * error as it would on Ctrl-C (detaching first), and the command then
 * reports it with the name and exits non-zero; for EPIPE, the reader gone,
 * it ends as a program whose reader went away does (output_exit).
 */
#ifndef NP_CLI_OUTPUT_H
#define NP_CLI_OUTPUT_H
#include <stdbool.h>
#include <stdio.h>

/* A stream writing to path (created or truncated, close-on-exec), or to
 * stdout when path is NULL; `name` is what messages call it ("-o FILE",
 * "stdout"). NULL with errno set when path cannot be opened. */
FILE *output_open(const char *path, const char *name);
/* Flush and close (stdout's descriptor stays open). 0, or the stream's
 * first error (-errno), also kept for output_report. */
int output_close(FILE *f);
/* Flush every open stream. 0, or the first error any stream has had. */
int output_flush(void);
/* The first error of any stream so far (-errno), 0 if none. */
int output_error(void);
/* One line on stderr per stream that failed ("nanoprobe VERB: NAME: why"),
 * except a broken pipe that the signal reports (output_exit). */
void output_report(void);
/* The exit status after a write error: for EPIPE with SIGPIPE not ignored
 * when nanoprobe started, nanoprobe ends here, killed by SIGPIPE as
 * another program would be; else 1. 0 when nothing failed. */
int output_exit(void);
/* stdout (the FILE of the C library) flushed and checked, as a verb that
 * printf()s leaves it: 0, or its error recorded as output_open's are. */
int output_check_stdout(void);
#endif
