/* SPDX-License-Identifier: MIT */
/* The engine's messages go through one replaceable callback. */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "host/host.h"

static np_log_fn log_fn;
static void *log_user;

NP_API void np_set_log_fn(np_log_fn fn, void *user)
{
	log_fn = fn;
	log_user = user;
}

static enum np_log_level default_level(void)
{
	const char *env = getenv("NANOPROBE_DEBUG");
	return env && *env && *env != '0' ? NP_LOG_DEBUG : NP_LOG_WARN;
}

void np_logf(enum np_log_level level, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (log_fn) {
		log_fn(level, msg, log_user);
		return;
	}
	static const char *const names[] = {"error", "warning", "info", "debug"};
	if (level <= default_level())
		fprintf(stderr, "nanoprobe: %s: %s\n", names[level], msg);
}
