/* SPDX-License-Identifier: MIT */
#include "suggest.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Two rows; words longer than a row are too far from anything. */
size_t suggest_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[2][256];
	if (la >= 256 || lb >= 256)
		return SIZE_MAX;
	for (size_t j = 0; j <= lb; j++)
		row[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t *prev = row[(i - 1) & 1], *cur = row[i & 1];
		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
			size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
			cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
		}
	}
	return row[la & 1][lb];
}

void suggest_init(struct suggest *s, const char *word)
{
	size_t n = strlen(word);
	memset(s, 0, sizeof(*s));
	s->word = word;
	s->max = n / 3 > 2 ? n / 3 : 2;
}

void suggest_consider(struct suggest *s, const char *name)
{
	size_t n = strlen(s->word), ln = strlen(name);
	if ((ln > n ? ln - n : n - ln) > s->max) /* cheaper than the distance */
		return;
	size_t d = suggest_distance(s->word, name);
	if (d > s->max)
		return;
	for (int i = 0; i < 3; i++)
		if (s->best[i].name && !strcmp(s->best[i].name, name))
			return;
	for (int i = 0; i < 3; i++) {
		if (s->best[i].name && s->best[i].dist <= d)
			continue;
		memmove(&s->best[i + 1], &s->best[i], (size_t)(2 - i) * sizeof(s->best[0]));
		s->best[i].name = name;
		s->best[i].dist = d;
		return;
	}
}

void suggest_format(const struct suggest *s, const char *prefix, char *buf, size_t len)
{
	size_t at = 0;
	if (len)
		buf[0] = 0;
	for (int i = 0; i < 3 && s->best[i].name && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%s%s", i ? ", " : "did you mean: ",
				       prefix, s->best[i].name);
	if (at && at + 1 < len)
		snprintf(buf + at, len - at, "?");
}
