/* SPDX-License-Identifier: MIT */
/*
 * Branch targets of a whole function, so that the core never displaces
 * bytes that some jump lands in the middle of.
 *
 * The function is decoded linearly. Direct branches report their target.
 * An indirect jmp is the problem: it may land anywhere, so unless we can
 * prove where, it is reported as unresolved. Two forms are proved:
 *
 *   (a) the PIE jump table gcc and clang emit for a switch,
 *           cmp  $N,%eI ; ja default        (or jae: N entries)
 *           lea  TABLE(%rip),%rX
 *           movslq (%rX,%rI,4),%rY
 *           add  %rX,%rY                    (either operand order)
 *           jmp  *%rY
 *       entries are int32 offsets from TABLE;
 *   (b) the non-PIE table:  cmp $N,%eI ; ja default ; jmp *TABLE(,%rI,8)
 *       entries are absolute addresses.
 *
 * An unresolved jump whose target is a pointer read whole from memory
 * says where it was read (np_branch_sink.unresolved's loaded_at): `jmp
 * *mem` itself (`jmp *SLOT(%rip)`, a tail call through the GOT, whose
 * slot's present value is reported as a target too; `jmp *0x80(%rax)`,
 * through a table of functions), or `jmp *%rX` whose %rX was last written,
 * in the straight-line code before it, by a 64-bit load (`mov M,%rX`,
 * `pop %rX`), by `lea L(%rip),%rX`, or by copies of such a value, or
 * holds what it held at the entry. The planner knows where such pointers
 * can point (docs/design.md, "Indirect jumps"); a computed target (a sum,
 * a demangled pointer) may be anywhere. Addresses the code forms (`lea
 * L(%rip)`, an absolute immediate of 32 bits or more) are reported too.
 *
 * The bounds check is found by walking back at most X86_RING
 * instructions from the table load, following `mov %eJ,%eI` copies of the
 * index, giving up at any other write of the index or at an instruction
 * that does not fall through. gcc also bounds a switch on a char or short
 * by comparing the narrow register and widening it after the check,
 *       cmp $N,%dl ; ja default ; lea ... ; movzbl %dl,%edx ; movslq ...
 * (redis-server's processCommand): a `movzx` from an 8- or 16-bit register
 * is followed too, and then only a cmp of that very register bounds the
 * index (a cmp of %dl says nothing of the rest of %rdx). So is a `movzx`
 * from memory, bounded by a cmp of the same memory operand with nothing
 * between that writes its registers or stores (sqlite3GetToken's
 *       cmpb $0x1e,(%rcx,%rax,1) ; ja ; movzbl (%rcx,%rax,1),%eax ; ...).
 * Table memory is read through np_mem.
 *
 * Bytes that do not decode (data in text, or a desynchronised sweep) are
 * skipped one at a time. That is the conservative choice: each run of
 * them counts as one unresolved jump, since whatever they hide might be
 * an indirect jmp, and the sweep resumes at the next byte.
 */
#include <errno.h>

#include "arch/x86_64/internal.h"

#define X86_RING      16
#define X86_MAX_TABLE 65536 /* entries; also keeps N+1 from overflowing */

struct scan {
	const uint8_t *code;
	size_t len;
	uint64_t pc;
	const struct np_mem *mem;
	const struct np_branch_sink *sink;
	size_t ring[X86_RING]; /* offsets of the latest instructions */
	unsigned n;            /* instructions pushed since the last reset */
	bool from_entry;       /* no reset since the function's entry */
};

static void found(const struct scan *s, uint64_t from, uint64_t target)
{
	s->sink->target(s->sink->cookie, from, target);
}

static ZydisRegister full_reg(ZydisRegister r)
{
	return ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r);
}

static bool is_gpr32_64(ZydisRegister r)
{
	ZydisRegisterClass c = ZydisRegisterGetClass(r);

	return c == ZYDIS_REGCLASS_GPR32 || c == ZYDIS_REGCLASS_GPR64;
}

static bool is_reg(const ZydisDecodedOperand *op)
{
	return op->type == ZYDIS_OPERAND_TYPE_REGISTER && is_gpr32_64(op->reg.value);
}

/* The instruction 'back' steps before the current one (0: current). */
static int at(const struct scan *s, unsigned back, struct x86_insn *x)
{
	size_t off;

	if (back >= s->n || back >= X86_RING)
		return -1;
	off = s->ring[(s->n - 1 - back) % X86_RING];
	return x86_zdecode(s->code + off, s->len - off, x);
}

static uint64_t pc_at(const struct scan *s, unsigned back)
{
	return s->pc + s->ring[(s->n - 1 - back) % X86_RING];
}

static bool falls_through(const struct x86_insn *x)
{
	struct np_insn n;

	x86_classify(x, 0, &n);
	return !(n.flags & NP_INSN_NOFALL);
}

/* Step of the latest instruction at or before 'from' writing 'reg'. */
static int last_writer(const struct scan *s, unsigned from, ZydisRegister reg,
		       struct x86_insn *x)
{
	for (unsigned b = from; at(s, b, x) == 0; b++) {
		if (!falls_through(x))
			return -1;
		if (x86_writes(x, reg))
			return (int)b;
	}
	return -1;
}

/* A copy of the index that keeps its bound: 32/64-bit mov or movslq. */
static bool is_index_copy(const struct x86_insn *x, ZydisRegister idx)
{
	return (x->zi.mnemonic == ZYDIS_MNEMONIC_MOV || x->zi.mnemonic == ZYDIS_MNEMONIC_MOVSXD) &&
	       is_reg(&x->ops[0]) && is_reg(&x->ops[1]) && full_reg(x->ops[0].reg.value) == idx;
}

/* `movzbl %dl,%edx`-like: the index widened from an 8- or 16-bit register. */
static bool is_index_widening(const struct x86_insn *x, ZydisRegister idx)
{
	ZydisRegisterClass c;

	if (x->zi.mnemonic != ZYDIS_MNEMONIC_MOVZX || !is_reg(&x->ops[0]) ||
	    full_reg(x->ops[0].reg.value) != idx || x->ops[1].type != ZYDIS_OPERAND_TYPE_REGISTER)
		return false;
	c = ZydisRegisterGetClass(x->ops[1].reg.value);
	return c == ZYDIS_REGCLASS_GPR8 || c == ZYDIS_REGCLASS_GPR16;
}

/* `movzbl M,%eI` or `movzwl M,%eI`: the index read from memory, 8 or 16
 * bits of it (sqlite3GetToken: movzbl (%rcx,%rax,1),%eax, whose byte the
 * cmpb before the ja bounds). */
static bool is_index_load(const struct x86_insn *x, ZydisRegister idx)
{
	const ZydisDecodedOperand *m = &x->ops[1];

	return x->zi.mnemonic == ZYDIS_MNEMONIC_MOVZX && is_reg(&x->ops[0]) &&
	       full_reg(x->ops[0].reg.value) == idx && m->type == ZYDIS_OPERAND_TYPE_MEMORY &&
	       (m->size == 8 || m->size == 16) && m->mem.base != ZYDIS_REGISTER_RIP;
}

static bool same_mem(const ZydisDecodedOperand *a, const ZydisDecodedOperand *b)
{
	return a->type == ZYDIS_OPERAND_TYPE_MEMORY && b->type == ZYDIS_OPERAND_TYPE_MEMORY &&
	       a->size == b->size && a->mem.segment == b->mem.segment &&
	       a->mem.base == b->mem.base && a->mem.index == b->mem.index &&
	       a->mem.scale == b->mem.scale && a->mem.disp.value == b->mem.disp.value;
}

/* Could x change what the memory operand m reads: a write of its base
 * or index, a store, a call? */
static bool changes_mem(const struct x86_insn *x, const ZydisDecodedOperand *m)
{
	if (x->zi.meta.category == ZYDIS_CATEGORY_CALL ||
	    (m->mem.base != ZYDIS_REGISTER_NONE && x86_writes(x, m->mem.base)) ||
	    (m->mem.index != ZYDIS_REGISTER_NONE && x86_writes(x, m->mem.index)))
		return true;
	for (unsigned i = 0; i < x->zi.operand_count; i++)
		if (x->ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY &&
		    (x->ops[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
			return true;
	return false;
}

/* What bounds the index, walking back: the index register itself, an
 * 8- or 16-bit register it was widened from, or the memory it was read
 * from. */
struct bound_of {
	ZydisRegister idx, narrow;
	ZydisDecodedOperand mem; /* type memory: read from there */
};

/* `cmp $N,%I` just before the ja/jae at step b: entries, or 0. With a
 * narrow index (an 8- or 16-bit register the index was widened from, or
 * the memory it was read from), the cmp must be of that very register or
 * memory, its immediate read at that width. */
static uint64_t cmp_bound(const struct scan *s, unsigned b, const struct bound_of *k, bool ja)
{
	struct x86_insn c;
	const ZydisDecodedOperand *a = &c.ops[0];
	int64_t n;

	if (at(s, b + 1, &c) || c.zi.mnemonic != ZYDIS_MNEMONIC_CMP ||
	    c.ops[1].type != ZYDIS_OPERAND_TYPE_IMMEDIATE)
		return 0;
	if (k->mem.type == ZYDIS_OPERAND_TYPE_MEMORY) {
		if (!same_mem(a, &k->mem))
			return 0;
		n = (int64_t)(c.ops[1].imm.value.u & (a->size == 8 ? 0xff : 0xffff));
	} else if (a->type != ZYDIS_OPERAND_TYPE_REGISTER) {
		return 0;
	} else if (k->narrow == ZYDIS_REGISTER_NONE) {
		if (!is_reg(a) || full_reg(a->reg.value) != k->idx)
			return 0;
		n = c.ops[1].imm.value.s;
	} else {
		if (a->reg.value != k->narrow)
			return 0;
		n = (int64_t)(c.ops[1].imm.value.u & (a->size == 8 ? 0xff : 0xffff));
	}
	n += ja ? 1 : 0;
	return n > 0 && n <= X86_MAX_TABLE ? (uint64_t)n : 0;
}

/* Entries of the table indexed by 'idx', from the bounds check guarding
 * it, searched backwards from step 'from'. 0 when not proved. Between
 * the cmp of memory and the load of the index from it, nothing may
 * change what that operand reads (a racing store of another thread would
 * break the program's own switch first). */
static uint64_t table_bound(const struct scan *s, unsigned from, ZydisRegister idx)
{
	struct bound_of k = {full_reg(idx), ZYDIS_REGISTER_NONE, {0}};
	bool plain = true; /* the index is still the register itself */
	struct x86_insn x;

	for (unsigned b = from; at(s, b, &x) == 0; b++) {
		if (x.zi.mnemonic == ZYDIS_MNEMONIC_JNBE || x.zi.mnemonic == ZYDIS_MNEMONIC_JNB)
			return cmp_bound(s, b, &k, x.zi.mnemonic == ZYDIS_MNEMONIC_JNBE);
		if (!falls_through(&x))
			return 0;
		if (!plain) {
			if (k.mem.type == ZYDIS_OPERAND_TYPE_MEMORY ? changes_mem(&x, &k.mem)
								    : x86_writes(&x, k.idx))
				return 0;
		} else if (is_index_copy(&x, k.idx)) {
			k.idx = full_reg(x.ops[1].reg.value);
		} else if (is_index_widening(&x, k.idx)) {
			k.narrow = x.ops[1].reg.value;
			k.idx = full_reg(k.narrow);
			plain = false;
		} else if (is_index_load(&x, k.idx)) {
			k.mem = x.ops[1];
			plain = false;
		} else if (x86_writes(&x, k.idx)) {
			return 0;
		}
	}
	return 0;
}

/* Report 'count' entries of 'size' bytes (4: int32 offsets from table,
 * 8: absolute addresses) as targets of the jmp, the newest instruction. */
static bool report_table(const struct scan *s, uint64_t table, uint64_t count, unsigned size)
{
	uint64_t from = pc_at(s, 0);

	if (!s->mem)
		return false;
	for (uint64_t i = 0; i < count; i++) {
		int32_t rel;
		uint64_t abs;

		if (size == 4 && s->mem->read(s->mem->cookie, table + 4 * i, &rel, 4) == 0)
			found(s, from, table + (uint64_t)(int64_t)rel);
		else if (size == 8 && s->mem->read(s->mem->cookie, table + 8 * i, &abs, 8) == 0)
			found(s, from, abs);
		else
			return false;
	}
	return true;
}

/* (b) jmp *TABLE(,%rI,8) */
static bool match_abs_table(const struct scan *s, const ZydisDecodedOperand *m)
{
	uint64_t n;

	if (m->mem.base != ZYDIS_REGISTER_NONE || m->mem.index == ZYDIS_REGISTER_NONE ||
	    m->mem.scale != 8 || m->mem.segment != ZYDIS_REGISTER_DS)
		return false;
	n = table_bound(s, 1, m->mem.index);
	return n && report_table(s, (uint64_t)m->mem.disp.value, n, 8);
}

/* (a), matched backwards from jmp *%rY: add, then movslq and lea. */
static bool match_pie_table(const struct scan *s, ZydisRegister y)
{
	struct x86_insn add, p, q, scratch, *mov, *lea;
	int b_add = last_writer(s, 1, y, &add), b_p, b_q, b_mov, b_lea;
	ZydisRegister other;
	uint64_t n, table;

	if (b_add < 0 || add.zi.mnemonic != ZYDIS_MNEMONIC_ADD || !is_reg(&add.ops[1]))
		return false;
	other = full_reg(add.ops[1].reg.value);
	b_p = last_writer(s, (unsigned)b_add + 1, y, &p);
	b_q = last_writer(s, (unsigned)b_add + 1, other, &q);
	if (b_p < 0 || b_q < 0)
		return false;
	mov = p.zi.mnemonic == ZYDIS_MNEMONIC_MOVSXD ? &p : &q;
	lea = mov == &p ? &q : &p;
	b_mov = mov == &p ? b_p : b_q;
	b_lea = mov == &p ? b_q : b_p;
	if (mov->zi.mnemonic != ZYDIS_MNEMONIC_MOVSXD || lea->zi.mnemonic != ZYDIS_MNEMONIC_LEA ||
	    lea->ops[1].mem.base != ZYDIS_REGISTER_RIP || mov->ops[1].mem.scale != 4 ||
	    mov->ops[1].mem.disp.value != 0 ||
	    full_reg(mov->ops[1].mem.base) != full_reg(lea->ops[0].reg.value))
		return false;
	/* The lea must be what the movslq reads as its base. */
	if (last_writer(s, (unsigned)b_mov + 1, lea->ops[0].reg.value, &scratch) != b_lea)
		return false;
	ZydisCalcAbsoluteAddress(&lea->zi, &lea->ops[1], pc_at(s, (unsigned)b_lea), &table);
	n = table_bound(s, (unsigned)b_mov + 1, mov->ops[1].mem.index);
	return n && report_table(s, table, n, 4);
}

/* `jmp *SLOT(%rip)`: the slot's present value is a target (where the
 * engine reads live memory, the tail call's callee) */
static void report_slot(const struct scan *s, uint64_t slot)
{
	uint64_t v;

	if (s->mem && s->mem->read(s->mem->cookie, slot, &v, 8) == 0)
		found(s, pc_at(s, 0), v);
}

static bool is_gpr64(const ZydisDecodedOperand *op)
{
	return op->type == ZYDIS_OPERAND_TYPE_REGISTER && x86_gpr64(op->reg.value) >= 0;
}

/* Did the instruction that wrote reg read it whole from memory (a
 * 64-bit mov or pop) or form it (`lea L(%rip)`)? */
static bool loads_pointer(const struct x86_insn *x, ZydisRegister reg)
{
	const ZydisDecodedOperand *dst = &x->ops[0], *src = &x->ops[1];

	if (!is_gpr64(dst) || dst->reg.value != reg)
		return false;
	switch (x->zi.mnemonic) {
	case ZYDIS_MNEMONIC_MOV:
		return src->type == ZYDIS_OPERAND_TYPE_MEMORY && src->size == 64;
	case ZYDIS_MNEMONIC_POP:
		return true;
	case ZYDIS_MNEMONIC_LEA:
		return src->mem.base == ZYDIS_REGISTER_RIP && src->mem.index == ZYDIS_REGISTER_NONE;
	default:
		return false;
	}
}

/* Where the value `jmp *reg` (the newest instruction) jumps to was
 * loaded: the pc of the load, of the function's entry (reg holds what it
 * held there), or 0 (computed, or not seen). Straight-line code only:
 * the walk stops at an instruction that does not fall through, and the
 * planner checks that nothing lands between the load and the jump. */
static uint64_t loaded_at(const struct scan *s, ZydisRegister reg)
{
	struct x86_insn x;

	for (unsigned b = 1;; b++) {
		if (at(s, b, &x)) /* past the oldest instruction kept */
			return s->from_entry && b == s->n ? s->pc : 0;
		if (!falls_through(&x))
			return 0;
		if (!x86_writes(&x, reg))
			continue;
		if (loads_pointer(&x, reg))
			return pc_at(s, b);
		if (x.zi.mnemonic != ZYDIS_MNEMONIC_MOV || !is_gpr64(&x.ops[0]) ||
		    !is_gpr64(&x.ops[1]))
			return 0;
		reg = x.ops[1].reg.value; /* a copy: where did that come from? */
	}
}

/* Resolve the jmp (the newest instruction): true when its targets were
 * all reported; else *loaded as loaded_at() says. */
static bool resolve_jmp(const struct scan *s, const struct x86_insn *x, const struct np_insn *n,
			uint64_t *loaded)
{
	const ZydisDecodedOperand *op = &x->ops[0];

	*loaded = 0;
	if (op->type == ZYDIS_OPERAND_TYPE_MEMORY) {
		if (n->flags & NP_INSN_PCREL)
			report_slot(s, n->target);
		else if (match_abs_table(s, op))
			return true;
		*loaded = pc_at(s, 0);
		return false;
	}
	if (!is_gpr64(op))
		return false;
	if (match_pie_table(s, op->reg.value))
		return true;
	*loaded = loaded_at(s, op->reg.value);
	return false;
}

/* Could it be a branch? (A whole library is swept at its first probe, so
 * everything else is skipped on its length alone.) */
static bool maybe_control_flow(const ZydisDecodedInstruction *zi)
{
	switch (zi->meta.category) {
	case ZYDIS_CATEGORY_COND_BR:
	case ZYDIS_CATEGORY_UNCOND_BR:
	case ZYDIS_CATEGORY_CALL:
	case ZYDIS_CATEGORY_RET:
		return true;
	default:
		return zi->meta.branch_type != ZYDIS_BRANCH_TYPE_NONE;
	}
}

/* Addresses the instruction forms (np_branch_sink.formed): `lea
 * L(%rip)`, and an absolute immediate of 32 bits or more (non-PIC code's
 * `mov $L,%eax`), as the raw decode gives them. */
static void report_formed(const struct scan *s, const ZydisDecodedInstruction *zi, uint64_t pc)
{
	const struct np_branch_sink *k = s->sink;

	if (!k->formed)
		return;
	if (zi->mnemonic == ZYDIS_MNEMONIC_LEA && (zi->attributes & ZYDIS_ATTRIB_HAS_MODRM) &&
	    zi->raw.modrm.mod == 0 && zi->raw.modrm.rm == 5) /* rip-relative */
		k->formed(k->cookie, pc, pc + zi->length + (uint64_t)zi->raw.disp.value);
	for (unsigned i = 0; i < 2; i++) {
		const struct ZydisDecodedInstructionRawImm_ *imm = &zi->raw.imm[i];

		if (imm->size >= 32 && !imm->is_relative && (!imm->is_signed || imm->value.s > 0))
			k->formed(k->cookie, pc, imm->value.u);
	}
}

static void report_unresolved(const struct scan *s, uint64_t from, uint64_t loaded)
{
	const struct np_branch_sink *k = s->sink;

	if (k->unresolved)
		k->unresolved(k->cookie, from, loaded);
}

int x86_branch_targets(const uint8_t *code, size_t len, uint64_t pc, const struct np_mem *mem,
		       const struct np_branch_sink *sink)
{
	struct scan s = {code, len, pc, mem, sink, {0}, 0, true};
	int unresolved = 0;
	bool in_garbage = false;

	for (size_t off = 0; off < len;) {
		struct x86_insn x;
		struct np_insn n;
		uint64_t loaded;

		if (x86_zdecode_quick(code + off, len - off, &x.zi) == 0 &&
		    !maybe_control_flow(&x.zi)) {
			in_garbage = false;
			s.ring[s.n++ % X86_RING] = off;
			report_formed(&s, &x.zi, pc + off);
			off += x.zi.length;
			continue;
		}
		if (x86_zdecode(code + off, len - off, &x)) {
			if (!in_garbage) {
				unresolved++;
				report_unresolved(&s, pc + off, 0);
			}
			in_garbage = true;
			s.n = 0; /* no pattern spans undecodable bytes */
			s.from_entry = false;
			off++;
			continue;
		}
		in_garbage = false;
		x86_classify(&x, pc + off, &n);
		s.ring[s.n++ % X86_RING] = off;
		if (n.flags & NP_INSN_BRANCH) {
			found(&s, pc + off, n.target);
		} else if ((n.flags & (NP_INSN_INDIRECT | NP_INSN_CALL)) == NP_INSN_INDIRECT &&
			   !resolve_jmp(&s, &x, &n, &loaded)) {
			unresolved++;
			report_unresolved(&s, pc + off, loaded);
		}
		off += n.len;
	}
	return unresolved;
}
