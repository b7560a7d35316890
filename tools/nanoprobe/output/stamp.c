/* SPDX-License-Identifier: MIT */
#include "stamp.h"

#include <stdio.h>
#include <time.h>

void stamp_now(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;
	char hms[16] = "??:??:??";
	clock_gettime(CLOCK_REALTIME, &ts);
	if (localtime_r(&ts.tv_sec, &tm))
		strftime(hms, sizeof(hms), "%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03ld", hms, ts.tv_nsec / 1000000);
}
