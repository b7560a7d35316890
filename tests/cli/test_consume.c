/* SPDX-License-Identifier: MIT */
/*
 * The command reads memory the traced program can write: records that do
 * not parse are skipped and counted, never followed. Each test writes a
 * ring by hand, the way the agent does, then with one kind of damage.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "session/consume.h"
#include "test.h"

#define NPROBES 2
#define RING_BYTES 4096

struct fixture {
	struct np_msg_hello hello;
	struct probe_set set;
	struct totals totals;
	struct consumer c;
	struct np_shm_header *shm; /* as the agent maps it */
	size_t size;
	struct np_ring *ring; /* the ring put() writes */
	unsigned char *data;
	int fd;
	/* what the consumer handed on */
	unsigned events;
	uint64_t last_num;
	char last_str[NP_STRING_MAX];
};

/* probe 0: one number; probe 1: one string */
static void make_probes(struct probe_set *set)
{
	set->n = set->cap = NPROBES;
	set->p = calloc(NPROBES, sizeof(*set->p));
	set->p[0].m.nargs = 1;
	set->p[0].m.args[0].type = NP_FT_U;
	set->p[1].m.nargs = 1;
	set->p[1].m.args[0].type = NP_FT_STRING;
}

/* A thread claims ring i, as the agent's ring_claim does: f->ring. */
static void claim(struct fixture *f, uint32_t i)
{
	f->ring = np_shm_ring(f->shm, NPROBES, f->shm->ring_stride, i);
	f->ring->state = NP_RING_OWNED;
	f->ring->tid = getpid();
	f->data = np_ring_data(f->ring, NPROBES);
}

/* Shared memory laid out as the agent lays it out, nrings rings, ring 0
 * in use. */
static void setup_rings(struct fixture *f, uint32_t nrings)
{
	memset(f, 0, sizeof(*f));
	f->hello = (struct np_msg_hello){NP_MSG_HELLO, NP_PROTO_MAGIC, NP_PROTO_VERSION,
					 NPROBES, nrings, RING_BYTES, 1, 0, 0, 0, 0};
	uint32_t stride = np_ring_stride(NPROBES, RING_BYTES);
	f->size = np_shm_size(NPROBES, nrings, stride);
	f->fd = memfd_create("test-rings", 0);
	CHECK(f->fd >= 0 && ftruncate(f->fd, (off_t)f->size) == 0);
	f->shm = mmap(NULL, f->size, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, 0);
	*f->shm = (struct np_shm_header){.magic = NP_PROTO_MAGIC, .version = NP_PROTO_VERSION,
					 .nprobes = NPROBES, .nrings = nrings,
					 .ring_bytes = RING_BYTES, .ring_stride = stride};
	claim(f, 0);
	make_probes(&f->set);
	f->totals.counts = calloc(NPROBES, sizeof(uint64_t));
	CHECK_EQ(consumer_open(&f->c, f->fd, &f->hello, &f->set, &f->totals), 0);
}

static void setup(struct fixture *f)
{
	setup_rings(f, 1);
}

static void teardown(struct fixture *f)
{
	consumer_close(&f->c);
	munmap(f->shm, f->size);
	close(f->fd);
	free(f->set.p);
	free(f->totals.counts);
}

static void on_event(const struct event *ev, void *cookie)
{
	struct fixture *f = cookie;
	f->events++;
	if (ev->probe->m.args[0].type == NP_FT_STRING) {
		memcpy(f->last_str, ev->arg[0].str, ev->arg[0].len);
		f->last_str[ev->arg[0].len] = 0;
	} else {
		f->last_num = ev->arg[0].num;
	}
}

static void drain(struct fixture *f)
{
	struct session_ops ops = {.on_event = on_event, .cookie = f};
	consumer_drain(&f->c, &ops, false);
}

#define TRUE_LEN UINT32_MAX

/* Append a record: header, then `payload` as the arguments; its len field
 * says claimed_len (TRUE_LEN: the truth). */
static void put(struct fixture *f, uint16_t probe, const void *payload, uint32_t plen,
		uint32_t claimed_len)
{
	struct np_rec rec = {.len = claimed_len != TRUE_LEN ? claimed_len
							    : (uint32_t)sizeof(rec) + plen,
			     .probe = probe, .ts = 1};
	unsigned char *at = f->data + (f->ring->head & (RING_BYTES - 1));
	memcpy(at, &rec, sizeof(rec));
	memcpy(at + sizeof(rec), payload, plen);
	f->ring->head += (sizeof(rec) + plen + 7) & ~7u;
}

static void put_number(struct fixture *f, uint64_t v)
{
	put(f, 0, &v, sizeof(v), TRUE_LEN);
}

static void put_string(struct fixture *f, const char *s, uint16_t claimed)
{
	unsigned char buf[16] = {0};
	memcpy(buf, &claimed, 2);
	memcpy(buf + 2, s, strlen(s));
	put(f, 1, buf, (2u + (uint32_t)strlen(s) + 7u) & ~7u, TRUE_LEN);
}

TEST(good_records_are_decoded_in_order)
{
	struct fixture f;
	setup(&f);
	put_number(&f, 42);
	put_string(&f, "ada", 3);
	drain(&f);
	CHECK_EQ(f.events, 2);
	CHECK_EQ(f.last_num, 42);
	CHECK_STR(f.last_str, "ada");
	CHECK_EQ(f.totals.corrupt, 0);
	CHECK_EQ(f.ring->tail, f.ring->head);
	teardown(&f);
}

TEST(a_record_naming_an_unknown_probe_is_skipped_and_the_next_read)
{
	struct fixture f;
	setup(&f);
	uint64_t v = 7;
	put(&f, 9, &v, sizeof(v), TRUE_LEN); /* probe 9 of 2 */
	put_number(&f, 43);
	drain(&f);
	CHECK_EQ(f.events, 1);
	CHECK_EQ(f.last_num, 43);
	CHECK_EQ(f.totals.corrupt, 1);
	teardown(&f);
}

TEST(a_string_longer_than_its_record_is_skipped)
{
	struct fixture f;
	setup(&f);
	put_string(&f, "ada", 200); /* says 200 bytes, the record holds 8 */
	put_number(&f, 44);
	drain(&f);
	CHECK_EQ(f.events, 1);
	CHECK_EQ(f.last_num, 44);
	CHECK_EQ(f.totals.corrupt, 1);
	teardown(&f);
}

TEST(a_length_past_the_written_bytes_drops_the_rest_of_the_ring)
{
	struct fixture f;
	setup(&f);
	uint64_t v = 5;
	put(&f, 0, &v, sizeof(v), 4000); /* claims more than was written */
	put_number(&f, 45);
	drain(&f);
	CHECK_EQ(f.events, 0);
	CHECK_EQ(f.totals.corrupt, 1);
	CHECK_EQ(f.ring->tail, f.ring->head); /* not followed, not re-read */
	teardown(&f);
}

TEST(unaligned_or_tiny_lengths_are_not_followed)
{
	static const uint32_t bad[] = {0, 4, 13};
	for (unsigned i = 0; i < 3; i++) {
		struct fixture f;
		setup(&f);
		uint64_t v = 5;
		put(&f, 0, &v, sizeof(v), bad[i]);
		drain(&f);
		CHECK_EQ(f.events, 0);
		CHECK_EQ(f.totals.corrupt, 1);
		teardown(&f);
	}
}

TEST(a_head_behind_the_tail_or_too_far_ahead_is_reset)
{
	struct fixture f;
	setup(&f);
	f.ring->tail = 100;
	f.ring->head = 50; /* behind */
	drain(&f);
	CHECK_EQ(f.totals.corrupt, 1);
	CHECK_EQ(f.ring->tail, 50);
	f.ring->head = 50 + 10 * RING_BYTES; /* more than a ring ahead */
	drain(&f);
	CHECK_EQ(f.totals.corrupt, 2);
	CHECK_EQ(f.events, 0);
	teardown(&f);
}

TEST(shared_memory_whose_header_disagrees_with_hello_is_refused)
{
	struct fixture f;
	setup(&f);
	struct np_msg_hello other = f.hello;
	struct consumer c;
	other.nprobes = NPROBES + 1;
	CHECK(consumer_open(&c, f.fd, &other, &f.set, &f.totals) != 0);
	other = f.hello;
	other.nrings = 1000; /* larger than the memory */
	CHECK(consumer_open(&c, f.fd, &other, &f.set, &f.totals) != 0);
	teardown(&f);
}

/* Pages of the memory the command holds (the memfd's allocated blocks). */
static uint64_t pages_allocated(const struct fixture *f)
{
	struct stat st;
	CHECK(fstat(f->fd, &st) == 0);
	return (uint64_t)st.st_blocks * 512 / 4096;
}

/* A counting session has 4096 rings for a program that may use one: the
 * command reads (and so allocates) none of those nobody touched. */
TEST(rings_nobody_touched_are_not_allocated_by_the_command)
{
	struct fixture f;
	setup_rings(&f, 4096);
	np_ring_counts(f.ring)[1] = 3;
	drain(&f);
	struct totals now = {.counts = calloc(NPROBES, sizeof(uint64_t))};
	consumer_totals(&f.c, &now);
	CHECK_EQ(now.counts[1], 3);
	/* the header's page, the missed counters' and ring 0's first */
	CHECK(pages_allocated(&f) <= 8);
	free(now.counts);
	teardown(&f);
}

/* The rings in use need not be the first ones: a thread claims the lowest
 * free ring, which may come after a gap, and later than the last drain. */
TEST(a_ring_claimed_past_those_in_use_is_drained_and_counted)
{
	struct fixture f;
	setup_rings(&f, 512);
	put_number(&f, 1);
	drain(&f);
	CHECK_EQ(f.events, 1);
	claim(&f, 300);
	np_ring_counts(f.ring)[0] = 7;
	put_number(&f, 300);
	claim(&f, 511); /* the last ring */
	np_ring_counts(f.ring)[0] = 11;
	put_number(&f, 511);
	drain(&f);
	CHECK_EQ(f.events, 3);
	struct totals now = {.counts = calloc(NPROBES, sizeof(uint64_t))};
	consumer_totals(&f.c, &now);
	CHECK_EQ(now.counts[0], 18);
	free(now.counts);
	teardown(&f);
}

TEST_MAIN()
