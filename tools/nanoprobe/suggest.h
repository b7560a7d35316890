/* SPDX-License-Identifier: MIT */
/* "did you mean": the few words of a list closest to a mistyped one, by
 * edit distance, for symbols, verbs and options alike. */
#ifndef NP_CLI_SUGGEST_H
#define NP_CLI_SUGGEST_H
#include <stddef.h>

struct suggest {
	const char *word;
	size_t max; /* farther than this is no spelling of the word */
	struct {
		const char *name;
		size_t dist;
	} best[3];
};

/* Levenshtein distance; SIZE_MAX for words of 256 bytes or more. */
size_t suggest_distance(const char *a, const char *b);
void suggest_init(struct suggest *s, const char *word);
/* Keep candidate if it is among the three closest so far (ties: the first
 * seen); the candidate must outlive s. */
void suggest_consider(struct suggest *s, const char *candidate);
/* "did you mean: a, b?" with `prefix` before each name ("--" for long
 * options), or "" when nothing was close. */
void suggest_format(const struct suggest *s, const char *prefix, char *buf, size_t len);
#endif
