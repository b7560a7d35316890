/* SPDX-License-Identifier: MIT */
/*
 * USDT probes: the static probes <sys/sdt.h> compiles into a program
 * (DTRACE_PROBE, STAP_PROBE), as `nanoprobe run` attaches to them.
 *
 * A probe site is a nop in the code and an ELF note of type 3 in
 * .note.stapsdt, owner "stapsdt", whose descriptor holds three addresses
 * (the nop, the link-time address of the .stapsdt.base section, the
 * semaphore or 0) then three strings: the provider, the name and the
 * arguments, each "SIZE@OPERAND" in the assembler's syntax
 * (src/arch/usdt.h reads them). One probe name may have many sites: a
 * macro used twice, a function inlined into several callers.
 *
 * Addresses. The note is not an allocated section, so a tool that moves a
 * file's sections after linking (prelink did, to give each library a fixed
 * address) leaves the addresses in the notes stale; it does move
 * .stapsdt.base, whose link-time address every note recorded. So both the
 * nop's and the semaphore's addresses get the difference between that
 * section's address now and the recorded one (bpftrace and bcc adjust the
 * pc so; systemtap both). For files never prelinked it is 0.
 *
 * Semaphores. A probe built with one (dtrace -G, or _SDT_HAS_SEMAPHORES)
 * runs its argument set-up and reaches its nop only while a 16-bit counter
 * in the .probes section is not zero: the tracer raises it while the probe
 * is attached and lowers it after, as the kernel does for a uprobe with a
 * reference counter. The agent does it, inside the process, when it places
 * and removes the probe (src/agent/modules.c); the command checks here that
 * the counter lies in a writable segment of the file, so that the agent
 * never writes anywhere else.
 *
 * Arguments. The block of a usdt probe reads arg0..argN as the note says:
 * a register, a constant or memory (a stack slot, a global through a
 * symbol, a field through a pointer), sign- or zero-extended to 64 bits as
 * the note's size says; bpftrace types them the same way. The symbols of
 * pc-relative operands (gs(%rip)) are resolved here to module-relative
 * addresses, checked to lie in a loadable segment.
 */
#include "usdt.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arch/usdt.h"
#include "symtab.h"

#define NT_STAPSDT 3

/* --- the notes ---------------------------------------------------------------- */

struct segs {
	GElf_Phdr *v;
	size_t n;
};

static int add_note(struct usdt_notes *out, const char *desc, size_t len, bool is64,
		    int64_t delta)
{
	size_t word = is64 ? 8 : 4, at = 3 * word;
	uint64_t addr[3];
	if (len < at + 3)
		return -EINVAL;
	for (int i = 0; i < 3; i++) {
		if (is64) {
			memcpy(&addr[i], desc + i * word, 8);
		} else {
			uint32_t a;
			memcpy(&a, desc + i * word, 4);
			addr[i] = a;
		}
	}
	const char *str[3];
	for (int i = 0; i < 3; i++) {
		const char *nul = memchr(desc + at, 0, len - at);
		if (!nul)
			return -EINVAL;
		str[i] = desc + at;
		at = (size_t)(nul - desc) + 1;
	}
	struct usdt_note *v = realloc(out->v, (out->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	out->v = v;
	struct usdt_note *n = &v[out->n];
	n->provider = strdup(str[0]);
	n->name = strdup(str[1]);
	n->args = strdup(str[2]);
	n->pc = addr[0] + (uint64_t)delta;
	n->sema = addr[2] ? addr[2] + (uint64_t)delta : 0;
	out->n++;
	if (!n->provider || !n->name || !n->args)
		return -ENOMEM;
	return 0;
}

/* The notes of one .note.stapsdt section. */
static int read_notes(Elf_Scn *scn, bool is64, int64_t delta, struct usdt_notes *out)
{
	for (Elf_Data *d = NULL; (d = elf_getdata(scn, d));) {
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off, next;
		while ((next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
			const char *base = d->d_buf;
			if (nh.n_type == NT_STAPSDT && nh.n_namesz == sizeof("stapsdt") &&
			    !memcmp(base + name_off, "stapsdt", sizeof("stapsdt"))) {
				int rc = add_note(out, base + desc_off, nh.n_descsz, is64, delta);
				if (rc)
					return rc;
			}
			off = next;
		}
	}
	return 0;
}

/* Where .stapsdt.base is now, and the section of the notes. */
static void find_sections(Elf *elf, Elf_Scn **notes, uint64_t *base)
{
	size_t shstrndx;
	*notes = NULL;
	*base = 0;
	if (elf_getshdrstrndx(elf, &shstrndx))
		return;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		const char *name;
		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		if (sh.sh_type == SHT_NOTE && !strcmp(name, ".note.stapsdt"))
			*notes = scn;
		else if (!strcmp(name, ".stapsdt.base"))
			*base = sh.sh_addr;
	}
}

/* The link-time base every note of the file recorded (the same in all). */
static uint64_t recorded_base(Elf_Scn *scn, bool is64)
{
	for (Elf_Data *d = NULL; (d = elf_getdata(scn, d));) {
		GElf_Nhdr nh;
		size_t name_off, desc_off;
		if (gelf_getnote(d, 0, &nh, &name_off, &desc_off) && nh.n_type == NT_STAPSDT &&
		    nh.n_descsz >= (is64 ? 16u : 8u)) {
			uint64_t b = 0;
			uint32_t b32;
			if (is64)
				memcpy(&b, (const char *)d->d_buf + desc_off + 8, 8);
			else
				memcpy(&b32, (const char *)d->d_buf + desc_off + 4, 4), b = b32;
			return b;
		}
	}
	return 0;
}

int usdt_notes_load(const char *path, struct usdt_notes *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	GElf_Ehdr eh;
	int rc = 0;
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh)) {
		snprintf(err, errlen, "%s: not an ELF file", path);
		rc = -ENOEXEC;
	} else {
		Elf_Scn *notes;
		uint64_t base;
		bool is64 = gelf_getclass(elf) == ELFCLASS64;
		out->machine = eh.e_machine;
		find_sections(elf, &notes, &base);
		uint64_t recorded = notes ? recorded_base(notes, is64) : 0;
		/* prelinked: the notes kept the addresses of before */
		int64_t delta = base && recorded ? (int64_t)(base - recorded) : 0;
		rc = notes ? read_notes(notes, is64, delta, out) : 0;
		if (rc)
			snprintf(err, errlen, "%s: a malformed stapsdt note", path);
	}
	if (elf)
		elf_end(elf);
	close(fd);
	if (rc)
		usdt_notes_free(out);
	return rc;
}

void usdt_notes_free(struct usdt_notes *n)
{
	for (size_t i = 0; i < n->n; i++) {
		free(n->v[i].provider);
		free(n->v[i].name);
		free(n->v[i].args);
	}
	free(n->v);
	memset(n, 0, sizeof(*n));
}

const struct np_isa *usdt_isa(int machine)
{
	switch (machine) {
	case EM_X86_64: return &np_isa_x86_64;
	case EM_AARCH64: return &np_isa_arm64;
	case EM_RISCV: return &np_isa_riscv64;
	}
	return NULL;
}

/* --- the file's segments -------------------------------------------------------- */

static int load_segs(const char *path, struct segs *s)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t n = 0;
	s->v = NULL;
	s->n = 0;
	if (fd < 0)
		return -errno;
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && elf_getphdrnum(elf, &n) == 0 && (s->v = calloc(n ? n : 1, sizeof(*s->v))))
		for (size_t i = 0; i < n; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD)
				s->v[s->n++] = ph;
		}
	if (elf)
		elf_end(elf);
	close(fd);
	return s->v ? 0 : -ENOEXEC;
}

/* [vaddr, vaddr + len) inside one loadable segment with these flags. */
static bool in_segment(const struct segs *s, uint64_t vaddr, uint64_t len, unsigned flags)
{
	for (size_t i = 0; i < s->n; i++)
		if ((s->v[i].p_flags & flags) == flags && vaddr >= s->v[i].p_vaddr &&
		    vaddr - s->v[i].p_vaddr <= s->v[i].p_memsz &&
		    len <= s->v[i].p_memsz - (vaddr - s->v[i].p_vaddr))
			return true;
	return false;
}

/* --- attach points ---------------------------------------------------------------- */

struct target {
	const char *path;
	const struct np_symtab *st;
	struct usdt_notes notes;
	struct segs segs;
	struct stat file;
	const struct np_isa *isa;
};

static bool matches(const struct usdt_spec *u, const struct usdt_note *n)
{
	return (!u->provider || !fnmatch(u->provider, n->provider, 0)) &&
	       !fnmatch(u->name, n->name, 0);
}

/* The probes a file has, for a message: "a:b, a:c, ..." */
static void list_probes(const struct usdt_notes *notes, char *buf, size_t len)
{
	size_t at = 0;
	buf[0] = 0;
	for (size_t i = 0; i < notes->n && at + 1 < len; i++) {
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++)
			seen = !strcmp(notes->v[j].provider, notes->v[i].provider) &&
			       !strcmp(notes->v[j].name, notes->v[i].name);
		if (seen)
			continue;
		int w = snprintf(buf + at, len - at, "%s%s:%s", at ? ", " : "", notes->v[i].provider,
				 notes->v[i].name);
		if (w < 0 || (size_t)w >= len - at) {
			snprintf(buf + (len > 4 ? len - 4 : 0), len > 4 ? 4 : len, "...");
			break;
		}
		at += (size_t)w;
	}
}

/* Without a provider, the name must be one provider's (bpftrace: "namespace
 * for usdt:PATH:NAME not specified, matched N probes"). */
static int check_unique(const struct usdt_spec *u, const struct target *t, char *err,
			size_t errlen)
{
	const char *first = NULL;
	if (u->provider)
		return 0;
	for (size_t i = 0; i < t->notes.n; i++) {
		const struct usdt_note *n = &t->notes.v[i];
		if (!matches(u, n))
			continue;
		if (first && strcmp(first, n->provider)) {
			snprintf(err, errlen, "'%s' is a probe of providers %s and %s in %s: name the "
					      "provider (usdt:PATH:PROVIDER:NAME, or * for every one)",
				 u->name, first, n->provider, t->path);
			return -EINVAL;
		}
		first = n->provider;
	}
	return 0;
}

_Static_assert(NP_USDT_ARGS == NP_USDT_MAX_ARGS, "the agent takes what a note may hold");

static int8_t wire_reg(int8_t reg)
{
	return reg == NP_USDT_NOREG ? NP_UA_NOREG : reg;
}

/* One argument the block reads, as the agent reads it (proto.h): the
 * ISA's parse, its symbol resolved. */
static int usdt_arg(const struct target *t, const struct usdt_note *n, const char *text,
		    size_t len, int i, struct np_usdt_loc *out, char *err, size_t errlen)
{
	struct np_usdt_span sym;
	struct np_usdt_arg a;
	const char *why;
	if (np_usdt_parse(t->isa, text, len, &a, &sym, &why)) {
		snprintf(err, errlen, "%s:%s at 0x%llx: arg%d '%.*s' cannot be read: %s",
			 n->provider, n->name, (unsigned long long)n->pc, i, (int)len, text, why);
		return -EINVAL;
	}
	*out = (struct np_usdt_loc){
		.kind = a.kind == NP_USDT_CONST ? NP_UA_CONST : a.kind == NP_USDT_REG ? NP_UA_REG
										: NP_UA_MEM,
		.size = a.size, .is_signed = a.is_signed, .scale = a.scale,
		.base = wire_reg(a.base), .index = wire_reg(a.index), .shift = a.shift,
		.disp = a.disp};
	if (!(a.flags & NP_USDT_SYMBOL))
		return 0;
	char name[256];
	uint64_t vaddr;
	snprintf(name, sizeof(name), "%.*s", (int)sym.len, text + sym.off);
	if (np_symtab_find_data(t->st, name, &vaddr)) {
		snprintf(err, errlen, "%s:%s at 0x%llx: arg%d '%.*s' is at symbol '%s', which %s "
				      "does not define (stripped?)",
			 n->provider, n->name, (unsigned long long)n->pc, i, (int)len, text, name,
			 t->path);
		return -ENOENT;
	}
	out->disp = (int64_t)(vaddr + (uint64_t)out->disp);
	out->flags = NP_UA_MODREL;
	/* the module's own data, mapped while its code runs: read directly
	 * when nothing indexes it beyond what the file says */
	if (out->index == NP_UA_NOREG && out->base == NP_UA_NOREG &&
	    in_segment(&t->segs, (uint64_t)out->disp, out->size, PF_R))
		out->flags |= NP_UA_INMODULE;
	return 0;
}

static int usdt_args(const struct target *t, const struct usdt_note *n, int want,
		     struct rprobe *r, char *err, size_t errlen)
{
	struct np_usdt_span s[NP_USDT_MAX_ARGS];
	int count = np_usdt_split(n->args, s, NP_USDT_MAX_ARGS);
	if (count < 0) {
		snprintf(err, errlen, "%s:%s at 0x%llx: more than %d arguments", n->provider, n->name,
			 (unsigned long long)n->pc, NP_USDT_MAX_ARGS);
		return -E2BIG;
	}
	if (want > count) {
		snprintf(err, errlen, "%s:%s has %d argument%s (at 0x%llx): arg%d does not exist",
			 n->provider, n->name, count, count == 1 ? "" : "s",
			 (unsigned long long)n->pc, want - 1);
		return -ERANGE;
	}
	if (want && !t->isa) {
		snprintf(err, errlen, "%s: no ISA of nanoprobe's reads its arguments (e_machine %d)",
			 t->path, t->notes.machine);
		return -EOPNOTSUPP;
	}
	for (int i = 0; i < want; i++) {
		int rc = usdt_arg(t, n, n->args + s[i].off, s[i].len, i, &r->m.usdt_args[i], err,
				  errlen);
		if (rc)
			return rc;
	}
	r->m.nusdt = (uint8_t)want;
	return 0;
}

static int add_site(struct probe_set *set, const struct usdt_spec *u, const struct target *t,
		    const struct usdt_note *n, unsigned action, char *err, size_t errlen)
{
	if (!in_segment(&t->segs, n->pc, 1, PF_X)) {
		snprintf(err, errlen, "%s:%s: its site 0x%llx is outside the code of %s", n->provider,
			 n->name, (unsigned long long)n->pc, t->path);
		return -ERANGE;
	}
	if (n->sema && (n->sema & 1 || !in_segment(&t->segs, n->sema, 2, PF_R | PF_W))) {
		snprintf(err, errlen, "%s:%s: its semaphore 0x%llx is not in a writable segment of "
				      "%s",
			 n->provider, n->name, (unsigned long long)n->sema, t->path);
		return -ERANGE;
	}
	struct rprobe *r = resolve_add_probe(set);
	if (!r)
		return -ENOMEM;
	r->m.action = (uint8_t)action;
	snprintf(r->m.path, sizeof(r->m.path), "%s", t->path);
	r->m.dev = (uint64_t)t->file.st_dev;
	r->m.ino = (uint64_t)t->file.st_ino;
	r->m.vaddr = n->pc;
	r->m.usdt = 1;
	r->m.usdt_sema = n->sema;
	const struct np_sym *fn = np_symtab_at(t->st, n->pc);
	if (fn) {
		snprintf(r->func, sizeof(r->func), "%s", fn->demangled ? fn->demangled : fn->name);
		r->m.func_vaddr = fn->addr;
		r->m.func_size = resolve_func_size(t->st, fn);
	}
	/* perf probe's names of SDT events: sdt_PROVIDER:NAME */
	snprintf(r->group, sizeof(r->group), "sdt_%s", n->provider);
	snprintf(r->event, sizeof(r->event), "%s", n->name);
	return usdt_args(t, n, u->max_arg + 1, r, err, errlen);
}

static int open_target(const struct usdt_spec *u, pid_t pid, const char *main_path,
		       struct target *t, char *path, size_t len, char *err, size_t errlen)
{
	int rc = resolve_spec_file(u->path, pid, main_path, path, len, err, errlen);
	if (rc)
		return rc;
	t->path = path;
	if (stat(path, &t->file)) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return rc;
	}
	if ((rc = resolve_table(path, &t->st, err, errlen)) ||
	    (rc = usdt_notes_load(path, &t->notes, err, errlen)))
		return rc;
	if ((rc = load_segs(path, &t->segs))) {
		snprintf(err, errlen, "%s: cannot read its program headers", path);
		return rc;
	}
	t->isa = usdt_isa(t->notes.machine);
	return 0;
}

int resolve_usdt(struct probe_set *set, const struct usdt_spec *u, pid_t pid,
		 const char *main_path, unsigned action, char *err, size_t errlen)
{
	char path[NP_PATH_MAX], have[512];
	struct target t = {0};
	int rc = open_target(u, pid, main_path, &t, path, sizeof(path), err, errlen);
	if (!rc && !t.notes.n) {
		snprintf(err, errlen, "%s has no USDT probes (no .note.stapsdt section)", path);
		rc = -ENOENT;
	}
	if (!rc)
		rc = check_unique(u, &t, err, errlen);
	size_t before = set->n;
	for (size_t i = 0; !rc && i < t.notes.n; i++)
		if (matches(u, &t.notes.v[i]))
			rc = add_site(set, u, &t, &t.notes.v[i], action, err, errlen);
	if (!rc && set->n == before) {
		list_probes(&t.notes, have, sizeof(have));
		snprintf(err, errlen, "no USDT probe '%s%s%s' in %s (it has %s)",
			 u->provider ? u->provider : "", u->provider ? ":" : "", u->name, path, have);
		rc = -ENOENT;
	}
	usdt_notes_free(&t.notes);
	free(t.segs.v);
	return rc;
}
