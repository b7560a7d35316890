/* SPDX-License-Identifier: MIT */
/*
 * Disassembly text, AT&T syntax, shaped like objdump's (and gdb's, whose
 * addresses carry 0x as ours do): users read probe sites next to
 * `objdump -d` output.
 *
 * Zydis' AT&T formatter does the work, with the runtime address set to pc
 * so that branch targets print absolute. Hooks close the gaps between
 * Zydis 4.0 and GNU spelling where compilers' output shows them:
 *
 *   mnemonic   je/jne/ja (not jz/jnz/jnbe), cltq, movzbl, movslq, movabs,
 *              a size suffix only when no register operand gives the size
 *              (movl $1,(%rax); nopw 0x0(...)), ",pn"/",pt" branch hints;
 *   prefixes   GNU's words (repz, repnz, bnd, notrack), and the
 *              prefixes 64-bit mode ignores as words too (data16 cs nopw);
 *   operands   `*` before indirect branch operands, a 0x0 displacement
 *              when one is encoded, disp(%rip) followed by the absolute
 *              address as a `# 0x...` comment, no hidden register of a nop
 *              nor the implicit 1 of a shift, the implicit operands of
 *              string instructions (rep stos %rax,%es:(%rdi));
 *   layout     the mnemonic field padded to 6 columns, "," between
 *              operands.
 *
 * Rare forms still print Zydis' way (x87, AVX-512 decorators, rex.W on
 * a nop). Everything is per call: the formatter, and the Zydis function
 * a hook chains to (passed as user data), live on the stack.
 *
 * Zydis 4.0 erases the mnemonic when an operand right after it is skipped
 * in token mode, so the text is formatted as a plain string and laid out
 * afterwards, the mnemonic field ending at a tab the mnemonic hook adds.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <Zycore/String.h>

#include "arch/x86_64/internal.h"

/* Ends the mnemonic field in Zydis' output, for layout() to find. */
#define MNEMONIC_END "\t"

struct fmt_chain {
	ZydisFormatterFunc reg; /* Zydis' own, called after our `*` */
};

static bool is_xchg_ax(const ZydisDecodedInstruction *zi);

static ZyanStatus put(ZydisFormatterBuffer *b, ZydisTokenType type, const char *s)
{
	ZyanString *str;
	ZyanStringView v;

	ZYAN_CHECK(ZydisFormatterBufferAppend(b, type));
	ZYAN_CHECK(ZydisFormatterBufferGetString(b, &str));
	ZYAN_CHECK(ZyanStringViewInsideBuffer(&v, s));
	return ZyanStringAppend(str, &v);
}

static bool is_indirect_branch(const ZydisDecodedInstruction *zi)
{
	return zi->meta.branch_type != ZYDIS_BRANCH_TYPE_NONE &&
	       (zi->meta.category == ZYDIS_CATEGORY_CALL ||
		zi->meta.category == ZYDIS_CATEGORY_UNCOND_BR);
}

/* ------------------------------------------------------------------ */
/* Mnemonic                                                            */

static const struct {
	ZydisMnemonic mn;
	const char *gnu;
} x86_gnu_names[] = {
	{ZYDIS_MNEMONIC_JNBE, "ja"},       {ZYDIS_MNEMONIC_JNB, "jae"},
	{ZYDIS_MNEMONIC_JZ, "je"},         {ZYDIS_MNEMONIC_JNZ, "jne"},
	{ZYDIS_MNEMONIC_JNLE, "jg"},       {ZYDIS_MNEMONIC_JNL, "jge"},
	{ZYDIS_MNEMONIC_SETNBE, "seta"},   {ZYDIS_MNEMONIC_SETNB, "setae"},
	{ZYDIS_MNEMONIC_SETZ, "sete"},     {ZYDIS_MNEMONIC_SETNZ, "setne"},
	{ZYDIS_MNEMONIC_SETNLE, "setg"},   {ZYDIS_MNEMONIC_SETNL, "setge"},
	{ZYDIS_MNEMONIC_CMOVNBE, "cmova"}, {ZYDIS_MNEMONIC_CMOVNB, "cmovae"},
	{ZYDIS_MNEMONIC_CMOVZ, "cmove"},   {ZYDIS_MNEMONIC_CMOVNZ, "cmovne"},
	{ZYDIS_MNEMONIC_CMOVNLE, "cmovg"}, {ZYDIS_MNEMONIC_CMOVNL, "cmovge"},
	{ZYDIS_MNEMONIC_CBW, "cbtw"},      {ZYDIS_MNEMONIC_CWDE, "cwtl"},
	{ZYDIS_MNEMONIC_CDQE, "cltq"},     {ZYDIS_MNEMONIC_CWD, "cwtd"},
	{ZYDIS_MNEMONIC_CDQ, "cltd"},      {ZYDIS_MNEMONIC_CQO, "cqto"},
};

/* String instructions: GNU names them by size and shows the operands
 * Zydis hides. */
#define DS_ES "%ds:(%rsi),%es:(%rdi)"
#define ES_DS "%es:(%rdi),%ds:(%rsi)"
static const struct {
	ZydisMnemonic mn;
	const char *gnu, *ops;
} x86_string_ops[] = {
	{ZYDIS_MNEMONIC_MOVSB, "movsb", DS_ES},   {ZYDIS_MNEMONIC_MOVSW, "movsw", DS_ES},
	{ZYDIS_MNEMONIC_MOVSD, "movsl", DS_ES},   {ZYDIS_MNEMONIC_MOVSQ, "movsq", DS_ES},
	{ZYDIS_MNEMONIC_CMPSB, "cmpsb", ES_DS},   {ZYDIS_MNEMONIC_CMPSW, "cmpsw", ES_DS},
	{ZYDIS_MNEMONIC_CMPSD, "cmpsl", ES_DS},   {ZYDIS_MNEMONIC_CMPSQ, "cmpsq", ES_DS},
	{ZYDIS_MNEMONIC_STOSB, "stos", "%al,%es:(%rdi)"},
	{ZYDIS_MNEMONIC_STOSW, "stos", "%ax,%es:(%rdi)"},
	{ZYDIS_MNEMONIC_STOSD, "stos", "%eax,%es:(%rdi)"},
	{ZYDIS_MNEMONIC_STOSQ, "stos", "%rax,%es:(%rdi)"},
	{ZYDIS_MNEMONIC_LODSB, "lods", "%ds:(%rsi),%al"},
	{ZYDIS_MNEMONIC_LODSW, "lods", "%ds:(%rsi),%ax"},
	{ZYDIS_MNEMONIC_LODSD, "lods", "%ds:(%rsi),%eax"},
	{ZYDIS_MNEMONIC_LODSQ, "lods", "%ds:(%rsi),%rax"},
	{ZYDIS_MNEMONIC_SCASB, "scas", "%es:(%rdi),%al"},
	{ZYDIS_MNEMONIC_SCASW, "scas", "%es:(%rdi),%ax"},
	{ZYDIS_MNEMONIC_SCASD, "scas", "%es:(%rdi),%eax"},
	{ZYDIS_MNEMONIC_SCASQ, "scas", "%es:(%rdi),%rax"},
};

static int string_op(const ZydisDecodedInstruction *zi)
{
	if (zi->meta.category != ZYDIS_CATEGORY_STRINGOP || zi->address_width != 64)
		return -1;
	for (size_t i = 0; i < X86_ARRAY_SIZE(x86_string_ops); i++)
		if (x86_string_ops[i].mn == zi->mnemonic)
			return (int)i;
	return -1;
}

static char size_letter(unsigned bits)
{
	switch (bits) {
	case 8: return 'b';
	case 16: return 'w';
	case 32: return 'l';
	default: return 'q';
	}
}

/* GNU adds a size suffix when no operand gives the size: a memory
 * operand and no register (the count of a shift does not count). */
static bool needs_suffix(const ZydisDecodedInstruction *zi, const ZydisDecodedOperand *ops)
{
	bool mem = false, reg = false;
	unsigned sizing = zi->meta.category == ZYDIS_CATEGORY_SHIFT ||
				  zi->meta.category == ZYDIS_CATEGORY_ROTATE
			  ? 1
			  : zi->operand_count_visible;

	switch (zi->meta.category) {
	case ZYDIS_CATEGORY_BINARY: case ZYDIS_CATEGORY_LOGICAL: case ZYDIS_CATEGORY_SHIFT:
	case ZYDIS_CATEGORY_ROTATE: case ZYDIS_CATEGORY_DATAXFER: case ZYDIS_CATEGORY_BITBYTE:
	case ZYDIS_CATEGORY_NOP: case ZYDIS_CATEGORY_WIDENOP:
		break;
	default:
		return false;
	}
	for (unsigned i = 0; i < zi->operand_count_visible; i++) {
		mem |= ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY && ops[i].mem.type == ZYDIS_MEMOP_TYPE_MEM;
		reg |= i < sizing && ops[i].type == ZYDIS_OPERAND_TYPE_REGISTER;
	}
	return mem && (!reg || zi->mnemonic == ZYDIS_MNEMONIC_NOP);
}

static bool is_loop(const ZydisDecodedInstruction *zi)
{
	return zi->mnemonic == ZYDIS_MNEMONIC_LOOP || zi->mnemonic == ZYDIS_MNEMONIC_LOOPE ||
	       zi->mnemonic == ZYDIS_MNEMONIC_LOOPNE;
}

static void gnu_mnemonic(const ZydisDecodedInstruction *zi, const ZydisDecodedOperand *ops,
			 char *m, size_t cap)
{
	const char *name = ZydisMnemonicGetString(zi->mnemonic);
	bool moffs = zi->opcode_map == ZYDIS_OPCODE_MAP_DEFAULT && zi->opcode >= 0xa0 &&
		     zi->opcode <= 0xa3;

	for (size_t i = 0; i < X86_ARRAY_SIZE(x86_gnu_names); i++)
		if (x86_gnu_names[i].mn == zi->mnemonic)
			name = x86_gnu_names[i].gnu;
	if (zi->mnemonic == ZYDIS_MNEMONIC_MOVZX || zi->mnemonic == ZYDIS_MNEMONIC_MOVSX)
		snprintf(m, cap, "mov%c%c%c", zi->mnemonic == ZYDIS_MNEMONIC_MOVZX ? 'z' : 's',
			 size_letter(ops[1].size), size_letter(ops[0].size));
	else if (zi->mnemonic == ZYDIS_MNEMONIC_MOVSXD && ops[0].size == 64)
		snprintf(m, cap, "movslq");
	else if (zi->mnemonic == ZYDIS_MNEMONIC_MOV && (moffs || zi->raw.imm[0].size == 64))
		snprintf(m, cap, "movabs");
	else if (needs_suffix(zi, ops))
		snprintf(m, cap, "%s%c", name, size_letter(zi->operand_width));
	else if (is_loop(zi) && zi->address_width == 32)
		snprintf(m, cap, "%sl", name); /* loopl: ecx counts */
	else
		snprintf(m, cap, "%s%s", zi->meta.branch_type == ZYDIS_BRANCH_TYPE_FAR ? "l" : "",
			 name); /* lret, ljmp, lcall */
	if (zi->meta.category == ZYDIS_CATEGORY_COND_BR &&
	    (zi->attributes & (ZYDIS_ATTRIB_HAS_BRANCH_TAKEN | ZYDIS_ATTRIB_HAS_BRANCH_NOT_TAKEN)))
		strncat(m, zi->attributes & ZYDIS_ATTRIB_HAS_BRANCH_TAKEN ? ",pt" : ",pn",
			cap - strlen(m) - 1);
}

static ZyanStatus hook_mnemonic(const ZydisFormatter *f, ZydisFormatterBuffer *b,
				ZydisFormatterContext *c)
{
	char m[32];
	int str = string_op(c->instruction);

	if (is_xchg_ax(c->instruction))
		snprintf(m, sizeof(m), "xchg");
	else if (str >= 0)
		snprintf(m, sizeof(m), "%s", x86_string_ops[str].gnu);
	else
		gnu_mnemonic(c->instruction, c->operands, m, sizeof(m) - 1);
	strcat(m, MNEMONIC_END);
	return put(b, ZYDIS_TOKEN_MNEMONIC, m);
}

/* ------------------------------------------------------------------ */
/* Prefixes                                                            */

/* One legacy prefix as GNU prints it, or NULL. The attributes tell what
 * a prefix does for this instruction; one that does nothing (segment
 * overrides other than fs/gs in 64-bit mode, a second 0x66) still prints,
 * as a word, so that the text accounts for every byte. */
static const char *prefix_word(const ZydisDecodedInstruction *zi, unsigned i)
{
	ZydisInstructionAttributes a = zi->attributes;
	bool ignored = zi->raw.prefixes[i].type == ZYDIS_PREFIX_TYPE_IGNORED;
	bool jcc = zi->meta.category == ZYDIS_CATEGORY_COND_BR; /* 2e/3e: hints */

	switch (zi->raw.prefixes[i].value) {
	case 0xf0: return "lock";
	case 0xf3:
		return a & ZYDIS_ATTRIB_HAS_REPE ? "repz" : a & ZYDIS_ATTRIB_HAS_REP ? "rep"
		     : a & ZYDIS_ATTRIB_HAS_XRELEASE ? "xrelease" : ignored ? "repz" : NULL;
	case 0xf2:
		return a & ZYDIS_ATTRIB_HAS_REPNE ? "repnz" : a & ZYDIS_ATTRIB_HAS_BND ? "bnd"
		     : a & ZYDIS_ATTRIB_HAS_XACQUIRE ? "xacquire" : ignored ? "repnz" : NULL;
	case 0x3e: return a & ZYDIS_ATTRIB_HAS_NOTRACK ? "notrack" : jcc ? NULL : "ds";
	case 0x2e: return jcc ? NULL : "cs";
	case 0x26: return "es";
	case 0x36: return "ss";
	case 0x66: return ignored ? "data16" : NULL;
	case 0x67: return ignored ? "addr32" : NULL;
	default: return NULL; /* fs/gs show in the operand; REX is not spelled */
	}
}

static ZyanStatus hook_prefixes(const ZydisFormatter *f, ZydisFormatterBuffer *b,
				ZydisFormatterContext *c)
{
	for (unsigned i = 0; i < c->instruction->raw.prefix_count; i++) {
		const char *word = prefix_word(c->instruction, i);

		if (word) {
			ZYAN_CHECK(put(b, ZYDIS_TOKEN_PREFIX, word));
			ZYAN_CHECK(put(b, ZYDIS_TOKEN_WHITESPACE, " "));
		}
	}
	return ZYAN_STATUS_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* Operands                                                            */

/* GNU omits the register a multi-byte nop encodes and the implicit 1 of
 * a shift (shl %rax, not shl $1,%rax). */
static ZyanStatus hook_pre_operand(const ZydisFormatter *f, ZydisFormatterBuffer *b,
				   ZydisFormatterContext *c)
{
	const ZydisDecodedOperand *op = c->operand;

	if (c->instruction->mnemonic == ZYDIS_MNEMONIC_NOP && op->type == ZYDIS_OPERAND_TYPE_REGISTER)
		return ZYDIS_STATUS_SKIP_TOKEN;
	if (op->type == ZYDIS_OPERAND_TYPE_IMMEDIATE &&
	    op->visibility == ZYDIS_OPERAND_VISIBILITY_IMPLICIT)
		return ZYDIS_STATUS_SKIP_TOKEN;
	return ZYAN_STATUS_SUCCESS;
}

static ZyanStatus hook_reg(const ZydisFormatter *f, ZydisFormatterBuffer *b,
			   ZydisFormatterContext *c)
{
	const struct fmt_chain *chain = c->user_data;

	if (is_indirect_branch(c->instruction))
		ZYAN_CHECK(put(b, ZYDIS_TOKEN_DELIMITER, "*"));
	return chain->reg(f, b, c);
}

static int print_hex(char *s, size_t cap, int64_t v, bool is_signed)
{
	if (is_signed && v < 0)
		return snprintf(s, cap, "-0x%llx", (unsigned long long)-(uint64_t)v);
	return snprintf(s, cap, "0x%llx", (unsigned long long)v);
}

/* seg:disp(base,index,scale), GNU style: the displacement printed when
 * encoded (0x0 too), absolute addresses unsigned, only fs/gs shown. */
static ZyanStatus hook_mem(const ZydisFormatter *f, ZydisFormatterBuffer *b,
			   ZydisFormatterContext *c)
{
	const ZydisDecodedOperand *op = c->operand;
	const ZydisDecodedInstruction *zi = c->instruction;
	bool absolute = op->mem.base == ZYDIS_REGISTER_NONE && op->mem.index == ZYDIS_REGISTER_NONE;
	char s[128];
	int n = 0;

	if (is_indirect_branch(zi))
		n += snprintf(s + n, sizeof(s) - (size_t)n, "*");
	if (op->mem.segment == ZYDIS_REGISTER_FS || op->mem.segment == ZYDIS_REGISTER_GS)
		n += snprintf(s + n, sizeof(s) - (size_t)n, "%%%s:",
			      ZydisRegisterGetString(op->mem.segment));
	if (absolute || zi->raw.disp.size)
		n += print_hex(s + n, sizeof(s) - (size_t)n, op->mem.disp.value, !absolute);
	if (!absolute) {
		n += snprintf(s + n, sizeof(s) - (size_t)n, "(");
		if (op->mem.base != ZYDIS_REGISTER_NONE)
			n += snprintf(s + n, sizeof(s) - (size_t)n, "%%%s",
				      ZydisRegisterGetString(op->mem.base));
		if (op->mem.index != ZYDIS_REGISTER_NONE)
			n += snprintf(s + n, sizeof(s) - (size_t)n, ",%%%s,%u",
				      ZydisRegisterGetString(op->mem.index), op->mem.scale);
		snprintf(s + n, sizeof(s) - (size_t)n, ")");
	}
	return put(b, ZYDIS_TOKEN_DISPLACEMENT, s);
}

/* ------------------------------------------------------------------ */

static bool setup(ZydisFormatter *f, struct fmt_chain *chain)
{
	static const struct {
		ZydisFormatterProperty prop;
		ZyanUPointer value;
	} props[] = {
		{ZYDIS_FORMATTER_PROP_HEX_UPPERCASE, ZYAN_FALSE},
		{ZYDIS_FORMATTER_PROP_ADDR_PADDING_ABSOLUTE, ZYDIS_PADDING_DISABLED},
		{ZYDIS_FORMATTER_PROP_ADDR_PADDING_RELATIVE, ZYDIS_PADDING_DISABLED},
		{ZYDIS_FORMATTER_PROP_DISP_PADDING, ZYDIS_PADDING_DISABLED},
		{ZYDIS_FORMATTER_PROP_IMM_PADDING, ZYDIS_PADDING_DISABLED},
		{ZYDIS_FORMATTER_PROP_IMM_SIGNEDNESS, ZYDIS_SIGNEDNESS_UNSIGNED},
	};
	ZydisFormatterFunc mnemonic = hook_mnemonic, mem = hook_mem, prefixes = hook_prefixes,
			   pre = hook_pre_operand;
	bool ok = ZYAN_SUCCESS(ZydisFormatterInit(f, ZYDIS_FORMATTER_STYLE_ATT));

	for (size_t i = 0; i < X86_ARRAY_SIZE(props); i++)
		ok = ok && ZYAN_SUCCESS(ZydisFormatterSetProperty(f, props[i].prop, props[i].value));
	chain->reg = hook_reg;
	/* SetHook swaps: the chain receives Zydis' own functions. */
	ok = ok && ZYAN_SUCCESS(ZydisFormatterSetHook(f, ZYDIS_FORMATTER_FUNC_PRINT_MNEMONIC,
						       (const void **)&mnemonic));
	ok = ok && ZYAN_SUCCESS(ZydisFormatterSetHook(f, ZYDIS_FORMATTER_FUNC_PRE_OPERAND,
						       (const void **)&pre));
	ok = ok && ZYAN_SUCCESS(ZydisFormatterSetHook(f, ZYDIS_FORMATTER_FUNC_FORMAT_OPERAND_MEM,
						       (const void **)&mem));
	ok = ok && ZYAN_SUCCESS(ZydisFormatterSetHook(f, ZYDIS_FORMATTER_FUNC_FORMAT_OPERAND_REG,
						       (const void **)&chain->reg));
	ok = ok && ZYAN_SUCCESS(ZydisFormatterSetHook(f, ZYDIS_FORMATTER_FUNC_PRINT_PREFIXES,
						       (const void **)&prefixes));
	return ok;
}

/* Zydis' text to GNU layout: the mnemonic field (prefixes and mnemonic)
 * padded to 6 columns and a blank, then the operands with no blank
 * after their commas. */
static void layout(const char *text, const char *ops_override, char *line, size_t cap)
{
	const char *tab = strchr(text, MNEMONIC_END[0]);
	char ops[192];
	size_t n = 0;

	if (!tab) {
		snprintf(line, cap, "%s", text);
		return;
	}
	for (const char *p = tab + 1 + (tab[1] == ' '); *p && n + 1 < sizeof(ops); p++)
		if (!(p[0] == ' ' && p > text && p[-1] == ','))
			ops[n++] = *p;
	ops[n] = '\0';
	if (ops_override)
		snprintf(ops, sizeof(ops), "%s", ops_override);
	snprintf(line, cap, ops[0] ? "%-6.*s %s" : "%.*s", (int)(tab - text), text, ops);
}

/* 66 90 is xchg %ax,%ax to GNU, a nop to Zydis (and to the CPU). */
static bool is_xchg_ax(const ZydisDecodedInstruction *zi)
{
	return zi->mnemonic == ZYDIS_MNEMONIC_NOP && zi->opcode_map == ZYDIS_OPCODE_MAP_DEFAULT &&
	       zi->opcode == 0x90 && zi->operand_width == 16;
}

static const ZydisDecodedOperand *rip_operand(const struct x86_insn *x)
{
	for (unsigned i = 0; i < x->zi.operand_count_visible; i++)
		if (x->ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY &&
		    (x->ops[i].mem.base == ZYDIS_REGISTER_RIP ||
		     x->ops[i].mem.base == ZYDIS_REGISTER_EIP))
			return &x->ops[i];
	return NULL;
}

int x86_format(const uint8_t *code, size_t avail, uint64_t pc, char *buf, size_t cap)
{
	struct x86_insn x;
	struct fmt_chain chain;
	ZydisFormatter f;
	char text[256], line[320];
	const char *ops = NULL;
	const ZydisDecodedOperand *rip;
	ZyanU64 abs = 0;
	int err = x86_zdecode(code, avail, &x), n;

	if (err)
		return err;
	if (!setup(&f, &chain) ||
	    !ZYAN_SUCCESS(ZydisFormatterFormatInstruction(&f, &x.zi, x.ops,
							   x.zi.operand_count_visible, text,
							   sizeof(text), pc, &chain)))
		return -EINVAL;
	if (is_xchg_ax(&x.zi))
		ops = "%ax,%ax";
	else if (string_op(&x.zi) >= 0)
		ops = x86_string_ops[string_op(&x.zi)].ops;
	layout(text, ops, line, sizeof(line));
	rip = rip_operand(&x);
	if (rip)
		ZydisCalcAbsoluteAddress(&x.zi, rip, pc, &abs);
	n = snprintf(buf, cap, rip ? "%s        # 0x%llx" : "%s", line, (unsigned long long)abs);
	return n < 0 || (size_t)n >= cap ? -ENOSPC : n;
}
