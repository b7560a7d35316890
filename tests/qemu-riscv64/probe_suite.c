/* SPDX-License-Identifier: MIT */
/*
 * The magic-value suite (suite.S) probed at every instruction, on a
 * riscv64 machine or under qemu-riscv64, with the pure riscv64 layer,
 * the free-register analysis and the planner (src/plan/: the same files
 * the engine and the command use, with the command's model of trampoline
 * places), cross-compiled with riscv64-linux-gnu-gcc:
 *
 *   auto  the strategy the planner gives: JUMP by jal to a trampoline page
 *         within 1 MiB, else TRAP (simulated or out of line);
 *   long  trampolines only beyond jal's reach: JUMP by auipc+jalr through
 *         a free register, jumping back through another; else TRAP, an
 *         out-of-line copy there jumping back through a free register or,
 *         with none, ending with a c.ebreak whose handler sends the
 *         thread on (the engine's trap back, src/core/region.c);
 *   trap  every site forced to TRAP: c.ebreak, one SIGTRAP per hit,
 *         simulated or out of line with a jump back.
 *
 * One probe at a time: patch, flush the instruction cache (glibc's
 * __riscv_flush_icache through __builtin___clear_cache), call the
 * function, check it returns the magic value and that the probe was hit
 * exactly as often as the site ran (never, for sites listed by NEVER),
 * then restore the bytes. A JUMP trampoline counts its hit in memory with
 * registers saved below sp; a TRAP hit is counted by the handler.
 * Prints TAP, one line per function and mode.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "plan/plan.h"

#define MAGIC 0x600dc0deu
#define PAGE  0x10000ull /* trampoline area: 64 KiB */
#define SLOT  256

typedef unsigned (*suite_fn)(void);

#define SUITE(n) extern unsigned n(void); extern char n##_end[];
SUITE(rv_suite_alu)
SUITE(rv_suite_pcrel)
SUITE(rv_suite_calls)
SUITE(rv_suite_branches)
SUITE(rv_suite_misc)
SUITE(rv_suite_busy)
extern const uint64_t __start_rv_never[], __stop_rv_never[];
extern const uint64_t __start_rv_times[], __stop_rv_times[]; /* pairs: pc, n */
extern char _end[];

static const struct {
	const char *name;
	suite_fn fn;
	char *end;
	bool direct; /* analysed as called directly (-fipa-ra callers) */
} suites[] = {
	{"alu", rv_suite_alu, rv_suite_alu_end, false},
	{"pcrel", rv_suite_pcrel, rv_suite_pcrel_end, false},
	{"calls", rv_suite_calls, rv_suite_calls_end, false},
	{"branches", rv_suite_branches, rv_suite_branches_end, false},
	{"misc", rv_suite_misc, rv_suite_misc_end, false},
	{"busy", rv_suite_busy, rv_suite_busy_end, true},
};

enum mode { AUTO, LONG, TRAP };
static const char *const mode_names[] = {"auto", "long", "trap"};

static uint8_t *near_page, *far_page;

/* The trap probe, seen by the handler. */
static struct {
	uint64_t site;
	struct np_insn insn;
	uint64_t ool; /* slot for an out-of-line instruction */
	uint64_t back_at; /* the copy's closing c.ebreak when it traps back, or 0 */
	volatile uint64_t hits, backs;
} trap;
static unsigned trap_backs; /* sites whose copy trapped back, in all */

static int fail(const char *what)
{
	fprintf(stderr, "# %s: %s\n", what, strerror(errno));
	return -1;
}

static void flush(void *p, size_t n)
{
	__builtin___clear_cache((char *)p, (char *)p + n);
}

/* How many times a correct call runs the instruction at pc. */
static uint64_t runs(uint64_t pc)
{
	for (const uint64_t *p = __start_rv_never; p < __stop_rv_never; p++)
		if (*p == pc)
			return 0;
	for (const uint64_t *p = __start_rv_times; p < __stop_rv_times; p += 2)
		if (*p == pc)
			return p[1];
	return 1;
}

/* ------------------------------------------------------------------ */
/* Trampoline pages                                                      */

static uint8_t *map_at(uint64_t hint)
{
	void *p = mmap((void *)hint, PAGE, PROT_READ | PROT_WRITE | PROT_EXEC,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	return p == MAP_FAILED || (uint64_t)p != hint ? NULL : p;
}

static int map_pages(void)
{
	uint64_t base = ((uint64_t)_end + PAGE - 1) & ~(PAGE - 1);

	for (uint64_t a = base; !near_page && a < base + 64 * PAGE; a += PAGE)
		near_page = map_at(a);
	for (uint64_t a = base + (256ull << 20); !far_page && a < base + (512ull << 20); a += PAGE)
		far_page = map_at(a);
	if (!near_page || !far_page)
		return fail("cannot map trampoline pages");
	if ((uint64_t)near_page + PAGE - (uint64_t)suites[0].fn >=
	    np_plan_reach(&np_isa_riscv64, NP_JUMP_SHORT)) {
		fprintf(stderr, "# the near page is beyond the reach of the suite the planner allows jal\n");
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Encodings the trampoline prologue needs                               */

static uint32_t i_type(unsigned op, unsigned f3, unsigned rd, unsigned rs1, int32_t imm)
{
	return ((uint32_t)imm & 0xfff) << 20 | rs1 << 15 | f3 << 12 | rd << 7 | op;
}

static uint32_t s_type(unsigned f3, unsigned rs1, unsigned rs2, int32_t imm)
{
	uint32_t u = (uint32_t)imm & 0xfff;

	return (u >> 5) << 25 | rs2 << 20 | rs1 << 15 | f3 << 12 | (u & 31) << 7 | 0x23;
}

enum { SP = 2, T0 = 5, T1 = 6 };

/* ++*counter with t0 and t1 saved below sp: nothing the program sees
 * changes. 11 words. */
static size_t count_prologue(uint32_t *w, uint64_t pc, uint64_t counter)
{
	int64_t off = (int64_t)(counter - (pc + 12)), lo = (int64_t)(int32_t)((uint32_t)off << 20) >> 20;
	size_t n = 0;

	w[n++] = i_type(0x13, 0, SP, SP, -16);           /* addi sp,sp,-16 */
	w[n++] = s_type(3, SP, T0, 0);                   /* sd t0,0(sp) */
	w[n++] = s_type(3, SP, T1, 8);                   /* sd t1,8(sp) */
	w[n++] = ((uint32_t)(off - lo) & 0xfffff000u) | T0 << 7 | 0x17; /* auipc t0,hi */
	w[n++] = i_type(0x13, 0, T0, T0, (int32_t)lo);   /* addi t0,t0,lo */
	w[n++] = i_type(0x03, 3, T1, T0, 0);             /* ld t1,0(t0) */
	w[n++] = i_type(0x13, 0, T1, T1, 1);             /* addi t1,t1,1 */
	w[n++] = s_type(3, T0, T1, 0);                   /* sd t1,0(t0) */
	w[n++] = i_type(0x03, 3, T1, SP, 8);             /* ld t1,8(sp) */
	w[n++] = i_type(0x03, 3, T0, SP, 0);             /* ld t0,0(sp) */
	w[n++] = i_type(0x13, 0, SP, SP, 16);            /* addi sp,sp,16 */
	return n * 4;
}

/* ------------------------------------------------------------------ */
/* Probes                                                                */

static int mem_read(void *cookie, uint64_t addr, void *dst, size_t len)
{
	(void)cookie;
	memcpy(dst, (const void *)addr, len);
	return 0;
}

/* Relocate [from, to) of the code to out (at its own address), jumping
 * back to 'back' (0: none, what follows in the slot runs next); its
 * length rounded up to a word with a c.nop, or -1. */
static int relocate_part(const struct np_fn_view *f, uint64_t from, uint64_t to, uint8_t *out,
			 size_t cap, uint64_t back)
{
	struct np_reloc r = {(const uint8_t *)from, to - from, from, out, cap, (uint64_t)out, back};
	struct np_reloc_scratch sc = {np_freereg_over(&f->fr, from, to), np_freereg_at(&f->fr, to)};
	int n = np_isa_riscv64.relocate_via(&r, &sc);

	if (n > 0 && n % 4) {
		memcpy(out + n, &(uint16_t){0x0001}, 2); /* c.nop */
		n += 2;
	}
	return n;
}

/* JUMP: trampoline in page (counter at its start), patch at the plan's
 * start: the site itself, or the instruction before it (plan.c), which
 * then runs first, the counter just before the site's instruction.
 * Returns the patch length, or -1. */
static int attach_jump(const struct np_fn_view *f, const struct np_site_plan *s, uint8_t *page)
{
	const struct np_plan *p = &s->plan;
	const struct np_insn *last = &p->insn[p->ninsn - 1];
	uint64_t start = p->start, end = last->pc + last->len; /* padding is not run */
	bool falls = !(last->flags & NP_INSN_NOFALL);
	uint8_t *slot = page + SLOT, patch[16];
	int n = 0, before = 0;

	*(volatile uint64_t *)page = 0;
	if (start < s->pc)
		before = relocate_part(f, start, s->pc, slot, SLOT, 0);
	if (before < 0)
		return -1;
	size_t pro = count_prologue((uint32_t *)(slot + before), (uint64_t)slot + before,
				    (uint64_t)page);
	if (relocate_part(f, s->pc, end, slot + before + pro, SLOT * 2 - before - pro,
			  falls ? end : 0) < 0)
		return -1;
	if (p->form == NP_JUMP_SHORT)
		n = np_isa_riscv64.emit_jump(patch, start, (uint64_t)slot) ? -1 : 4;
	else
		n = np_isa_riscv64.emit_jump_via(patch, sizeof(patch), start, (uint64_t)slot,
						 np_freereg_at(&f->fr, start));
	if (n < 0)
		return -1;
	flush(slot, SLOT * 3);
	memcpy((void *)start, patch, (size_t)n);
	flush((void *)start, (size_t)n);
	return n;
}

static void on_trap(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	unsigned long *g = uc->uc_mcontext.__gregs; /* pc, then x1..x31 */
	struct np_regs regs;
	struct np_mem mem = {mem_read, NULL, NULL};

	(void)sig, (void)si;
	if (trap.back_at && g[0] == trap.back_at) { /* out of line, and back */
		g[0] = trap.site + trap.insn.len;
		trap.backs++;
		return;
	}
	if (g[0] != trap.site)
		abort(); /* a breakpoint that is not ours */
	trap.hits++;
	if (trap.insn.cls != NP_INSN_SIMULATED) {
		g[0] = trap.ool;
		return;
	}
	memset(&regs, 0, sizeof(regs));
	for (int i = 1; i < 32; i++)
		regs.gpr[i] = g[i];
	regs.pc = g[0];
	if (np_isa_riscv64.simulate(&trap.insn, &regs, &mem))
		abort();
	for (int i = 1; i < 32; i++)
		g[i] = regs.gpr[i];
	g[0] = regs.pc;
}

/* TRAP: c.ebreak at the site; the instruction out of line in page,
 * jumping back, or, where the plan says it cannot (trap_back), followed
 * by a c.ebreak that the handler answers with the site's end. */
static int attach_trap(const struct np_fn_view *f, uint64_t pc, const struct np_insn *in,
		       uint8_t *page, bool trap_back)
{
	uint8_t *slot = page + SLOT;
	bool falls = !(in->flags & NP_INSN_NOFALL);
	struct np_reloc r = {(const uint8_t *)pc, in->len, pc, slot, SLOT * 2, (uint64_t)slot,
			     falls && !trap_back ? pc + in->len : 0};
	struct np_reloc_scratch sc = {np_freereg_at(&f->fr, pc), np_freereg_at(&f->fr, pc + in->len)};
	int n = 0;

	trap.site = pc;
	trap.insn = *in;
	trap.ool = (uint64_t)slot;
	trap.back_at = 0;
	trap.hits = trap.backs = 0;
	if (in->cls != NP_INSN_SIMULATED && (n = np_isa_riscv64.relocate_via(&r, &sc)) < 0)
		return -1;
	if (in->cls != NP_INSN_SIMULATED && trap_back) {
		trap.back_at = (uint64_t)slot + (uint64_t)n;
		np_isa_riscv64.emit_trap(slot + n);
	}
	flush(slot, SLOT * 2);
	np_isa_riscv64.emit_trap((uint8_t *)pc);
	flush((void *)pc, 2);
	return 2;
}

/* ------------------------------------------------------------------ */
/* The suite                                                             */

struct tally {
	unsigned sites, jump, trap, back, skipped, bad;
};

/* Call the function; *hits is read after it returned. */
static void check_run(unsigned i, uint64_t pc, const char *how, volatile uint64_t *counter,
		      struct tally *t)
{
	unsigned got = suites[i].fn();
	uint64_t want = runs(pc), hits = *counter;

	if (got != MAGIC || hits != want) {
		fprintf(stderr, "# %s+0x%llx (%s): returned 0x%x, %llu hits, want %llu\n",
			suites[i].name, (unsigned long long)(pc - (uint64_t)suites[i].fn), how, got,
			(unsigned long long)hits, (unsigned long long)want);
		t->bad++;
	}
}

static void probe_site(unsigned i, struct np_fn_view *f, const struct np_plan_places *pl,
		       uint64_t pc, enum mode m, struct tally *t)
{
	uint8_t saved[16];
	struct np_site_plan s;
	struct np_insn in;
	struct np_plan_realise model = np_plan_model(pl);
	int n = -1;

	np_plan_site(f, pc, NP_WANT_AUTO, &model, &s);
	np_isa_riscv64.decode((const uint8_t *)pc, 4, pc, &in);
	/* the bytes a patch may change: from the plan's start */
	uint64_t at = m != TRAP && s.kind == NP_SITE_JUMP ? s.plan.start : pc;
	memcpy(saved, (void *)at, sizeof(saved));
	t->sites++;
	if (s.kind == NP_SITE_REFUSED || (m == TRAP && in.cls == NP_INSN_REJECTED)) {
		t->skipped++;
		return;
	}
	if (m != TRAP && s.kind == NP_SITE_JUMP) {
		uint8_t *page = (uint8_t *)(s.place & ~(PAGE - 1));

		if ((n = attach_jump(f, &s, page)) > 0) {
			check_run(i, pc, np_plan_form_name(&np_isa_riscv64, s.plan.form),
				  (volatile uint64_t *)page, t);
			t->jump++;
		}
	} else {
		/* the copy's page: where the plan put it (beyond jal's reach in
		 * long), near for a forced TRAP the plan gave JUMP */
		uint8_t *page = s.kind == NP_SITE_TRAP_OOL ? (uint8_t *)(s.place & ~(PAGE - 1))
							   : near_page;

		if ((n = attach_trap(f, pc, &in, page, s.trap_back)) > 0) {
			check_run(i, pc, s.trap_back ? "trap back" : "trap", &trap.hits, t);
			t->trap++;
			t->back += s.trap_back;
		}
		if (n > 0 && trap.back_at && trap.backs != trap.hits) { /* every hit came back */
			fprintf(stderr, "# %s+0x%llx: %llu hits, %llu back by a trap\n",
				suites[i].name, (unsigned long long)(pc - (uint64_t)suites[i].fn),
				(unsigned long long)trap.hits, (unsigned long long)trap.backs);
			t->bad++;
		}
	}
	if (n < 0) {
		fprintf(stderr, "# %s+0x%llx: cannot attach\n", suites[i].name,
			(unsigned long long)(pc - (uint64_t)suites[i].fn));
		t->bad++;
		return;
	}
	memcpy((void *)at, saved, sizeof(saved));
	flush((void *)at, sizeof(saved));
}

/* The suite's functions are called through pointers only (check_run),
 * so only the convention reaches them: what is caller-saved is dead at
 * their returns (src/arch/regsum.c). busy is analysed as if a caller
 * called it directly, which -fipa-ra code may: nothing is known. */
static bool module_env(void *cookie, uint64_t start, bool called, struct np_freereg_env *env)
{
	const bool *direct = cookie;
	(void)start, (void)called;
	*env = (struct np_freereg_env){np_isa_riscv64.call_clobbered, NULL, NULL};
	return !*direct;
}

static int host_read(void *cookie, uint64_t addr, void *dst, size_t len)
{
	return mem_read(cookie, addr, dst, len);
}

static bool run_suite(unsigned i, enum mode m)
{
	uint64_t start = (uint64_t)suites[i].fn, end = (uint64_t)suites[i].end;
	struct np_plan_places pl = {0};
	struct np_plan_host host = {.read = host_read,
				    .module = module_env,
				    .cookie = (void *)&suites[i].direct};
	struct np_func_bounds fb = {start, end, end, true, true};
	struct tally t = {0};
	struct np_fn_view f;
	struct np_insn in;

	pl.below = pl.above = (uint64_t)(m == LONG ? far_page : near_page);
	pl.far = (uint64_t)far_page;
	if (np_fn_view_load(&f, &np_isa_riscv64, &host, &fb, start, NP_VIEW_MODULE)) {
		np_fn_view_free(&f);
		return false;
	}
	for (uint64_t pc = start; pc < end; pc += in.len) {
		if (np_isa_riscv64.decode((const uint8_t *)pc, end - pc, pc, &in))
			break;
		probe_site(i, &f, &pl, pc, m, &t);
	}
	np_fn_view_free(&f);
	printf("%s %u - %s %s: %u sites, %u JUMP, %u TRAP (%u back by a trap), %u rejected\n",
	       t.bad ? "not ok" : "ok", i * 3 + m + 1, suites[i].name, mode_names[m], t.sites,
	       t.jump, t.trap, t.back, t.skipped);
	trap_backs += t.back;
	/* each mode must have probed something, JUMP in the first two */
	return !t.bad && (m == TRAP ? t.trap : t.jump) > 0;
}

int main(void)
{
	struct sigaction sa = {.sa_sigaction = on_trap, .sa_flags = SA_SIGINFO};
	uint64_t lo = (uint64_t)suites[0].fn & ~0xfffull;
	bool ok = true;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (sigaction(SIGTRAP, &sa, NULL) || map_pages() ||
	    mprotect((void *)lo, (uint64_t)rv_suite_busy_end - lo + 4096,
		     PROT_READ | PROT_WRITE | PROT_EXEC))
		return fail("setup") ? 1 : 1;
	printf("1..%zu\n", sizeof(suites) / sizeof(suites[0]) * 3);
	for (unsigned i = 0; i < sizeof(suites) / sizeof(suites[0]); i++)
		for (int m = AUTO; m <= TRAP; m++)
			ok &= run_suite(i, (enum mode)m);
	if (!trap_backs) /* rv_suite_busy, long: copies that cannot jump back */
		fprintf(stderr, "# no out-of-line copy trapped back\n");
	return ok && trap_backs ? 0 : 1;
}
