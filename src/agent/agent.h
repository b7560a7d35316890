/* SPDX-License-Identifier: MIT */
/* The agent's internal interfaces: session, modules, hit path. */
#ifndef NP_AGENT_H
#define NP_AGENT_H
#include <nanoprobe/nanoprobe.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/proto.h"

enum aprobe_state { AP_PENDING = 0, AP_ATTACHED, AP_FAILED };

struct aprobe {
	struct np_msg_probe m;
	struct np_probe *probe;
	struct np_watch *watch; /* NP_ACT_WATCH: instead of probe */
	uint64_t bias; /* load bias of its module once found */
	int state;     /* enum aprobe_state */
	bool reads_memory; /* a fetch dereferences: see handlers.c */
	uint32_t max_record; /* np_rec_max: the room an event reserves */
	uint64_t missed_before; /* np_probe_missed of its earlier attachments */
	uint64_t missed_told;   /* what of its misses this process added to shm's */
	bool sema_raised; /* a USDT probe's semaphore is raised (modules.c) */
};

/* One session with a command. Set up by the control path, read by
 * handlers only between the attach and the detach of their probes. */
struct agent {
	int sock;
	int wake_fd;            /* eventfd: a dlopen handler wants service */
	struct aprobe *probes;
	uint32_t nprobes;
	struct np_shm_header *shm;
	size_t shm_size;
	int shm_fd;
	uint32_t gen;           /* the last generation given (np_agent_new_gen) */
	uint32_t *gen_word;     /* the generation now, for the hit path: a new
				 * one per session and per process voids the
				 * threads' ring pointers. The engine's word
				 * that a copy of the process finds empty
				 * (core/fork.h; copy.c), else gen itself */
	int pid;                /* the process the session is with: a child of
				 * it (fork, vfork) records nothing and asks
				 * the control thread, which is not there,
				 * for nothing */
	bool copy;              /* a copy made without fork's handlers: it
				 * records, but no thread of the agent's
				 * serves it (copy.c) */
	uint32_t hist_unit;     /* ns per latency histogram unit */
	bool timed;             /* a probe reads the clock: core/clock.c calibrates */
	uint64_t hist_off;      /* a ring's histograms from its start, 0: none */
	pthread_mutex_t lock;   /* probes[].state, attach/detach */
	char why[200];          /* the engine's reason for the last refusal */
	uint64_t why_told[NP_SHM_MISS_REASONS]; /* np_missed_by already added to shm's */
	int why_level;
	bool follow;            /* HELLO: children forked stay traced */
};

extern struct agent np_agent;
/* Nonzero on a thread doing the agent's own work: its hits are not
 * recorded (handlers.c). */
extern __thread int np_agent_busy __attribute__((tls_model("initial-exec")));
/* 0 in a forked child: its probes stay, but nothing it records is read. */
extern volatile int np_agent_live;
/* This process is the one the session is with (not a fork or vfork child
 * of it): one system call, for paths taken once per thread or per dlopen. */
bool np_agent_in_session_process(void);

/* agent.c: the command has gone or asked for the end of the session;
 * long work (placing thousands of probes) stops early. */
bool np_agent_cancelled(void);
/* agent.c, for follow.c: a connection to the command (0 or -errno), the
 * session served until it ends (its probes then removed), the session's
 * socket name, and the start of a thread of the agent's. */
int np_agent_connect(const char *name);
void np_agent_serve(void);
extern char np_agent_session_name[108];
int np_agent_start_thread(void *(*fn)(void *));
/* The misses counted since the last time, added to the shared memory's
 * (modules.c); the counts now taken as told, for a new process. */
void np_agent_missed_baseline(void);

/* agent.c: the calling thread made the agent's (signals, busy). */
void np_agent_thread_setup(void);
/* A session with a command is live in this process. */
bool np_agent_session_live(void);

/* copy.c, on the hit path: a new generation of the session (0 is never
 * one); a note to the command on a connection of its own (enum
 * np_join_kind), made with raw system calls (0 or -errno), waiting for
 * room in the command's backlog or not; the first hit of a copy of the
 * process that no fork handler prepared (its generation word empty):
 * the generation the hit is to use. */
uint32_t np_agent_new_gen(void);
int np_agent_note(uint32_t kind, const char *exe, bool wait);
uint32_t np_agent_adopt_copy(void);
/* This process has a thread of the agent's that serves its session: not
 * a vfork child, not a copy (copy.c). */
bool np_agent_served(void);

/* follow.c: what a forked child does with the session it inherits; the
 * command told of every exec (internal probes on execve, execveat). */
void np_agent_forked(void);
void np_agent_hook_exec(void);
void np_agent_unhook_exec(void);
/* agent.c: this process's program, for the command's messages; a new
 * descriptor moved out of the low numbers the program counts on. */
void np_agent_exe(char *buf, size_t len);
int np_agent_fd_high(int fd);

/* modules.c: an internal probe of the agent's on the function `name` of
 * the program's (its misses not the session's); NULL with errno. */
struct np_probe *np_agent_hook(const char *name, np_handler_fn entry, np_handler_fn ret,
			       void *data);
/* modules.c: find the modules of pending probes and attach them. */
int np_agent_attach_pending(void);
int np_agent_hook_dlopen(void);
void np_agent_serve_dlopen(void);
void np_agent_unhook_dlopen(void);
void np_agent_detach_all(void);
/* Control thread, lock held: np_probe_missed of each probe into the
 * shared memory's table. */
void np_agent_publish_missed(void);
/* The same, at a tick: the probes are summed only if some miss was counted
 * since the last publish. */
void np_agent_publish_new_misses(void);

/* maskguard.c: while an injected agent's session runs, the program's
 * sigprocmask and pthread_sigmask do not block the engine's signals. */
void np_agent_guard_masks(void);
void np_agent_unguard_masks(void);

/* handlers.c */
/* The handlers of ap and the data they are given. */
void np_agent_handlers(const struct aprobe *ap, np_handler_fn *entry, np_handler_fn *ret,
		       void **data);
/* The calling thread's ring in the current session, claimed on its first
 * hit; NULL on the agent's own threads or when none is free. */
struct np_ring *np_agent_ring_self(void);
/* script_hit.c: NP_ACT_SCRIPT's handlers. */
/* A script probe's handlers and their data (script_hit.c). */
void np_agent_script_handlers(const struct aprobe *ap, np_handler_fn *entry, np_handler_fn *ret,
			      void **data);
/* NP_ACT_WATCH's handler: a record per access. */
void np_agent_on_watch(const struct np_watch_hit *hit, void *data);
#endif
