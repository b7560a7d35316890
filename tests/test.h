/* SPDX-License-Identifier: MIT */
/*
 * A minimal test harness: TEST(name) defines a case, CHECK* record
 * failures with file:line, and main() from TEST_MAIN() runs every case and
 * prints TAP ("ok 3 - name") plus a closing "N passed, N failed" line.
 */
#ifndef NP_TEST_H
#define NP_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct np_test {
	const char *name;
	void (*fn)(void);
};

extern int np_test_failed;
void np_test_register(const char *name, void (*fn)(void));

#define TEST(name)                                                           \
	static void test_##name(void);                                       \
	__attribute__((constructor)) static void register_##name(void)      \
	{                                                                    \
		np_test_register(#name, test_##name);                        \
	}                                                                    \
	static void test_##name(void)

#define CHECK(cond)                                                          \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, \
				__LINE__, #cond);                            \
			np_test_failed = 1;                                  \
		}                                                            \
	} while (0)

#define CHECK_EQ(a, b)                                                       \
	do {                                                                 \
		uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);             \
		if (a_ != b_) {                                              \
			fprintf(stderr,                                      \
				"%s:%d: %s == %s failed: 0x%" PRIx64         \
				" != 0x%" PRIx64 "\n",                       \
				__FILE__, __LINE__, #a, #b, a_, b_);         \
			np_test_failed = 1;                                  \
		}                                                            \
	} while (0)

#define CHECK_STR(a, b)                                                      \
	do {                                                                 \
		const char *a_ = (a), *b_ = (b);                             \
		if (!a_ || !b_ || strcmp(a_, b_) != 0) {                     \
			fprintf(stderr, "%s:%d: \"%s\" != \"%s\"\n",         \
				__FILE__, __LINE__, a_ ? a_ : "(null)",      \
				b_ ? b_ : "(null)");                         \
			np_test_failed = 1;                                  \
		}                                                            \
	} while (0)

#define TEST_MAIN()                                                          \
	int np_test_failed;                                                  \
	static struct np_test np_tests[1024];                                \
	static int np_ntests;                                                \
	void np_test_register(const char *name, void (*fn)(void))            \
	{                                                                    \
		if (np_ntests < 1024)                                        \
			np_tests[np_ntests++] = (struct np_test){name, fn};  \
	}                                                                    \
	int main(int argc, char **argv)                                      \
	{                                                                    \
		int passed = 0, failed = 0;                                  \
		printf("1..%d\n", np_ntests);                                \
		for (int i = 0; i < np_ntests; i++) {                        \
			if (argc > 1 && !strstr(np_tests[i].name, argv[1]))  \
				continue;                                    \
			np_test_failed = 0;                                  \
			np_tests[i].fn();                                    \
			printf("%s %d - %s\n", np_test_failed ? "not ok" : "ok", \
			       i + 1, np_tests[i].name);                     \
			fflush(stdout);                                      \
			if (np_test_failed)                                  \
				failed++;                                    \
			else                                                 \
				passed++;                                    \
		}                                                            \
		printf("%d passed, %d failed\n", passed, failed);            \
		return failed ? 1 : 0;                                       \
	}

#endif
