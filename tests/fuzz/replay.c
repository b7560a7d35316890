/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for libFuzzer in builds without it (gcc): run
 * LLVMFuzzerTestOneInput on every file given (or every file of every
 * directory given), then on deterministic pseudo-random mutations of them
 * (a fixed seed: a failure always reproduces). Options:
 *   -n N       mutations in all (default 3000)
 *   -s SEED    the seed (default 1)
 *   -o FILE    write each input to FILE before running it, so that the one
 *              that crashed is left there
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct input {
	uint8_t *data;
	size_t size;
};

static struct input *inputs;
static size_t ninputs, cap;
static const char *save_to;

static void add_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		exit(2);
	}
	uint8_t *data = NULL;
	size_t size = 0, room = 0;
	for (;;) {
		if (size == room) {
			room = room ? room * 2 : 4096;
			data = realloc(data, room);
			if (!data)
				abort();
		}
		size_t r = fread(data + size, 1, room - size, f);
		if (!r)
			break;
		size += r;
	}
	fclose(f);
	if (ninputs == cap) {
		cap = cap ? cap * 2 : 64;
		inputs = realloc(inputs, cap * sizeof(*inputs));
		if (!inputs)
			abort();
	}
	inputs[ninputs++] = (struct input){data, size};
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void add_path(const char *path)
{
	struct stat st;
	if (stat(path, &st)) {
		perror(path);
		exit(2);
	}
	if (!S_ISDIR(st.st_mode)) {
		add_file(path);
		return;
	}
	DIR *d = opendir(path);
	if (!d) {
		perror(path);
		exit(2);
	}
	char **names = NULL;
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		names = realloc(names, (n + 1) * sizeof(*names));
		if (!names)
			abort();
		if (asprintf(&names[n++], "%s/%s", path, e->d_name) < 0)
			abort();
	}
	closedir(d);
	qsort(names, n, sizeof(*names), by_name); /* readdir order is not stable */
	for (size_t i = 0; i < n; i++) {
		add_path(names[i]);
		free(names[i]);
	}
	free(names);
}

static uint64_t rng;

static uint64_t next(void)
{
	/* xorshift64* */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545f4914f6cdd1dull;
}

static void run(const uint8_t *data, size_t size)
{
	if (save_to) {
		FILE *f = fopen(save_to, "wb");
		if (f) {
			fwrite(data, 1, size, f);
			fclose(f);
		}
	}
	/* an exact-size copy, as libFuzzer gives */
	uint8_t *copy = malloc(size ? size : 1);
	if (!copy)
		abort();
	memcpy(copy, data, size);
	LLVMFuzzerTestOneInput(copy, size);
	free(copy);
}

static const uint8_t interesting[] = {0x00, 0x01, 0x7f, 0x80, 0xff, 0x0f, 0x40, 0x48,
				      0x66, 0x67, 0xf2, 0xf3, 0xe8, 0xe9, 0x05, 0x25,
				      '%', '$', '@', '+', '-', ':', '(', ')', ' ', '\n'};

/* One mutation of in into out (room for in.size + 64 bytes). */
static size_t mutate(const struct input *in, uint8_t *out)
{
	size_t n = in->size;
	memcpy(out, in->data, n);
	int steps = 1 + (int)(next() % 4);
	for (int s = 0; s < steps; s++) {
		size_t pos = n ? (size_t)(next() % n) : 0;
		switch (next() % 8) {
		case 0: /* flip a bit */
			if (n)
				out[pos] ^= (uint8_t)(1u << (next() % 8));
			break;
		case 1: /* random byte */
			if (n)
				out[pos] = (uint8_t)next();
			break;
		case 2: /* interesting byte */
			if (n)
				out[pos] = interesting[next() % sizeof(interesting)];
			break;
		case 3: /* delete a byte */
			if (n) {
				memmove(out + pos, out + pos + 1, n - pos - 1);
				n--;
			}
			break;
		case 4: /* insert a byte */
			if (n < in->size + 64) {
				memmove(out + pos + 1, out + pos, n - pos);
				out[pos] = interesting[next() % sizeof(interesting)];
				n++;
			}
			break;
		case 5: /* truncate */
			n = pos;
			break;
		case 6: /* duplicate a short run */
			if (n) {
				size_t len = 1 + (size_t)(next() % 8), at = (size_t)(next() % (n + 1));
				if (len > n - pos)
					len = n - pos;
				if (n + len <= in->size + 64) {
					memmove(out + at + len, out + at, n - at);
					memmove(out + at, out + (pos < at ? pos : pos + len), len);
					n += len;
				}
			}
			break;
		default: /* a 32-bit little-endian word of an edge value */
			if (n >= 4) {
				static const uint32_t words[] = {0, 1, 0x7fffffff, 0x80000000, 0xffffffff,
								 0x1000, 0xfffffff0};
				uint32_t w = words[next() % 7];
				pos = pos > n - 4 ? n - 4 : pos;
				memcpy(out + pos, &w, 4);
			}
			break;
		}
	}
	return n;
}

int main(int argc, char **argv)
{
	long mutations = 3000;
	uint64_t seed = 1;
	int opt;
	while ((opt = getopt(argc, argv, "n:s:o:")) != -1) {
		switch (opt) {
		case 'n':
			mutations = strtol(optarg, NULL, 0);
			break;
		case 's':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 'o':
			save_to = optarg;
			break;
		default:
			fprintf(stderr, "usage: %s [-n MUTATIONS] [-s SEED] [-o FILE] DIR|FILE...\n",
				argv[0]);
			return 2;
		}
	}
	for (int i = optind; i < argc; i++)
		add_path(argv[i]);
	if (!ninputs) {
		fprintf(stderr, "%s: no inputs\n", argv[0]);
		return 2;
	}
	for (size_t i = 0; i < ninputs; i++)
		run(inputs[i].data, inputs[i].size);
	rng = seed * 0x9e3779b97f4a7c15ull + 1;
	size_t maxsize = 0;
	for (size_t i = 0; i < ninputs; i++)
		if (inputs[i].size > maxsize)
			maxsize = inputs[i].size;
	uint8_t *buf = malloc(maxsize + 64);
	if (!buf)
		abort();
	for (long m = 0; m < mutations; m++) {
		const struct input *in = &inputs[next() % ninputs];
		size_t n = mutate(in, buf);
		run(buf, n);
	}
	free(buf);
	printf("%zu inputs, %ld mutations: ok\n", ninputs, mutations);
	for (size_t i = 0; i < ninputs; i++)
		free(inputs[i].data);
	free(inputs);
	return 0;
}
