/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the script front end (tools/nanoprobe/script/): any bytes as a
 * bpftrace program either fail to parse or type-check with an error, or
 * compile into bytecode that the agent's checker (src/agent/vm_verify.c)
 * accepts, and that then runs (as the command runs BEGIN blocks) without
 * touching memory outside its areas (ASan in the sanitizer build).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "../../tools/nanoprobe/script/compile.h"
#include "agent/vm_run.h"

static void run_blocks(const struct np_vm_prog *p)
{
	if (p->shared_bytes > (64u << 20) || p->thread_bytes > (64u << 20))
		return;
	uint8_t *shared = calloc(1, p->shared_bytes + 8), *thread = calloc(1, p->thread_bytes + 8);
	struct np_ring *ring = calloc(1, sizeof(*ring));
	unsigned char *data = calloc(1, 1u << 16);
	if (shared && thread && ring && data)
		for (uint32_t b = 0; b < p->nblocks; b++) {
			struct np_vm_site site = {.prog = p, .shared = shared, .block = b};
			np_vm_site_bind(&site);
			struct np_vm_env env = {.site = &site, .thread = thread, .ring = ring,
						.ring_data = data, .ring_bytes = 1u << 16};
			np_vm_run(&env);
			ring->tail = ring->head; /* as the command reads them */
		}
	free(shared);
	free(thread);
	free(ring);
	free(data);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	FILE *sink = fopen("/dev/null", "w");
	script_err_stream = sink;
	struct program prog = {0};
	struct compiled comp;
	struct compile_opts o = {.max_keys = 64};
	if (!script_parse(&prog, "stdin", text) && !script_check(&prog) &&
	    !script_compile(&prog, &o, &comp)) {
		char why[200];
		int rc = np_vm_verify(comp.prog, comp.prog->size, why, sizeof(why));
		if (rc)
			fprintf(stderr, "compiled program refused: %s\n", why);
		FUZZ_ASSERT(rc == 0);
		run_blocks(comp.prog);
		compiled_free(&comp);
	}
	program_free(&prog);
	if (sink)
		fclose(sink);
	script_err_stream = NULL;
	free(text);
	return 0;
}
