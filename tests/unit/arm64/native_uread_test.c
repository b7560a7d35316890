/* SPDX-License-Identifier: MIT */
/*
 * src/host/arm64/uread.S on the machine (natively on arm64, else under
 * qemu-aarch64): copies that stop exactly at the first unreadable byte.
 * The fault handler here does what src/core/uread.c does with the
 * exception table: a SIGSEGV at one of the listed loads resumes at its
 * fixup; any other fault fails the test.
 */
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "host/host.h"
#include "test.h"

static uint8_t *page;   /* readable, followed by a PROT_NONE page */
static size_t psize;
static unsigned fixups;

static void on_fault(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	for (const struct np_uread_fixup *f = np_host_uread_extable; f->insn; f++)
		if (f->insn == uc->uc_mcontext.pc) {
			uc->uc_mcontext.pc = f->fixup;
			fixups++;
			return;
		}
	abort();
}

static void setup(void)
{
	struct sigaction sa = {.sa_sigaction = on_fault, .sa_flags = SA_SIGINFO};

	if (page)
		return;
	psize = (size_t)sysconf(_SC_PAGESIZE);
	page = mmap(NULL, 2 * psize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(page != MAP_FAILED);
	CHECK_EQ(mprotect(page + psize, psize, PROT_NONE), 0);
	for (size_t i = 0; i < psize; i++)
		page[i] = (uint8_t)(i * 7 + 1); /* no zero byte */
	CHECK_EQ(sigaction(SIGSEGV, &sa, NULL), 0);
	CHECK_EQ(sigaction(SIGBUS, &sa, NULL), 0);
}

TEST(a_readable_source_is_copied_whole_at_every_alignment_and_length)
{
	uint8_t dst[64];

	setup();
	for (size_t off = 0; off < 8; off++)
		for (size_t len = 0; len <= 40; len++) {
			memset(dst, 0, sizeof(dst));
			CHECK_EQ(np_host_uread(dst, (uint64_t)(uintptr_t)(page + off), len), 0);
			CHECK(memcmp(dst, page + off, len) == 0);
			CHECK_EQ(dst[len], 0);
		}
}

TEST(a_copy_into_a_bad_page_stops_at_its_first_byte)
{
	uint8_t dst[64];

	setup();
	for (size_t before = 0; before <= 20; before++)
		for (size_t len = before + 1; len <= before + 20; len++) {
			const uint8_t *src = page + psize - before;

			fixups = 0;
			memset(dst, 0, sizeof(dst));
			CHECK_EQ(np_host_uread(dst, (uint64_t)(uintptr_t)src, len), len - before);
			CHECK(memcmp(dst, src, before) == 0);
			CHECK(fixups >= 1);
		}
}

TEST(a_null_source_copies_nothing)
{
	uint8_t dst[16];

	setup();
	CHECK_EQ(np_host_uread(dst, 16, sizeof(dst)), sizeof(dst));
	CHECK_EQ(np_host_uread_str((char *)dst, 16, sizeof(dst)), -1);
}

TEST(strings_stop_at_the_nul_or_at_max)
{
	char dst[64];
	char *s = (char *)page + 3; /* unaligned head, words, tail */

	setup();
	memcpy(s, "hello, nanoprobe on arm64", 26);
	memset(dst, 0, sizeof(dst));
	CHECK_EQ(np_host_uread_str(dst, (uint64_t)(uintptr_t)s, sizeof(dst)), 25);
	CHECK_STR(dst, "hello, nanoprobe on arm64");
	memset(dst, 0, sizeof(dst));
	CHECK_EQ(np_host_uread_str(dst, (uint64_t)(uintptr_t)s, 10), 10);
	CHECK(memcmp(dst, "hello, nan", 10) == 0 && dst[10] == 0);
	for (size_t i = 0; i < psize; i++) /* the fill back: no zero byte */
		page[i] = (uint8_t)(i * 7 + 1);
}

TEST(a_string_running_into_a_bad_page_reports_how_much_it_copied)
{
	char dst[64];

	setup();
	for (size_t before = 0; before <= 20; before++) {
		const char *src = (const char *)page + psize - before;

		CHECK_EQ(np_host_uread_str(dst, (uint64_t)(uintptr_t)src, sizeof(dst)),
			 -(long)before - 1);
		CHECK(memcmp(dst, src, before) == 0);
	}
}

TEST_MAIN()
