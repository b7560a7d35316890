/* SPDX-License-Identifier: MIT */
/*
 * branch_targets() on hand-assembled functions at 0x401000, their jump
 * tables at 0x402000 in a fake memory. The bytes come from GNU as; the
 * listings beside them are objdump's.
 */
#include "x86_test.h"

#define TABLE 0x402000ull

struct found {
	uint64_t v[64];     /* targets */
	size_t n;
	uint64_t formed[8]; /* addresses formed */
	size_t nformed;
	uint64_t jump[8], loaded[8]; /* unresolved jumps, where each target was loaded */
	size_t njumps;
};

static void collect(void *cookie, uint64_t from, uint64_t target)
{
	struct found *f = cookie;

	(void)from;
	if (f->n < sizeof(f->v) / sizeof(f->v[0]))
		f->v[f->n++] = target;
}

static void collect_formed(void *cookie, uint64_t from, uint64_t addr)
{
	struct found *f = cookie;

	(void)from;
	if (f->nformed < sizeof(f->formed) / sizeof(f->formed[0]))
		f->formed[f->nformed++] = addr;
}

static void collect_jump(void *cookie, uint64_t from, uint64_t loaded_at)
{
	struct found *f = cookie;

	if (f->njumps < sizeof(f->jump) / sizeof(f->jump[0])) {
		f->jump[f->njumps] = from;
		f->loaded[f->njumps++] = loaded_at;
	}
}

static int targets_of(const uint8_t *code, size_t len, const struct np_mem *ops, struct found *f)
{
	struct np_branch_sink sink = {collect, collect_formed, collect_jump, f};

	memset(f, 0, sizeof(*f));
	return ISA->branch_targets(code, len, PC, ops, &sink);
}

static bool has(const struct found *f, uint64_t target)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->v[i] == target)
			return true;
	return false;
}

static struct fake_mem mem;

static int scan(const uint8_t *code, size_t len, struct found *f)
{
	struct np_mem ops = fake_mem_ops(&mem);

	return targets_of(code, len, &ops, f);
}

/* gcc -fPIE: switch (x) { case 0..3 } */
static const uint8_t pie[] = {
	0xf3, 0x0f, 0x1e, 0xfa,                   /* 401000 endbr64 */
	0x83, 0xff, 0x03,                         /* 401004 cmp $0x3,%edi */
	0x77, 0x2b,                               /* 401007 ja 0x401034 */
	0x89, 0xff,                               /* 401009 mov %edi,%edi */
	0x48, 0x8d, 0x15, 0xee, 0x0f, 0x00, 0x00, /* 40100b lea 0xfee(%rip),%rdx # 0x402000 */
	0x48, 0x63, 0x04, 0xba,                   /* 401012 movslq (%rdx,%rdi,4),%rax */
	0x48, 0x01, 0xd0,                         /* 401016 add %rdx,%rax */
	0x3e, 0xff, 0xe0,                         /* 401019 notrack jmp *%rax */
	0xb8, 0x0a, 0x00, 0x00, 0x00, 0xc3,       /* 40101c mov $0xa,%eax; ret */
	0xb8, 0x0b, 0x00, 0x00, 0x00, 0xc3,       /* 401022 mov $0xb,%eax; ret */
	0xb8, 0x0c, 0x00, 0x00, 0x00, 0xc3,       /* 401028 mov $0xc,%eax; ret */
	0xb8, 0x0d, 0x00, 0x00, 0x00, 0xc3,       /* 40102e mov $0xd,%eax; ret */
	0x31, 0xc0, 0xc3,                         /* 401034 xor %eax,%eax; ret */
};

static void pie_table(void)
{
	fake_mem_init(&mem, TABLE);
	fake_put32(&mem, TABLE + 0, 0xfffff01c); /* 0x40101c - TABLE */
	fake_put32(&mem, TABLE + 4, 0xfffff022);
	fake_put32(&mem, TABLE + 8, 0xfffff028);
	fake_put32(&mem, TABLE + 12, 0xfffff02e);
	fake_put32(&mem, TABLE + 16, 0x00000100); /* past the bound: not an entry */
}

TEST(pie_jump_table_entries_are_branch_targets)
{
	struct found f;

	pie_table();
	CHECK_EQ(scan(pie, sizeof(pie), &f), 0);
	CHECK_EQ(f.n, 5);
	CHECK(has(&f, 0x401034)); /* ja default */
	CHECK(has(&f, 0x40101c) && has(&f, 0x401022) && has(&f, 0x401028) && has(&f, 0x40102e));
	CHECK(!has(&f, TABLE + 0x100));
}

/* clang -fPIE: the index is a copy, the bound is jae (4 entries). */
TEST(clang_pie_table_bounded_by_jae_has_n_entries)
{
	static const uint8_t clang[] = {
		0x89, 0xf8,                               /* 401000 mov %edi,%eax */
		0x83, 0xf8, 0x04,                         /* 401002 cmp $0x4,%eax */
		0x73, 0x28,                               /* 401005 jae 0x40102f */
		0x48, 0x8d, 0x0d, 0xf2, 0x0f, 0x00, 0x00, /* 401007 lea 0xff2(%rip),%rcx */
		0x48, 0x63, 0x04, 0x81,                   /* 40100e movslq (%rcx,%rax,4),%rax */
		0x48, 0x01, 0xc8,                         /* 401012 add %rcx,%rax */
		0xff, 0xe0,                               /* 401015 jmp *%rax */
		0xb8, 0x0a, 0x00, 0x00, 0x00, 0xc3,       /* 401017 mov $0xa,%eax; ret */
		0xb8, 0x0b, 0x00, 0x00, 0x00, 0xc3,       /* 40101d */
		0xb8, 0x0c, 0x00, 0x00, 0x00, 0xc3,       /* 401023 */
		0xb8, 0x0d, 0x00, 0x00, 0x00, 0xc3,       /* 401029 */
		0x31, 0xc0, 0xc3,                         /* 40102f xor %eax,%eax; ret */
	};
	struct found f;

	fake_mem_init(&mem, TABLE);
	fake_put32(&mem, TABLE + 0, 0xfffff017);
	fake_put32(&mem, TABLE + 4, 0xfffff01d);
	fake_put32(&mem, TABLE + 8, 0xfffff023);
	fake_put32(&mem, TABLE + 12, 0xfffff029);
	fake_put32(&mem, TABLE + 16, 0x00000100);
	CHECK_EQ(scan(clang, sizeof(clang), &f), 0);
	CHECK_EQ(f.n, 5);
	CHECK(has(&f, 0x40102f) && has(&f, 0x401017) && has(&f, 0x401029));
	CHECK(!has(&f, TABLE + 0x100));
}

/* gcc -fno-PIE: jmp *TABLE(,%rax,8), absolute entries. */
static const uint8_t nopie[] = {
	0x83, 0xff, 0x02,                         /* 401000 cmp $0x2,%edi */
	0x77, 0x1b,                               /* 401003 ja 0x401020 */
	0x89, 0xf8,                               /* 401005 mov %edi,%eax */
	0xff, 0x24, 0xc5, 0x00, 0x20, 0x40, 0x00, /* 401007 jmp *0x402000(,%rax,8) */
	0xb8, 0x01, 0x00, 0x00, 0x00, 0xc3,       /* 40100e mov $0x1,%eax; ret */
	0xb8, 0x02, 0x00, 0x00, 0x00, 0xc3,       /* 401014 */
	0xb8, 0x03, 0x00, 0x00, 0x00, 0xc3,       /* 40101a */
	0x31, 0xc0, 0xc3,                         /* 401020 xor %eax,%eax; ret */
};

TEST(non_pie_jump_table_entries_are_absolute_addresses)
{
	struct found f;

	fake_mem_init(&mem, TABLE);
	fake_put64(&mem, TABLE + 0, 0x40100e);
	fake_put64(&mem, TABLE + 8, 0x401014);
	fake_put64(&mem, TABLE + 16, 0x40101a);
	fake_put64(&mem, TABLE + 24, 0x999999);
	CHECK_EQ(scan(nopie, sizeof(nopie), &f), 0);
	CHECK_EQ(f.n, 4);
	CHECK(has(&f, 0x401020) && has(&f, 0x40100e) && has(&f, 0x401014) && has(&f, 0x40101a));
	CHECK(!has(&f, 0x999999));
}

/* Each mutation of the PIE function breaks one link of the proof. */
static int scan_pie_with(size_t at, const uint8_t *bytes, size_t n, struct found *f)
{
	uint8_t code[sizeof(pie)];

	memcpy(code, pie, sizeof(pie));
	memcpy(code + at, bytes, n);
	pie_table();
	return scan(code, sizeof(code), f);
}

TEST(table_index_written_after_the_bounds_check_is_unresolved)
{
	struct found f;

	CHECK_EQ(scan_pie_with(9, (const uint8_t[]){0xff, 0xc7}, 2, &f), 1); /* inc %edi */
	CHECK(!has(&f, 0x40101c));
}

TEST(bounds_check_on_another_register_is_unresolved)
{
	struct found f;

	CHECK_EQ(scan_pie_with(4, (const uint8_t[]){0x83, 0xfe, 0x03}, 3, &f), 1); /* cmp $3,%esi */
}

TEST(bounds_check_behind_a_jmp_does_not_count)
{
	struct found f;

	CHECK_EQ(scan_pie_with(9, (const uint8_t[]){0xeb, 0x00}, 2, &f), 1); /* jmp .+2 */
}

/* gcc -fPIE: switch on a char, bounded on the 8-bit register and widened
 * after the check (redis-server's processCommand does this). */
static const uint8_t pie_char[] = {
	0x80, 0xfa, 0x03,                         /* 401000 cmp $0x3,%dl */
	0x77, 0x2b,                               /* 401003 ja 0x401030 */
	0x48, 0x8d, 0x0d, 0xf4, 0x0f, 0x00, 0x00, /* 401005 lea 0xff4(%rip),%rcx # 0x402000 */
	0x0f, 0xb6, 0xd2,                         /* 40100c movzbl %dl,%edx */
	0x48, 0x63, 0x14, 0x91,                   /* 40100f movslq (%rcx,%rdx,4),%rdx */
	0x48, 0x01, 0xca,                         /* 401013 add %rcx,%rdx */
	0xff, 0xe2,                               /* 401016 jmp *%rdx */
	0xb8, 0x0a, 0x00, 0x00, 0x00, 0xc3,       /* 401018 mov $0xa,%eax; ret */
	0xb8, 0x0b, 0x00, 0x00, 0x00, 0xc3,       /* 40101e mov $0xb,%eax; ret */
	0xb8, 0x0c, 0x00, 0x00, 0x00, 0xc3,       /* 401024 mov $0xc,%eax; ret */
	0xb8, 0x0d, 0x00, 0x00, 0x00, 0xc3,       /* 40102a mov $0xd,%eax; ret */
	0x31, 0xc0, 0xc3,                         /* 401030 xor %eax,%eax; ret */
};

static int scan_pie_char_with(size_t at, const uint8_t *bytes, size_t n, struct found *f)
{
	uint8_t code[sizeof(pie_char)];

	memcpy(code, pie_char, sizeof(pie_char));
	memcpy(code + at, bytes, n);
	fake_mem_init(&mem, TABLE);
	fake_put32(&mem, TABLE + 0, 0xfffff018); /* 0x401018 - TABLE */
	fake_put32(&mem, TABLE + 4, 0xfffff01e);
	fake_put32(&mem, TABLE + 8, 0xfffff024);
	fake_put32(&mem, TABLE + 12, 0xfffff02a);
	fake_put32(&mem, TABLE + 16, 0x00000100); /* past the bound: not an entry */
	return scan(code, sizeof(code), f);
}

TEST(char_switch_bounded_on_the_byte_register_then_widened_is_resolved)
{
	struct found f;

	CHECK_EQ(scan_pie_char_with(0, pie_char, 0, &f), 0);
	CHECK_EQ(f.n, 5);
	CHECK(has(&f, 0x401030)); /* ja default */
	CHECK(has(&f, 0x401018) && has(&f, 0x40101e) && has(&f, 0x401024) && has(&f, 0x40102a));
	CHECK(!has(&f, TABLE + 0x100));
}

TEST(byte_bound_does_not_bound_the_full_register_without_the_widening)
{
	struct found f;

	/* movzbl %dl,%edx -> 3 nops: %rdx above %dl is anything */
	CHECK_EQ(scan_pie_char_with(12, (const uint8_t[]){0x90, 0x90, 0x90}, 3, &f), 1);
	CHECK(!has(&f, 0x401018));
}

TEST(byte_bound_on_another_register_than_the_widened_one_is_unresolved)
{
	struct found f;

	/* cmp $3,%dl -> cmp $3,%al; movzbl %al would be needed */
	CHECK_EQ(scan_pie_char_with(0, (const uint8_t[]){0x3c, 0x03, 0x90}, 3, &f), 1);
	/* cmp $3,%dh: the same full register, another byte of it */
	CHECK_EQ(scan_pie_char_with(0, (const uint8_t[]){0x80, 0xfe, 0x03}, 3, &f), 1);
}

TEST(byte_bound_above_127_is_read_unsigned)
{
	struct found f;

	/* cmp $0xc8,%dl; ja: 201 entries (read as signed, -56: none), so the
	 * zeroed entries after the fifth are read too, each a branch to TABLE */
	CHECK_EQ(scan_pie_char_with(0, (const uint8_t[]){0x80, 0xfa, 0xc8}, 3, &f), 0);
	CHECK(has(&f, TABLE + 0x100) && has(&f, TABLE));
}

/* sqlite3GetToken's switch on a character's class: the index read from a
 * byte in memory that the cmpb before the ja bounds. */
static const uint8_t class_switch[] = {
	0x40, 0x0f, 0xb6, 0xc7,                   /* 401000 movzbl %dil,%eax */
	0x80, 0x3c, 0x06, 0x03,                   /* 401004 cmpb $0x3,(%rsi,%rax,1) */
	0x77, 0x2c,                               /* 401008 ja 0x401036 */
	0x0f, 0xb6, 0x04, 0x06,                   /* 40100a movzbl (%rsi,%rax,1),%eax */
	0x48, 0x8d, 0x15, 0xeb, 0x0f, 0x00, 0x00, /* 40100e lea 0xfeb(%rip),%rdx # 0x402000 */
	0x48, 0x63, 0x04, 0x82,                   /* 401015 movslq (%rdx,%rax,4),%rax */
	0x48, 0x01, 0xd0,                         /* 401019 add %rdx,%rax */
	0xff, 0xe0,                               /* 40101c jmp *%rax */
	0xb8, 0x0a, 0x00, 0x00, 0x00, 0xc3,       /* 40101e mov $0xa,%eax; ret */
	0xb8, 0x0b, 0x00, 0x00, 0x00, 0xc3,       /* 401024 mov $0xb,%eax; ret */
	0xb8, 0x0c, 0x00, 0x00, 0x00, 0xc3,       /* 40102a mov $0xc,%eax; ret */
	0xb8, 0x0d, 0x00, 0x00, 0x00, 0xc3,       /* 401030 mov $0xd,%eax; ret */
	0x31, 0xc0, 0xc3,                         /* 401036 xor %eax,%eax; ret */
};

static void class_table(void)
{
	fake_mem_init(&mem, TABLE);
	fake_put32(&mem, TABLE + 0, 0xfffff01e);
	fake_put32(&mem, TABLE + 4, 0xfffff024);
	fake_put32(&mem, TABLE + 8, 0xfffff02a);
	fake_put32(&mem, TABLE + 12, 0xfffff030);
	fake_put32(&mem, TABLE + 16, 0x00000100); /* past the bound: not an entry */
}

TEST(switch_on_a_byte_read_from_memory_bounded_by_a_cmp_of_it_is_resolved)
{
	struct found f;

	class_table();
	CHECK_EQ(scan(class_switch, sizeof(class_switch), &f), 0);
	CHECK(has(&f, 0x40101e) && has(&f, 0x401024) && has(&f, 0x40102a) && has(&f, 0x401030));
	CHECK(!has(&f, TABLE + 0x100));
}

TEST(a_cmp_of_other_memory_does_not_bound_the_byte_read)
{
	uint8_t code[sizeof(class_switch)];
	struct found f;

	memcpy(code, class_switch, sizeof(code));
	code[6] = 0x46; /* cmpb $0x3,(%rsi,%rax,2) */
	class_table();
	CHECK_EQ(scan(code, sizeof(code), &f), 1);
}

TEST(a_store_between_the_cmp_and_the_read_leaves_the_switch_unresolved)
{
	uint8_t code[sizeof(class_switch) + 3];
	struct found f;

	/* ja 0x401036 becomes ja +0x2f over incb (%rsi): three bytes more */
	memcpy(code, class_switch, 8);
	memcpy(code + 8, (const uint8_t[]){0x77, 0x2f, 0xfe, 0x06, 0x90}, 5); /* incb (%rsi); nop */
	memcpy(code + 13, class_switch + 10, sizeof(class_switch) - 10);
	code[13 + 7] = 0xe8; /* the lea's displacement, 3 bytes on */
	class_table();
	CHECK_EQ(scan(code, sizeof(code), &f), 1);
}

TEST(unreadable_table_is_unresolved)
{
	struct np_mem ops;
	struct found f = {0};

	fake_mem_init(&mem, 0x10000); /* the table is not in it */
	ops = fake_mem_ops(&mem);
	CHECK_EQ(targets_of(pie, sizeof(pie), &ops, &f), 1);
	CHECK_EQ(targets_of(pie, sizeof(pie), NULL, &f), 1);
	CHECK_EQ(f.loaded[0], 0); /* a sum: computed */
}

/* The jumps whose target is a pointer read whole from memory say where
 * it was read: the planner knows where such pointers point. */
TEST(a_jump_through_a_pointer_loaded_from_memory_says_where_it_was_loaded)
{
	static const uint8_t code[] = {
		0x48, 0x8b, 0x07, /* 401000 mov (%rdi),%rax */
		0xff, 0xe0,       /* 401003 jmp *%rax */
	};
	struct found f;

	CHECK_EQ(scan(code, sizeof(code), &f), 1);
	CHECK_EQ(f.n, 0);
	CHECK_EQ(f.njumps, 1);
	CHECK_EQ(f.jump[0], PC + 3);
	CHECK_EQ(f.loaded[0], PC);
}

TEST(a_tail_call_through_memory_is_loaded_by_the_jump_itself)
{
	static const uint8_t code[] = {
		0x48, 0x8b, 0x05, 0xf9, 0x0f, 0x00, 0x00, /* 401000 mov 0xff9(%rip),%rax */
		0xff, 0xa0, 0x80, 0x00, 0x00, 0x00,       /* 401007 jmp *0x80(%rax) */
	};
	struct found f;

	CHECK_EQ(scan(code, sizeof(code), &f), 1);
	CHECK_EQ(f.loaded[0], PC + 7);
}

TEST(a_copy_of_a_loaded_pointer_is_followed_to_its_load)
{
	static const uint8_t code[] = {
		0x48, 0x8b, 0x4f, 0x08, /* 401000 mov 0x8(%rdi),%rcx */
		0x5b,                   /* 401004 pop %rbx */
		0x48, 0x89, 0xc8,       /* 401005 mov %rcx,%rax */
		0xff, 0xe0,             /* 401008 jmp *%rax */
	};
	struct found f;

	CHECK_EQ(scan(code, sizeof(code), &f), 1);
	CHECK_EQ(f.loaded[0], PC);
}

TEST(a_register_unwritten_since_the_entry_is_loaded_at_the_entry)
{
	static const uint8_t code[] = {
		0x48, 0x85, 0xff, /* 401000 test %rdi,%rdi */
		0x74, 0x02,       /* 401003 je 0x401007 */
		0xff, 0xe6,       /* 401005 jmp *%rsi: the caller's pointer */
		0xc3,             /* 401007 ret */
	};
	struct found f;

	CHECK_EQ(scan(code, sizeof(code), &f), 1);
	CHECK_EQ(f.loaded[0], PC);
}

TEST(a_computed_or_narrow_or_demangled_target_is_not_loaded)
{
	static const uint8_t narrow[] = {
		0x8b, 0x07, /* mov (%rdi),%eax: 32 bits of a pointer */
		0xff, 0xe0, /* jmp *%rax */
	};
	static const uint8_t demangled[] = {
		0x48, 0x8b, 0x07,                                     /* mov (%rdi),%rax */
		0x48, 0xc1, 0xc8, 0x11,                               /* ror $0x11,%rax */
		0x64, 0x48, 0x33, 0x04, 0x25, 0x30, 0x00, 0x00, 0x00, /* xor %fs:0x30,%rax */
		0xff, 0xe0,                                           /* jmp *%rax */
	};
	static const uint8_t after_a_jump[] = {
		0x48, 0x8b, 0x07, /* 401000 mov (%rdi),%rax */
		0xeb, 0x00,       /* 401003 jmp 0x401005 */
		0xff, 0xe0,       /* 401005 jmp *%rax: reached from elsewhere */
	};
	struct found f;

	CHECK_EQ(scan(narrow, sizeof(narrow), &f), 1);
	CHECK_EQ(f.loaded[0], 0);
	CHECK_EQ(scan(demangled, sizeof(demangled), &f), 1);
	CHECK_EQ(f.loaded[0], 0);
	CHECK_EQ(scan(after_a_jump, sizeof(after_a_jump), &f), 1);
	CHECK_EQ(f.loaded[0], 0);
}

TEST(addresses_the_code_forms_are_reported)
{
	static const uint8_t code[] = {
		0x48, 0x8d, 0x05, 0x05, 0x00, 0x00, 0x00, /* 401000 lea 0x5(%rip),%rax # 40100c */
		0xb9, 0x0c, 0x10, 0x40, 0x00,             /* 401007 mov $0x40100c,%ecx */
		0xff, 0xe0,                               /* 40100c jmp *%rax */
	};
	struct found f;

	CHECK_EQ(scan(code, sizeof(code), &f), 1);
	CHECK_EQ(f.nformed, 2);
	CHECK(f.formed[0] == PC + 12 && f.formed[1] == PC + 12);
	CHECK_EQ(f.loaded[0], PC); /* the lea's: a formed address */
}

TEST(indirect_call_is_not_an_unresolved_jump)
{
	static const uint8_t code[] = {0xff, 0xd0, 0xc3}; /* call *%rax; ret */
	struct found f;

	CHECK_EQ(scan(code, sizeof(code), &f), 0);
}

/* The slot's present value is a target, and the jump a loaded one: the
 * slot may be written later (goto *label), with a value the planner's
 * held pointers know. */
TEST(a_tail_call_through_a_slot_reports_its_value_and_is_loaded)
{
	static const uint8_t code[] = {0xff, 0x25, 0xfa, 0x0f, 0x00, 0x00}; /* jmp *0xffa(%rip) */
	struct found f;

	fake_mem_init(&mem, TABLE);
	fake_put64(&mem, TABLE, 0x7f0000001000ull); /* the slot, at 0x402000 */
	CHECK_EQ(scan(code, sizeof(code), &f), 1);
	CHECK(has(&f, 0x7f0000001000ull));
	CHECK_EQ(f.loaded[0], PC);
}

TEST(undecodable_run_counts_once_and_the_sweep_resumes)
{
	static const uint8_t code[] = {
		0x06, 0x06, 0x06, /* invalid in 64-bit mode */
		0xeb, 0x00,       /* 401003 jmp 0x401005 */
		0xc3,
	};
	struct found f;

	CHECK_EQ(scan(code, sizeof(code), &f), 1);
	CHECK(has(&f, 0x401005));
}

TEST(direct_jumps_and_calls_report_their_targets)
{
	static const uint8_t code[] = {
		0x74, 0x05,                   /* 401000 je 0x401007 */
		0xe8, 0xf9, 0xff, 0xff, 0xff, /* 401002 call 0x401000 */
		0xeb, 0xf7,                   /* 401007 jmp 0x401000 */
		0xe3, 0x00,                   /* 401009 jrcxz 0x40100b */
	};
	struct found f;

	CHECK_EQ(scan(code, sizeof(code), &f), 0);
	CHECK_EQ(f.n, 4);
	CHECK(f.v[0] == 0x401007 && f.v[1] == 0x401000 && f.v[2] == 0x401000 &&
	      f.v[3] == 0x40100b);
}

TEST_MAIN()
