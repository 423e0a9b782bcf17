/*
 * iotrace preload shim, POSIX part: intercepts the file calls of libc
 * (open family, close, read/write family, lseek, fsync, fdatasync,
 * ftruncate, dup family, stat family, access, unlink, rename, mkdir,
 * rmdir, truncate, links, copies, mmap, fcntl, ...) and writes one
 * compact record per system call to this process's spool: a file in
 * $IOTRACE_SPOOL, mapped in shared memory, so that a record survives a
 * crash of the program the moment it is complete. Each thread writes its
 * own blocks of the file, in place: no lock, no atomic instruction, no
 * other process on the way. Where glibc makes file
 * calls of its own inside a function (stdio, directory streams, realpath,
 * euidaccess, remove, ...), the wrapper records those calls, as glibc
 * 2.36 makes them.
 *
 * Built by iotrace (capture/preload): cc -shared -fPIC -O2. Needs libc only.
 */
#define _GNU_SOURCE
#undef _FORTIFY_SOURCE
#include "shim.h"

#include <aio.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <fts.h>
#include <gnu/libc-version.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC 4
#endif

#define EXPORT __attribute__((visibility("default")))
#define TLS __thread __attribute__((tls_model("initial-exec")))

/* The spool's blocks are mapped a window at a time (1 MiB, a multiple of
 * any page size), each once per process, without populating it: a page
 * is made when the thread that owns a block first writes it. */
#define WINDOW (1 << 20)
#define BLOCKS_PER_WINDOW (WINDOW / SPOOL_BLOCK)
/* The file may hold CAPACITY blocks (64 GiB: billions of records), or as
 * many as RLIMIT_FSIZE allows. It grows as blocks are taken, by fallocate
 * (which never shrinks it, whoever calls it at once): a page the program
 * writes is then never one the file system cannot give, which would kill
 * it (SIGBUS) on a full disk. The growth is a quarter of the file, at
 * least GROW_MIN, at most a window: each is an open, a fallocate and a
 * close (~12 µs on ext4), 21 for a spool of 3 MiB (56 by sixteenths). A
 * file system without fallocate gets the file sized once, sparse, for as
 * many blocks as it takes. */
#define CAPACITY ((uint64_t)1 << 24)
#define MIN_CAPACITY ((uint64_t)1 << 12)
#define GROW_MIN (4 * SPOOL_BLOCK)
#define MAX_WINDOWS (CAPACITY / BLOCKS_PER_WINDOW + 1)
#define FDKINDS 65536

struct header {
	char magic[8];
	uint32_t version, block_size, header_size;
	uint32_t pid, ppid;
	int32_t rank, size; /* MPI rank and size, -1 until MPI_Init */
	uint32_t dropped;   /* records lost: the spool was full */
	int64_t mono_start, real_start;
	uint32_t cmdline_len;
	char cmdline[1024]; /* NUL-separated arguments */
	uint32_t cwd_len;
	char cwd[2048];
	/* The process's start (clock ticks since boot, /proc/self/stat field
	 * 22): the same in every image of a process (exec), not in another
	 * process that got the same pid. */
	uint64_t proc_start;
	/* 1: the image was started by exec (the shim's constructor made the
	 * spool); 0: a forked child's, made at its first record. */
	uint32_t execd;
	char pad[3200 - 3148];
	uint64_t blocks;   /* blocks taken */
	uint64_t capacity; /* blocks the file may hold */
	/* The shim's cost per recorded call (ns), measured at the start of
	 * the program image (calibrate): in each call's duration, between
	 * calls, half the interquartile range, calls measured (0: none). */
	uint32_t cost_in, cost_between, cost_spread, cost_samples;
	/* A plain record's wrapper's time after its call (ns, calibrate;
	 * RF_PLAIN), the RF_OVER such records carry; 0: none. */
	uint32_t cost_tail;
	char pad2[3328 - 3236];
	/* The program (/proc/self/exe), when it fits; else exe_len is 0. */
	uint32_t exe_len;
	char exe[760];
};

/* The Go reader (capture/preload/spool.go) reads these offsets. */
_Static_assert(__builtin_offsetof(struct header, mono_start) == 40, "header layout");
_Static_assert(__builtin_offsetof(struct header, cmdline_len) == 56, "header layout");
_Static_assert(__builtin_offsetof(struct header, cwd_len) == 1084, "header layout");
_Static_assert(__builtin_offsetof(struct header, proc_start) == 3136, "header layout");
_Static_assert(__builtin_offsetof(struct header, execd) == 3144, "header layout");
_Static_assert(__builtin_offsetof(struct header, blocks) == 3200, "header layout");
_Static_assert(__builtin_offsetof(struct header, capacity) == 3208, "header layout");
_Static_assert(__builtin_offsetof(struct header, cost_in) == 3216, "header layout");
_Static_assert(__builtin_offsetof(struct header, cost_tail) == 3232, "header layout");
_Static_assert(__builtin_offsetof(struct header, exe_len) == 3328, "header layout");
_Static_assert(__builtin_offsetof(struct header, exe) == 3332, "header layout");
_Static_assert(sizeof(struct header) <= SPOOL_HEADER, "header size");

struct block {
	uint16_t magic; /* BLOCK_MAGIC or SIDE_MAGIC, written last */
	uint16_t span;  /* blocks it spans */
	uint32_t tid;
	int64_t base;   /* the time base of its first record */
};
_Static_assert(sizeof(struct block) == 16, "block header");
/* A record's length, call, flags and mask (6 bytes), then at most 14
 * varints of at most 10 bytes (13 fields and RF_OVER's) and two path
 * lengths of at most 2. */
#define REC_FIXED_MAX (6 + 14 * 10 + 2 * 2)

static struct header *hdr;
static int active;
/* spool_pending: a forked child whose spool is not made yet (on_early). */
static int spool_pending;
/* record_all records the POSIX calls made inside MPI calls other than
 * MPI-IO too (IOTRACE_ALL=1, iotrace record --all). */
static int record_all;
static char *windows[MAX_WINDOWS];
static uint64_t windows_end; /* the windows mapped are below it */
static uint64_t file_end;    /* the bytes of the file allocated */
static int sparse;           /* the file was sized once, sparse (no fallocate) */
static int generation;
static uint32_t next_tid;
static unsigned char fdkind[FDKINDS]; /* 0 unknown, 1 file, 2 not a file, 3 file opened with O_APPEND */
/* fdkind_hi bounds the descriptors whose kind was ever set: fdkind[i] is 0
 * for every i >= fdkind_hi. Forgetting them all (a forked child) or a
 * range (close_range(3, ~0U)) then writes only those pages of the table:
 * clearing all 64 KiB made a forked child copy 16 pages, about 100 µs of
 * page faults on a VM, for every fork. */
static unsigned fdkind_hi;

static void kind_set(int fd, unsigned k) {
	fdkind[fd] = (unsigned char)k;
	unsigned hi = __atomic_load_n(&fdkind_hi, __ATOMIC_RELAXED);
	while (k && (unsigned)fd >= hi && !__atomic_compare_exchange_n(&fdkind_hi, &hi, (unsigned)fd + 1, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
	}
}

static TLS int t_gen = -1;
static TLS uint32_t t_tid;
static TLS int t_in; /* inside the shim: calls pass through */
static TLS int t_mpi, t_mpiio;
/* The thread's block (0: none yet) and the address of its next free
 * byte; how many records the thread is writing (more than one: a signal
 * handler's inside another's); what the next record's fields are
 * relative to: the values of the previous one in the block t_chain; and
 * the thread's side block, where a signal handler's records go while the
 * thread writes one (t_sblk, t_scur). */
static TLS uintptr_t t_blk, t_cur;
static TLS int t_depth;
static TLS uintptr_t t_chain;
static TLS int64_t t_pstart, t_poff;
static TLS int32_t t_pfd;
static TLS uintptr_t t_sblk, t_scur;
/* The end of the call of the thread's latest record and the end of the
 * wrapper that wrote it (RF_OVER). */
static TLS int64_t t_pend, t_pexit;
/* Waits for mapped pages between calls (C_PAGEIN; docs/FORMAT.md, "Waits
 * for mapped pages"): while the process has a recorded file mapping, a
 * wrapper reads the thread's resource usage at its end (fw_mark: t_fw
 * set, when, its processor time and its reads from the device) and the
 * next wrapper again at its start (fw_enter), before its call. The
 * reading's time is the shim's, in the gap (RF_OVER). A pagein found
 * waits in t_pg_* for the next record, which writes it first. */
static TLS int t_fw;
static TLS int64_t t_fw_at, t_fw_cpu;
static TLS long t_fw_maj, t_fw_blk;
static TLS int64_t t_pg_dur, t_pg_end, t_pg_cost, t_pg_bytes;
static TLS int32_t t_pg_n;
static void fw_mark(void);
static inline int fmaps_live(void);
/* cost_tail is a plain record's wrapper's time after its call (RF_PLAIN),
 * from the calibration; tail_known says it has one (until then, or where
 * the calibration could not run, plain records read the clock too). */
static uint32_t cost_tail;
static int tail_known;

EXPORT int *iotrace_mpi_depth(void) { return &t_mpi; }
EXPORT int *iotrace_mpiio_depth(void) { return &t_mpiio; }
EXPORT int iotrace_active(void) { return active; }

EXPORT int64_t iotrace_now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t real_now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* test_clock_shift is a test hook: IOTRACE_TEST_CLOCK_SHIFT (ns) moves
 * the wall clock this process reads, as if its host's clock were off by
 * that much. */
static int64_t test_clock_shift(void) {
	const char *v = getenv("IOTRACE_TEST_CLOCK_SHIFT");
	return v ? strtoll(v, NULL, 10) : 0;
}

EXPORT int64_t iotrace_clock_base(void) {
	if (hdr) return hdr->real_start - hdr->mono_start;
	return real_now() + test_clock_shift() - iotrace_now();
}

/* ---- the spool ---- */

/* sys_mmap maps without going through the shim's own mmap wrapper. */
static void *sys_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
	return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

/* The shim keeps no descriptor open in the program: a window of the
 * spool is mapped by opening its file again by name, mapping and closing
 * it. So the program's descriptors are numbered as without the shim (its
 * first open gets 3), and a program that closes every descriptor (a
 * daemon) cannot close the spool. */
static char spool_name[PATH_MAX];

/* window returns the mapping of window w, mapping it on first use. Two
 * threads (or a thread and its signal handler) may map it at once: the
 * first to publish its mapping wins, the other unmaps its own. No lock:
 * a signal handler may record. */
static char *window(uint64_t w) {
	char *p = __atomic_load_n(&windows[w], __ATOMIC_ACQUIRE);
	if (p) return p;
	int fd = (int)syscall(SYS_openat, AT_FDCWD, spool_name, O_RDWR | O_CLOEXEC);
	if (fd < 0) return NULL;
	char *m = sys_mmap(NULL, WINDOW, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)(w * WINDOW));
	syscall(SYS_close, fd);
	if (m == MAP_FAILED) return NULL;
	char *none = NULL;
	if (__atomic_compare_exchange_n(&windows[w], &none, m, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		uint64_t e = __atomic_load_n(&windows_end, __ATOMIC_RELAXED);
		while (e < w + 1 && !__atomic_compare_exchange_n(&windows_end, &e, w + 1, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
		}
		return m;
	}
	syscall(SYS_munmap, m, WINDOW);
	return none;
}

/* grow makes the file hold its first end bytes; false if it cannot. */
static int grow(uint64_t end) {
	uint64_t have = __atomic_load_n(&file_end, __ATOMIC_ACQUIRE);
	if (sparse || end <= have) return 1;
	uint64_t step = have / 4, max = SPOOL_HEADER + hdr->capacity * SPOOL_BLOCK;
	if (step < GROW_MIN) step = GROW_MIN;
	if (step > WINDOW) step = WINDOW;
	uint64_t want = have + step;
	if (want < end) want = end;
	want = (want + SPOOL_BLOCK - 1) / SPOOL_BLOCK * SPOOL_BLOCK;
	if (want > max) want = max;
	if (want < end) return 0;
	int fd = (int)syscall(SYS_openat, AT_FDCWD, spool_name, O_RDWR | O_CLOEXEC);
	if (fd < 0) return 0;
	long rc = syscall(SYS_fallocate, fd, 0, (off_t)have, (off_t)(want - have));
	syscall(SYS_close, fd);
	if (rc != 0) return 0;
	while (have < want && !__atomic_compare_exchange_n(&file_end, &have, want, 1, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
	}
	return 1;
}

/* take_blocks takes n consecutive blocks of one window for thread tid,
 * marked magic, with time base base, and returns the first's address
 * (its header written), or NULL when the spool is full. */
static char *take_blocks(uint32_t n, uint16_t magic, uint32_t tid, int64_t base) {
	for (;;) {
		uint64_t b = __atomic_fetch_add(&hdr->blocks, n, __ATOMIC_RELAXED);
		if (b + n > hdr->capacity) return NULL;
		uint64_t at = SPOOL_HEADER / SPOOL_BLOCK + b; /* in blocks from the file's start */
		if (at / BLOCKS_PER_WINDOW != (at + n - 1) / BLOCKS_PER_WINDOW) continue; /* across windows: left empty */
		if (!grow((at + n) * SPOOL_BLOCK)) return NULL;
		char *w = window(at / BLOCKS_PER_WINDOW);
		if (!w) return NULL;
		struct block *k = (struct block *)(w + (at % BLOCKS_PER_WINDOW) * SPOOL_BLOCK);
		k->span = (uint16_t)n;
		k->tid = tid;
		k->base = base;
		__atomic_store_n(&k->magic, magic, __ATOMIC_RELEASE);
		return (char *)k;
	}
}

static uint32_t my_tid(void) {
	if (t_gen != generation) {
		/* A new thread, or the thread that forked, in the child. */
		t_gen = generation;
		t_blk = t_cur = t_chain = t_sblk = t_scur = 0;
		t_depth = 0;
		if (syscall(SYS_gettid) == getpid())
			t_tid = 0;
		else
			t_tid = __atomic_add_fetch(&next_tid, 1, __ATOMIC_RELAXED);
	}
	return t_tid;
}

/* xadd adds n to the thread's t_scur and returns its value before: one
 * instruction, so that a signal handler recording between its read and
 * its write cannot take the same bytes. */
static inline uintptr_t xadd(uintptr_t n) {
#if defined(__x86_64__)
	__asm__ volatile("xaddq %0, %1" : "+r"(n), "+m"(t_scur) : : "memory");
	return n;
#else
	return __atomic_fetch_add(&t_scur, n, __ATOMIC_RELAXED);
#endif
}

static inline __attribute__((always_inline)) uint8_t *put_uv(uint8_t *p, uint64_t v) {
	if (v < 0x80) {
		*p = (uint8_t)v;
		return p + 1;
	}
	if (v < 0x4000) {
		p[0] = (uint8_t)v | 0x80;
		p[1] = (uint8_t)(v >> 7);
		return p + 2;
	}
	do {
		*p++ = (uint8_t)v | 0x80;
		v >>= 7;
	} while (v >= 0x80);
	*p++ = (uint8_t)v;
	return p;
}

static inline uint64_t zz(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

/* encode_rare writes the fields most calls do not have. */
static __attribute__((noinline)) uint8_t *encode_rare(uint8_t *p, unsigned *mask, const struct rec *r, uint32_t l1, uint32_t l2) {
	unsigned m = 0;
	if (r->bytes) m |= M_BYTES, p = put_uv(p, zz(r->bytes));
	if (r->oflags) m |= M_OFLAGS, p = put_uv(p, r->oflags);
	if (r->mode) m |= M_MODE, p = put_uv(p, r->mode);
	if (r->peer) m |= M_PEER, p = put_uv(p, zz(r->peer));
	if (r->tag) m |= M_TAG, p = put_uv(p, zz(r->tag));
	if (r->comm) m |= M_COMM, p = put_uv(p, r->comm);
	if (r->count) m |= M_COUNT, p = put_uv(p, zz(r->count));
	if (l1) m |= M_PATH, p = put_uv(p, l1);
	if (l2) m |= M_PATH2, p = put_uv(p, l2);
	*mask |= m;
	return p;
}

/* encode writes r's call, flags, mask and fields (not the paths' bytes)
 * at b + 2, relative to the previous record's pstart, pfd and poff, and
 * returns their end. */
static inline __attribute__((always_inline)) uint8_t *encode(uint8_t *b, const struct rec *r, unsigned flags, int64_t pstart, int32_t pfd, int64_t poff, uint32_t l1, uint32_t l2, uint64_t over) {
	unsigned m = 0;
	uint8_t *p = b + 6;
	if (r->start != pstart) m |= M_START, p = put_uv(p, zz(r->start - pstart));
	if (r->dur) m |= M_DUR, p = put_uv(p, (uint64_t)r->dur);
	if (r->fd != pfd) m |= M_FD, p = put_uv(p, zz(r->fd));
	if (r->off == -1) m |= M_NOOFF;
	else if (r->off) m |= M_OFF, p = put_uv(p, zz(r->off - poff));
	if (r->size) m |= M_SIZE, p = put_uv(p, zz(r->size));
	int64_t pred = r->size > 0 ? r->size : r->off > 0 ? r->off : 0;
	if (r->ret != pred) m |= M_RET, p = put_uv(p, zz(r->ret - pred));
	if (over) flags |= RF_OVER, p = put_uv(p, over);
	if (__builtin_expect((r->bytes | r->oflags | r->mode | r->peer | r->tag | r->comm | r->count | l1 | l2) != 0, 0))
		p = encode_rare(p, &m, r, l1, l2);
	b[2] = (uint8_t)r->call;
	b[3] = (uint8_t)flags;
	b[4] = (uint8_t)m;
	b[5] = (uint8_t)(m >> 8);
	return p;
}

/* paths copies the paths' bytes to p and returns their end. */
static inline uint8_t *paths(uint8_t *p, const char *p1, uint32_t l1, const char *p2, uint32_t l2) {
	if (l1) memcpy(p, p1, l1);
	if (l2) memcpy(p + l1, p2, l2);
	return p + l1 + l2;
}

/* done makes the record at d, which ends at end, complete: its length is
 * written last. */
static inline void done(uint8_t *d, uint8_t *end) {
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n((uint16_t *)d, (uint16_t)(end - d), __ATOMIC_RELEASE);
}

/* emit_side writes a record into the thread's side block: one a signal
 * handler makes while the thread writes another, or too long for a block.
 * Its fields are relative to nothing; handlers inside handlers take their
 * bytes with xadd. */
static __attribute__((noinline)) void emit_side(const struct rec *r, unsigned flags, uint32_t tid, const char *p1, uint32_t l1, const char *p2, uint32_t l2) {
	uint8_t b[REC_FIXED_MAX];
	uint32_t nfixed = (uint32_t)(encode(b, r, flags | REC_ABS, 0, 0, 0, l1, l2, 0) - b);
	uint32_t n = nfixed + l1 + l2;
	if (n > SPOOL_BLOCK - sizeof(struct block)) {
		/* Blocks of its own. */
		uint8_t *k = (uint8_t *)take_blocks((sizeof(struct block) + n + SPOOL_BLOCK - 1) / SPOOL_BLOCK, SIDE_MAGIC, tid, 0);
		if (!k) {
			__atomic_add_fetch(&hdr->dropped, 1, __ATOMIC_RELAXED);
			return;
		}
		uint8_t *d = k + sizeof(struct block);
		memcpy(d + 2, b + 2, nfixed - 2);
		done(d, paths(d + nfixed, p1, l1, p2, l2));
		return;
	}
	for (;;) {
		uintptr_t blk = t_sblk;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		if (blk) {
			uintptr_t at = xadd(n);
			if ((at & ~(uintptr_t)(SPOOL_BLOCK - 1)) == blk && at + n <= blk + SPOOL_BLOCK) {
				uint8_t *d = (uint8_t *)at;
				memcpy(d + 2, b + 2, nfixed - 2);
				done(d, paths(d + nfixed, p1, l1, p2, l2));
				return;
			}
		}
		/* A new side block. A handler that records meanwhile finds none
		 * (t_sblk 0) and takes its own, which is then left; one that
		 * comes between the two last stores leaves t_scur in its block,
		 * not t_sblk's, and the next record takes a new one. */
		char *k = take_blocks(1, SIDE_MAGIC, tid, 0);
		if (!k) {
			__atomic_add_fetch(&hdr->dropped, 1, __ATOMIC_RELAXED);
			return;
		}
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		t_sblk = 0;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		t_scur = (uintptr_t)k + sizeof(struct block);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		t_sblk = (uintptr_t)k;
	}
}

/* iotrace_emit writes r at the end of the thread's block, in place: only
 * the thread writes its block, and a signal handler's records made
 * meanwhile go to its side block. */
EXPORT void iotrace_emit(struct rec *r, const char *p, const char *p2) {
	if (!active) return;
	if (__builtin_expect(t_pg_dur > 0, 0) && t_depth == 0 && r->start >= t_pg_end) {
		/* The thread waited for mapped pages before this call: that
		 * wait's record first, in the gap it lay in. */
		struct rec pg = {0};
		pg.call = C_PAGEIN;
		pg.fd = -1;
		pg.off = -1;
		pg.start = t_pg_end - t_pg_dur;
		pg.dur = t_pg_dur;
		pg.count = t_pg_n;
		pg.size = t_pg_bytes;
		t_pg_dur = 0;
		iotrace_emit(&pg, NULL, NULL);
		t_pexit = t_pend + t_pg_cost; /* the reading after the wait: the shim's, before this call */
	}
	uint32_t l1 = p ? (uint32_t)strnlen(p, PATH_MAX - 1) : 0;
	uint32_t l2 = p2 ? (uint32_t)strnlen(p2, PATH_MAX - 1) : 0;
	uint32_t tid = my_tid();
	unsigned flags = r->flags & 0xffu; /* RF_PLAIN is not the spool's */
	if (t_mpiio > 0 && r->call < C_MPI_RANK) flags |= RF_IN_MPIIO;
	int nested = t_depth++ > 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	uint32_t need = REC_FIXED_MAX + l1 + l2;
	if (__builtin_expect(nested || need > SPOOL_BLOCK - sizeof(struct block), 0)) {
		emit_side(r, flags, tid, p, l1, p2, l2);
	} else {
		uintptr_t at = t_cur, blk = t_blk;
		int took = 0;
		if (__builtin_expect(!blk || at + need > blk + SPOOL_BLOCK, 0)) {
			took = 1;
			char *k = take_blocks(1, BLOCK_MAGIC, tid, r->start);
			if (!k) {
				__atomic_add_fetch(&hdr->dropped, 1, __ATOMIC_RELAXED);
				goto out;
			}
			t_blk = blk = (uintptr_t)k;
			at = blk + sizeof(struct block);
		}
		if (blk != t_chain) {
			t_chain = blk;
			t_pstart = ((struct block *)blk)->base;
			t_pfd = 0;
			t_poff = 0;
		}
		/* The shim's time after the thread's previous call, where this
		 * call began after it: in the gap before this one. */
		uint64_t over = 0;
		if (t_pexit > t_pend && t_pend > 0 && r->start >= t_pexit) over = (uint64_t)(t_pexit - t_pend);
		uint8_t *d = (uint8_t *)at;
		uint8_t *end = paths(encode(d, r, flags, t_pstart, t_pfd, t_poff, l1, l2, over), p, l1, p2, l2);
		done(d, end);
		t_cur = (uintptr_t)end;
		t_pstart = r->start;
		t_pfd = r->fd;
		if (r->off != -1 && r->off) t_poff = r->off;
		if (r->dur > 0 || r->start > 0) {
			t_pend = r->start + r->dur;
			/* A plain record's wrapper does the same after every call:
			 * its time is the calibration's, not a clock reading (one
			 * of a recorded call's three, ~20 ns); a record that took a
			 * block (a page's first write, the file's growth) is
			 * measured. */
			if ((r->flags & RF_PLAIN) && !took && tail_known)
				t_pexit = t_pend + cost_tail;
			else
				t_pexit = iotrace_now();
			/* A reading for the next call's wrapper while a file is
			 * mapped; none (and no stale one) otherwise. */
			if (__builtin_expect(fmaps_live() | t_fw, 0) && r->call != C_PAGEIN) {
				if (fmaps_live()) fw_mark();
				else t_fw = 0;
			}
		}
	}
out:
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t_depth--;
}

EXPORT void iotrace_set_rank(int rank, int size) {
	if (!active) return;
	hdr->rank = rank;
	hdr->size = size;
	struct rec r = {0};
	r.call = C_MPI_RANK;
	r.start = iotrace_now();
	r.peer = rank;
	r.count = size;
	iotrace_emit(&r, NULL, NULL);
}

static void read_small(const char *name, char *buf, uint32_t cap, uint32_t *len) {
	int fd = syscall(SYS_openat, AT_FDCWD, name, O_RDONLY | O_CLOEXEC);
	*len = 0;
	if (fd < 0) return;
	long n = syscall(SYS_read, fd, buf, cap);
	if (n > 0) *len = (uint32_t)n;
	syscall(SYS_close, fd);
}

/* The spool settings, read from the environment once, at the start: a
 * program may change its environment before it forks. */
static char spool_dir[PATH_MAX];

/* pool_slots: how many spool files iotrace keeps made ahead in the spool
 * directory, "pool-K" for K below it (IOTRACE_POOL; 0: none). */
static int pool_slots;

static void read_settings(void) {
	const char *dir = getenv("IOTRACE_SPOOL");
	if (!dir || !*dir || strlen(dir) >= sizeof spool_dir - 64) return;
	strcpy(spool_dir, dir);
	const char *all = getenv("IOTRACE_ALL");
	record_all = all && all[0] == '1';
	const char *pool = getenv("IOTRACE_POOL");
	int n = pool ? atoi(pool) : 0;
	pool_slots = n > 0 && n <= 1024 ? n : 0;
}

/* claim_pool gives the spool name one of the files iotrace made ahead
 * (capture/preload Pool): a rename, atomic, so one process gets each,
 * where creating the file would allocate an inode — on ext4 after many
 * deletions (the spools of the records before) a scan of the recently
 * deleted ones, a millisecond and more. It returns the file opened, or -1
 * when every slot is taken (the caller creates one). */
static int claim_pool(const char *name) {
	char src[PATH_MAX];
	unsigned start = (unsigned)getpid();
	for (int i = 0; i < pool_slots; i++) {
		int k = (int)((start + (unsigned)i) % (unsigned)pool_slots);
		if (snprintf(src, sizeof src, "%s/pool-%d", spool_dir, k) >= (int)sizeof src) return -1;
		if (syscall(SYS_renameat2, AT_FDCWD, src, AT_FDCWD, name, RENAME_NOREPLACE) == 0)
			return (int)syscall(SYS_openat, AT_FDCWD, name, O_RDWR | O_CLOEXEC);
	}
	return -1;
}

/* proc_start reads field 22 of /proc/self/stat (after the command's
 * parenthesis, which may hold anything). */
static uint64_t proc_start(void) {
	char b[1024];
	uint32_t n;
	read_small("/proc/self/stat", b, sizeof b - 1, &n);
	b[n] = 0;
	char *p = strrchr(b, ')');
	if (!p) return 0;
	for (int field = 2; *p && field < 22; p++)
		if (*p == ' ') field++;
	return strtoull(p, NULL, 10);
}

/* capacity returns how many blocks the file may hold: CAPACITY, within
 * RLIMIT_FSIZE (past which the kernel would kill the program). */
static uint64_t capacity(void) {
	struct rlimit rl;
	uint64_t cap = CAPACITY;
	if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
		uint64_t fit = rl.rlim_cur / SPOOL_BLOCK;
		cap = fit > SPOOL_HEADER / SPOOL_BLOCK ? fit - SPOOL_HEADER / SPOOL_BLOCK : 0;
		if (cap > CAPACITY) cap = CAPACITY;
	}
	return cap;
}

/* size_spool makes the file hold its header and first blocks, and returns
 * how many blocks it may hold, 0 if it cannot be made. Where the file
 * system cannot allocate (no fallocate), the file is sized once, sparse,
 * for as many as it takes (at least MIN_CAPACITY). */
static uint64_t size_spool(int fd) {
	uint64_t cap = capacity();
	if (cap < MIN_CAPACITY) return 0;
	uint64_t first = SPOOL_HEADER + GROW_MIN;
	if (syscall(SYS_fallocate, fd, 0, (off_t)0, (off_t)first) == 0) {
		file_end = first;
		return cap;
	}
	if (errno != EOPNOTSUPP && errno != ENOSYS) return 0;
	sparse = 1;
	for (; cap >= MIN_CAPACITY; cap /= 2)
		if (syscall(SYS_ftruncate, fd, (off_t)(SPOOL_HEADER + cap * SPOOL_BLOCK)) == 0) return cap;
	return 0;
}

static void calibrate(void);
static uint32_t cost_in, cost_between, cost_spread, cost_samples;

/* IOTRACE_COST carries a calibration to the images a program's processes
 * exec: "in between spread samples [tail]" (ns, ns, ns, count, ns: tail
 * where the calibration measured it, cost_tail). The first image
 * calibrates and sets it; the shell, make or git a recorded run starts,
 * which start a process for each command, then pay for the calibration
 * once, not per command (256 wrapper runs and 3 sorts each). A program
 * that clears its environment makes its descendants calibrate again. */
#define COST_ENV "IOTRACE_COST"

static int inherit_cost(void) {
	const char *v = getenv(COST_ENV);
	unsigned long in, between, spread, samples, tail;
	int k = v ? sscanf(v, "%lu %lu %lu %lu %lu", &in, &between, &spread, &samples, &tail) : 0;
	if (k < 4 || samples == 0 || in > 1000000 || between > 1000000 || spread > 1000000 || samples > 1000000) return 0;
	if (k == 5 && tail > 1000000) return 0;
	cost_in = (uint32_t)in, cost_between = (uint32_t)between;
	cost_spread = (uint32_t)spread, cost_samples = (uint32_t)samples;
	tail_known = k == 5;
	cost_tail = tail_known ? (uint32_t)tail : 0;
	return 1;
}

static void pass_cost(void) {
	char v[80];
	if (tail_known)
		snprintf(v, sizeof v, "%u %u %u %u %u", cost_in, cost_between, cost_spread, cost_samples, cost_tail);
	else
		snprintf(v, sizeof v, "%u %u %u %u", cost_in, cost_between, cost_spread, cost_samples);
	setenv(COST_ENV, v, 1);
}

/* A forked child's start (after_fork_child): its fork event's time, and
 * what the shim's handler took then, which the child's first record
 * carries with the making of its spool (open_spool). */
static int64_t fork_m0, fork_r0, fork_cost;

static void open_spool(int execd) {
	if (!spool_dir[0]) return;
	/* The image's start on the trace's timelines (its exec or fork event):
	 * before the shim's own work here, which its first record carries as
	 * its time in the gap (RF_OVER, below). A forked child's is its
	 * fork's (after_fork_child), and its first record carries the shim's
	 * work then too, as if it came right before this. */
	int64_t s0 = iotrace_now(), m0 = s0, r0 = real_now() + test_clock_shift(), extra = 0;
	if (!execd && fork_m0) {
		m0 = fork_m0, r0 = fork_r0, extra = fork_cost;
	}
	fork_m0 = 0;
	char name[PATH_MAX];
	if (snprintf(name, sizeof name, "%s/spool-%d-%lld.sp", spool_dir, (int)getpid(), (long long)iotrace_now()) >= (int)sizeof name) return;
	int fd = pool_slots ? claim_pool(name) : -1;
	if (fd < 0) fd = syscall(SYS_openat, AT_FDCWD, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) return;
	uint64_t cap = size_spool(fd);
	void *m = cap ? sys_mmap(NULL, SPOOL_HEADER, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
	syscall(SYS_close, fd);
	if (m == MAP_FAILED) {
		syscall(SYS_unlinkat, AT_FDCWD, name, 0);
		return;
	}
	hdr = m;
	strcpy(spool_name, name);
	hdr->version = SPOOL_VERSION;
	hdr->block_size = SPOOL_BLOCK;
	hdr->header_size = SPOOL_HEADER;
	hdr->capacity = cap;
	hdr->pid = getpid();
	hdr->ppid = getppid();
	hdr->rank = -1;
	hdr->size = -1;
	hdr->mono_start = m0;
	hdr->real_start = r0;
	read_small("/proc/self/cmdline", hdr->cmdline, sizeof hdr->cmdline, &hdr->cmdline_len);
	hdr->proc_start = proc_start();
	hdr->execd = (uint32_t)execd;
	long n = syscall(SYS_readlinkat, AT_FDCWD, "/proc/self/exe", hdr->exe, sizeof hdr->exe);
	hdr->exe_len = n > 0 && n < (long)sizeof hdr->exe ? (uint32_t)n : 0;
	if (syscall(SYS_getcwd, hdr->cwd, sizeof hdr->cwd) > 0) hdr->cwd_len = strnlen(hdr->cwd, sizeof hdr->cwd);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	memcpy(hdr->magic, SPOOL_MAGIC, 8); /* last: a reader sees a whole header or none */
	active = 1;
	/* Once per program: a forked child costs what its parent did, and an
	 * image its descendants exec what the first did (inherit_cost). */
	if (!cost_samples && !inherit_cost()) calibrate();
	hdr->cost_in = cost_in;
	hdr->cost_between = cost_between;
	hdr->cost_spread = cost_spread;
	hdr->cost_samples = cost_samples;
	hdr->cost_tail = tail_known ? cost_tail : 0;
	/* The shim's time since the image's start, in the gap before the
	 * first call this thread records: that record's RF_OVER. */
	t_pend = s0 - extra;
	t_pexit = iotrace_now();
}

/* The recorded file mappings (see fmaps_add). */
#define FMAPS 256
static struct { uintptr_t lo, hi; } fmaps[FMAPS];
static int fmaps_n, fmaps_full, fmaps_lock;

static inline int fmaps_live(void) {
	return (__atomic_load_n(&fmaps_n, __ATOMIC_RELAXED) | __atomic_load_n(&fmaps_full, __ATOMIC_RELAXED)) != 0;
}

/* usage reads the thread's processor time (ns) and what it read from
 * the device: its page faults that did (major) and the 512-byte blocks
 * the file systems read for it (which count the readahead a fault
 * starts, whose pages the next faults wait for without being major).
 * It returns 0 where the kernel does not tell. */
static int usage(int64_t *cpu, long *maj, long *blk) {
	struct rusage ru;
	if (syscall(SYS_getrusage, RUSAGE_THREAD, &ru) != 0) return 0;
	*cpu = ((int64_t)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000 +
	       ((int64_t)ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000;
	*maj = ru.ru_majflt;
	*blk = ru.ru_inblock;
	return 1;
}

/* fw_mark reads the thread's usage at a wrapper's end; the reading's
 * time is the wrapper's (t_pexit). */
static void fw_mark(void) {
	t_fw = usage(&t_fw_cpu, &t_fw_maj, &t_fw_blk);
	t_fw_at = t_pexit = iotrace_now();
}

/* fw_enter, at a recorded call's start when the previous wrapper read the
 * usage: if the thread read from the device since, the time it was off
 * the processor meanwhile is a wait for its mapped pages (the gap holds
 * no call of its own that could read: a call the shim does not record is
 * no file's), kept for the next record (t_pg_*). The reading's own time
 * lies in the gap: the shim's (t_pexit moves by it, or the pagein's
 * end does). */
static void fw_enter(void) {
	t_fw = 0;
	if (t_depth > 0) return;
	int64_t a = iotrace_now(), cpu = 0;
	long maj = 0, blk = 0;
	int ok = usage(&cpu, &maj, &blk);
	int64_t b = iotrace_now();
	int64_t wall = a - t_fw_at, off = wall - (cpu - t_fw_cpu);
	if (ok && (maj > t_fw_maj || blk > t_fw_blk) && off > 0 && wall > 0) {
		t_pg_dur = off < wall ? off : wall;
		t_pg_end = a;
		t_pg_cost = b - a;
		t_pg_n = (int32_t)(maj - t_fw_maj);
		t_pg_bytes = (int64_t)(blk - t_fw_blk) * 512;
	} else
		t_pexit += b - a;
}

/* fw_forget drops the thread's usage reading: the gap it began holds
 * the start of a process (fork, posix_spawn), whose run the thread may
 * sleep through (a shell's or git's wait for its command) — no wait for
 * its mapped pages, whatever it read from the device meanwhile. A wait
 * for pages in such a gap stays in its think time, as before pagein. */
static void fw_forget(void) { t_fw = 0; }

static void after_fork_child(void) {
	fmaps_lock = 0; /* the child's only thread holds no lock */
	t_fw = 0;
	t_pg_dur = 0;
	int64_t a = iotrace_now(), ra = real_now() + test_clock_shift();
	if (!active) {
		/* A child forked before it made its spool: its own fork is the
		 * start of the spool it makes. */
		if (__atomic_load_n(&spool_pending, __ATOMIC_RELAXED)) fork_m0 = a, fork_r0 = ra, fork_cost = 0;
		return;
	}
	/* The child writes its own spool: drop the parent's mappings. */
	active = 0;
	for (uint64_t w = 0; w < windows_end; w++)
		if (windows[w]) {
			syscall(SYS_munmap, windows[w], WINDOW);
			windows[w] = NULL;
		}
	syscall(SYS_munmap, hdr, SPOOL_HEADER);
	windows_end = 0;
	file_end = 0;
	sparse = 0;
	hdr = NULL;
	spool_name[0] = 0;
	next_tid = 0;
	generation++;
	/* A new process: it learns its descriptors again (the first call on
	 * one records what it is: an inherit event of the child), so that
	 * each process's events name the files they use. */
	memset(fdkind, 0, fdkind_hi);
	fdkind_hi = 0;
	/* Its spool is made when it first records (on_early): most children
	 * of a fork call exec at once, and the image they become makes its
	 * own; making one for the child was a file, its header and a
	 * calibration for nothing — a third of what the shim cost a fork
	 * and exec (20 of 66 page faults). */
	spool_pending = 1;
	fork_m0 = a, fork_r0 = ra, fork_cost = iotrace_now() - a;
}

static void shim_exit(int status, void *arg);

/* shim_start opens the spool, once. The shim's constructor runs it, but
 * the loader runs the constructors of the program's libraries first (a
 * preloaded library depends on none of them): a call one of those makes
 * (libpmem's fts_open in fio) starts the shim itself (on_early). */
static int started;

static void shim_start(void) {
	if (__atomic_exchange_n(&started, 1, __ATOMIC_ACQ_REL)) return;
	read_settings();
	open_spool(1);
	on_exit(shim_exit, NULL);
	pthread_atfork(fw_forget, NULL, after_fork_child);
}

__attribute__((constructor)) static void shim_init(void) { shim_start(); }

/* ---- helpers of the wrappers ---- */

#define REAL(name)                                                         \
	static __typeof__(name) *real_##name;                                \
	if (!real_##name) real_##name = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)

/* on says whether this call is recorded: not from inside the shim, and
 * not made by the MPI library inside an MPI call other than MPI-IO (the
 * configuration, plugins and session files of MPI_Init and
 * MPI_Finalize), unless record_all. */
static __attribute__((noinline)) int on_early(void) {
	if (!__atomic_load_n(&started, __ATOMIC_ACQUIRE) && !t_in) shim_start();
	if (!t_in && __atomic_exchange_n(&spool_pending, 0, __ATOMIC_ACQ_REL)) open_spool(0);
	return active && !t_in && (t_mpi == 0 || t_mpiio > 0 || record_all);
}
static inline int on(void) {
	if (__builtin_expect(!active, 0)) return on_early();
	return !t_in && (t_mpi == 0 || t_mpiio > 0 || record_all);
}

/* fd_type finds what fd is; with name, it records the path of a file
 * (C_NONE) and its position. */
static unsigned fd_type(int fd, int name);

/* fd_file says whether calls on fd are recorded: regular files,
 * directories and block devices (not pipes, sockets, terminals). The first call on a descriptor the shim did not see opened
 * records its path (C_NONE with the name) when it is a file. */
static int fd_file(int fd) {
	if (fd < 0) return 0;
	unsigned k = fd < FDKINDS ? fdkind[fd] : 0;
	if (k == 0) k = fd_type(fd, 1);
	return k == 1 || k == 3;
}

static unsigned fd_type(int fd, int name) {
	unsigned k;
	{
		struct stat st;
		if (syscall(SYS_fstat, fd, &st) != 0) return 0;
		k = (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode) || S_ISDIR(st.st_mode)) ? 1 : 2;
		if (k == 1) {
			int fl = syscall(SYS_fcntl, fd, F_GETFL);
			if (fl >= 0 && (fl & O_APPEND)) k = 3;
			char link[64], path[PATH_MAX];
			if (!name) goto done;
			snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
			long n = syscall(SYS_readlinkat, AT_FDCWD, link, path, sizeof path - 1);
			if (n > 0) {
				path[n] = 0;
				struct rec r = {0};
				r.call = C_NONE;
				r.fd = fd;
				r.start = iotrace_now();
				r.off = syscall(SYS_lseek, fd, 0, SEEK_CUR);
				r.oflags = fl >= 0 ? (uint32_t)fl : 0;
				long fdfl = syscall(SYS_fcntl, fd, F_GETFD);
				if (fdfl > 0 && (fdfl & FD_CLOEXEC)) r.oflags |= O_CLOEXEC;
				iotrace_emit(&r, path, NULL);
			}
		}
	done:
		if (fd < FDKINDS) kind_set(fd, k);
	}
	return k;
}

static void fd_set_kind(int fd, unsigned k) {
	if (fd >= 0 && fd < FDKINDS) kind_set(fd, k);
}

/* forget_range forgets the kinds of the descriptors a close_range
 * closed (with CLOSE_RANGE_CLOEXEC it closes none). */
static void forget_range(unsigned first, unsigned last, int fl) {
	if (fl & CLOSE_RANGE_CLOEXEC) return;
	unsigned hi = __atomic_load_n(&fdkind_hi, __ATOMIC_RELAXED);
	for (unsigned fd = first; fd < hi && fd <= last; fd++) fdkind[fd] = 0;
}

/* fd_opened types a descriptor an open returned (the open names it). */
static void fd_opened(int fd) {
	if (fd < 0 || fd >= FDKINDS) return;
	fd_type(fd, 0);
}

/* abspath makes a relative path absolute with the working directory. */
static const char *abspath(const char *p, char *buf) {
	if (!p || p[0] == '/') return p;
	long n = syscall(SYS_getcwd, buf, PATH_MAX);
	if (n <= 0) return p;
	size_t l = strnlen(buf, PATH_MAX);
	snprintf(buf + l, PATH_MAX - l, "/%s", p);
	return buf;
}

/* atpath: a path relative to dirfd (not AT_FDCWD) is recorded as it is,
 * with the descriptor, for the encoder to resolve. */
static const char *atpath(int dirfd, const char *p, char *buf, struct rec *r) {
	if (!p || p[0] == '/' || dirfd == AT_FDCWD) return abspath(p, buf);
	r->flags |= RF_PATH_AT;
	r->fd = dirfd;
	return p;
}

/* atpath2 is atpath for a call's second path: its directory descriptor
 * goes in peer. */
static const char *atpath2(int dirfd, const char *p, char *buf, struct rec *r) {
	if (!p || p[0] == '/' || dirfd == AT_FDCWD) return abspath(p, buf);
	r->flags |= RF_PATH2_AT;
	r->peer = dirfd;
	return p;
}

/* know_dir makes sure the encoder knows the directory a relative path is
 * resolved against: a directory descriptor the shim did not see opened
 * (opendir's, an inherited one) gets its name recorded (C_NONE) before
 * the call that uses it. */
static inline void know_dir(int dirfd, const char *p) {
	if (dirfd >= 0 && dirfd < FDKINDS && fdkind[dirfd] == 0 && p && p[0] != '/') fd_type(dirfd, 1);
}

#define BEGIN                                   \
	if (__builtin_expect(t_fw, 0)) fw_enter(); \
	int64_t t0 = iotrace_now();                  \
	t_in++
#define END(r)                                     \
	int saved = errno;                               \
	(r).dur = iotrace_now() - t0;                    \
	(r).start = t0;                                  \
	t_in--
#define RET(r, v) (r).ret = (v) < 0 ? -(int64_t)saved : (int64_t)(v)

static mode_t open_mode(int flags, va_list ap) {
	if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) return va_arg(ap, mode_t);
	return 0;
}

/* kio: the system calls one library call made (glibc's own, which no
 * wrapper sees): they share its time, n of them, the i-th next. */
struct kio {
	int fd;
	int64_t t0, dur, n, i;
};

/* seq_emit emits r, one of the n system calls a library call made, with
 * its share of the call's time (k: the call's time and count). */
static void seq_emit(struct kio *k, struct rec *r, const char *p, const char *p2) {
	int64_t n = k->n > 0 ? k->n : 1;
	r->start = k->t0 + k->dur * k->i / n;
	r->dur = k->dur / n;
	k->i++;
	iotrace_emit(r, p, p2);
}

/* free_fd is the descriptor an open would get now (the lowest free):
 * the number glibc's own open inside the next call gets. */
static int free_fd(void) {
	int fd = (int)syscall(SYS_openat, AT_FDCWD, "/", O_PATH | O_CLOEXEC);
	if (fd >= 0) syscall(SYS_close, fd);
	return fd;
}

/* ---- open family ---- */

#define OPEN_BODY(CALL, DIRFD, REALCALL)                              \
	if (!on()) return REALCALL;                                         \
	struct rec r = {0};                                                 \
	char buf[PATH_MAX];                                                 \
	know_dir(DIRFD, path);                                              \
	BEGIN;                                                              \
	int fd = REALCALL;                                                  \
	END(r);                                                             \
	r.call = CALL;                                                      \
	r.fd = -1;                                                          \
	const char *p = atpath(DIRFD, path, buf, &r);                       \
	r.oflags = (uint32_t)flags;                                         \
	r.mode = mode;                                                      \
	RET(r, fd);                                                         \
	t_in++;                                                             \
	fd_opened(fd);                                                      \
	t_in--;                                                             \
	iotrace_emit(&r, p, NULL);                                          \
	errno = saved;                                                      \
	return fd

EXPORT int open(const char *path, int flags, ...) {
	va_list ap;
	va_start(ap, flags);
	mode_t mode = open_mode(flags, ap);
	va_end(ap);
	REAL(open);
	OPEN_BODY(C_OPEN, AT_FDCWD, real_open(path, flags, mode));
}

EXPORT int open64(const char *path, int flags, ...) {
	va_list ap;
	va_start(ap, flags);
	mode_t mode = open_mode(flags, ap);
	va_end(ap);
	REAL(open64);
	OPEN_BODY(C_OPEN, AT_FDCWD, real_open64(path, flags, mode));
}

EXPORT int openat(int dirfd, const char *path, int flags, ...) {
	va_list ap;
	va_start(ap, flags);
	mode_t mode = open_mode(flags, ap);
	va_end(ap);
	REAL(openat);
	OPEN_BODY(C_OPENAT, dirfd, real_openat(dirfd, path, flags, mode));
}

EXPORT int openat64(int dirfd, const char *path, int flags, ...) {
	va_list ap;
	va_start(ap, flags);
	mode_t mode = open_mode(flags, ap);
	va_end(ap);
	REAL(openat64);
	OPEN_BODY(C_OPENAT, dirfd, real_openat64(dirfd, path, flags, mode));
}

EXPORT int creat(const char *path, mode_t mode) {
	int flags = O_CREAT | O_WRONLY | O_TRUNC;
	REAL(creat);
	OPEN_BODY(C_CREAT, AT_FDCWD, real_creat(path, mode));
}

EXPORT int creat64(const char *path, mode_t mode) {
	int flags = O_CREAT | O_WRONLY | O_TRUNC;
	REAL(creat64);
	OPEN_BODY(C_CREAT, AT_FDCWD, real_creat64(path, mode));
}

EXPORT int close(int fd) {
	REAL(close);
	if (!on() || fd < 0) return real_close(fd);
	t_in++;
	int file = fd_file(fd);
	t_in--;
	if (!file) {
		fd_set_kind(fd, 0);
		return real_close(fd);
	}
	struct rec r = {0};
	BEGIN;
	int rc = real_close(fd);
	END(r);
	fd_set_kind(fd, 0);
	r.call = C_CLOSE;
	r.fd = fd;
	RET(r, rc);
	iotrace_emit(&r, NULL, NULL);
	errno = saved;
	return rc;
}

/* ---- data calls ---- */

#define DATA_BODY(CALL, T, REALCALL, OFF, SIZE, COUNT, OFLAGS)           \
	if (!on() || !fd_file(fd)) return REALCALL;                         \
	struct rec r = {0};                                                  \
	BEGIN;                                                               \
	T got = REALCALL;                                                      \
	END(r);                                                              \
	r.call = CALL;                                                       \
	r.fd = fd;                                                           \
	r.off = (OFF);                                                       \
	r.size = (int64_t)(SIZE);                                            \
	r.count = (COUNT);                                                   \
	r.oflags = (OFLAGS);                                                 \
	RET(r, got);                                                           \
	if (r.off < 0 && got >= 0 && fd < FDKINDS && fdkind[fd] == 3) {        \
		t_in++;                                                          \
		off_t e = syscall(SYS_lseek, fd, 0, SEEK_CUR);                    \
		t_in--;                                                          \
		if (e >= 0) r.off = e - got;                                       \
	} else                                                               \
		r.flags = RF_PLAIN;                                              \
	iotrace_emit(&r, NULL, NULL);                                        \
	errno = saved;                                                       \
	return got

/* calibrate measures what the shim costs a recorded call (docs/FORMAT.md,
 * "The recorder's cost"), on the path of a read's wrapper (DATA_BODY)
 * with no call in it, records written to a block of the thread that is
 * then cleared (a block never written, which readers skip): cost_in is
 * the duration such a call records (a clock reading), cost_between what
 * the wrapper costs that no record measures, from the end of one
 * wrapper (its RF_OVER reading) to the next call's start: the rest of
 * its time between calls each record measures (RF_OVER), whatever the
 * call (a relative path's getcwd, a long path's copy). The iotrace
 * encoder takes both out of the times. Then the same path as a plain
 * record's (RF_PLAIN: no reading at the wrapper's end) gives cost_tail,
 * the time from a call's end to the next call's start less
 * cost_between: what a plain record's wrapper takes after its call. */
#define CAL_N 256
static int cmp64(const void *a, const void *b) {
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* cal_loop runs the read wrapper's path n+1 times with no call in it,
 * its records marked flags, and keeps, from the second, each call's
 * duration, the time from the previous wrapper's end (t_pexit) to its
 * start, and the period from the previous call's start; it returns how
 * many it kept. */
static int cal_loop(int n, unsigned flags, int64_t *in, int64_t *pre, int64_t *per) {
	int64_t prev = 0, pexit = 0;
	int k = 0;
	for (int i = 0; i <= n; i++) {
		int fd = 0;
		if (!on()) break;
		volatile unsigned kind = fdkind[fd];
		(void)kind;
		struct rec r = {0};
		BEGIN;
		END(r);
		r.call = C_READ;
		r.flags = (uint16_t)flags;
		r.fd = fd;
		r.off = -1;
		r.size = 4096;
		RET(r, 4096);
		iotrace_emit(&r, NULL, NULL);
		errno = saved;
		if (i > 0) {
			in[k] = r.dur;
			pre[k] = t0 - pexit;
			per[k++] = t0 - prev;
		}
		prev = t0;
		pexit = t_pexit;
	}
	return k;
}

static void calibrate(void) {
	static int64_t in[CAL_N], per[CAL_N], pre[CAL_N];
	int n = cal_loop(CAL_N, 0, in, pre, per);
	uintptr_t blk = t_blk;
	if (n >= CAL_N / 2) {
		qsort(in, n, sizeof in[0], cmp64);
		qsort(per, n, sizeof per[0], cmp64);
		qsort(pre, n, sizeof pre[0], cmp64);
		int64_t ci = in[n / 2], cb = pre[n / 2];
		cost_in = ci > 0 ? (uint32_t)ci : 0;
		cost_between = cb > 0 ? (uint32_t)cb : 0;
		cost_spread = (uint32_t)((per[n * 3 / 4] - per[n / 4]) / 2);
		cost_samples = (uint32_t)n;
		if (blk) {
			/* The plain path, its records in the same block, from its
			 * start: no reading at a wrapper's end (tail 0 meanwhile),
			 * so pre is the time from a call's end to the next's
			 * start. */
			memset((void *)(blk + sizeof(struct block)), 0, SPOOL_BLOCK - sizeof(struct block));
			t_cur = blk + sizeof(struct block);
			t_chain = 0;
			t_pend = t_pexit = 0;
			cost_tail = 0;
			tail_known = 1;
			int m = cal_loop(CAL_N / 2, RF_PLAIN, in, pre, per);
			if (m >= CAL_N / 4 && t_blk == blk) {
				qsort(pre, m, sizeof pre[0], cmp64);
				int64_t ct = pre[m / 2] - cb;
				cost_tail = ct > 0 ? (uint32_t)ct : 0;
			} else
				tail_known = 0;
		}
		pass_cost();
	}
	if (blk && blk != t_blk) memset((void *)blk, 0, SPOOL_BLOCK);
	if (t_blk) {
		memset((void *)t_blk, 0, SPOOL_BLOCK);
		t_blk = t_cur = t_chain = 0;
	}
	t_pend = t_pexit = 0;
}

static int64_t iovsize(const struct iovec *iov, int cnt) {
	int64_t s = 0;
	for (int i = 0; i < cnt && iov; i++) s += iov[i].iov_len;
	return s;
}

EXPORT ssize_t read(int fd, void *b, size_t n) {
	REAL(read);
	DATA_BODY(C_READ, ssize_t, real_read(fd, b, n), -1, n, 0, 0);
}
EXPORT ssize_t write(int fd, const void *b, size_t n) {
	REAL(write);
	DATA_BODY(C_WRITE, ssize_t, real_write(fd, b, n), -1, n, 0, 0);
}
EXPORT ssize_t pread(int fd, void *b, size_t n, off_t off) {
	REAL(pread);
	DATA_BODY(C_PREAD, ssize_t, real_pread(fd, b, n, off), off, n, 0, 0);
}
EXPORT ssize_t pread64(int fd, void *b, size_t n, off64_t off) {
	REAL(pread64);
	DATA_BODY(C_PREAD, ssize_t, real_pread64(fd, b, n, off), off, n, 0, 0);
}
EXPORT ssize_t pwrite(int fd, const void *b, size_t n, off_t off) {
	REAL(pwrite);
	DATA_BODY(C_PWRITE, ssize_t, real_pwrite(fd, b, n, off), off, n, 0, 0);
}
EXPORT ssize_t pwrite64(int fd, const void *b, size_t n, off64_t off) {
	REAL(pwrite64);
	DATA_BODY(C_PWRITE, ssize_t, real_pwrite64(fd, b, n, off), off, n, 0, 0);
}
EXPORT ssize_t readv(int fd, const struct iovec *iov, int cnt) {
	REAL(readv);
	DATA_BODY(C_READV, ssize_t, real_readv(fd, iov, cnt), -1, iovsize(iov, cnt), cnt, 0);
}
EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt) {
	REAL(writev);
	DATA_BODY(C_WRITEV, ssize_t, real_writev(fd, iov, cnt), -1, iovsize(iov, cnt), cnt, 0);
}
EXPORT ssize_t preadv(int fd, const struct iovec *iov, int cnt, off_t off) {
	REAL(preadv);
	DATA_BODY(C_PREADV, ssize_t, real_preadv(fd, iov, cnt, off), off, iovsize(iov, cnt), cnt, 0);
}
EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int cnt, off64_t off) {
	REAL(preadv64);
	DATA_BODY(C_PREADV, ssize_t, real_preadv64(fd, iov, cnt, off), off, iovsize(iov, cnt), cnt, 0);
}
EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off) {
	REAL(pwritev);
	DATA_BODY(C_PWRITEV, ssize_t, real_pwritev(fd, iov, cnt, off), off, iovsize(iov, cnt), cnt, 0);
}
EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off64_t off) {
	REAL(pwritev64);
	DATA_BODY(C_PWRITEV, ssize_t, real_pwritev64(fd, iov, cnt, off), off, iovsize(iov, cnt), cnt, 0);
}
EXPORT ssize_t preadv2(int fd, const struct iovec *iov, int cnt, off_t off, int fl) {
	REAL(preadv2);
	DATA_BODY(C_PREADV2, ssize_t, real_preadv2(fd, iov, cnt, off, fl), off, iovsize(iov, cnt), cnt, (uint32_t)fl);
}
EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int fl) {
	REAL(pwritev2);
	DATA_BODY(C_PWRITEV2, ssize_t, real_pwritev2(fd, iov, cnt, off, fl), off, iovsize(iov, cnt), cnt, (uint32_t)fl);
}
/* What a program built with _FILE_OFFSET_BITS=64 calls for preadv2 and
 * pwritev2 (Python's os.preadv and os.pwritev, for one). */
EXPORT ssize_t preadv64v2(int fd, const struct iovec *iov, int cnt, off64_t off, int fl) {
	REAL(preadv64v2);
	DATA_BODY(C_PREADV2, ssize_t, real_preadv64v2(fd, iov, cnt, off, fl), off, iovsize(iov, cnt), cnt, (uint32_t)fl);
}
EXPORT ssize_t pwritev64v2(int fd, const struct iovec *iov, int cnt, off64_t off, int fl) {
	REAL(pwritev64v2);
	DATA_BODY(C_PWRITEV2, ssize_t, real_pwritev64v2(fd, iov, cnt, off, fl), off, iovsize(iov, cnt), cnt, (uint32_t)fl);
}

#define FD_BODY(CALL, T, REALCALL, OFF, SIZE, OFLAGS)                    \
	if (!on() || !fd_file(fd)) return REALCALL;                         \
	struct rec r = {0};                                                  \
	BEGIN;                                                               \
	T v = REALCALL;                                                      \
	END(r);                                                              \
	r.call = CALL;                                                       \
	r.fd = fd;                                                           \
	r.off = (OFF);                                                       \
	r.size = (SIZE);                                                     \
	r.oflags = (OFLAGS);                                                 \
	r.flags = RF_PLAIN;                                                  \
	RET(r, v);                                                           \
	iotrace_emit(&r, NULL, NULL);                                        \
	errno = saved;                                                       \
	return v

EXPORT off_t lseek(int fd, off_t off, int whence) {
	REAL(lseek);
	FD_BODY(C_LSEEK, off_t, real_lseek(fd, off, whence), off, 0, (uint32_t)whence);
}
EXPORT off64_t lseek64(int fd, off64_t off, int whence) {
	REAL(lseek64);
	FD_BODY(C_LSEEK, off64_t, real_lseek64(fd, off, whence), off, 0, (uint32_t)whence);
}
EXPORT int fsync(int fd) {
	REAL(fsync);
	FD_BODY(C_FSYNC, int, real_fsync(fd), 0, 0, 0);
}
EXPORT int fdatasync(int fd) {
	REAL(fdatasync);
	FD_BODY(C_FDATASYNC, int, real_fdatasync(fd), 0, 0, 0);
}
EXPORT int ftruncate(int fd, off_t len) {
	REAL(ftruncate);
	FD_BODY(C_FTRUNCATE, int, real_ftruncate(fd, len), 0, len, 0);
}
EXPORT int ftruncate64(int fd, off64_t len) {
	REAL(ftruncate64);
	FD_BODY(C_FTRUNCATE, int, real_ftruncate64(fd, len), 0, len, 0);
}

/* dup family: recorded when the source is a file, or when the target
 * was one (dup2 of a pipe onto a file's descriptor: the file is no longer
 * named by it); the new descriptor takes the source's kind. */
#define DUP_BODY(CALL, REALCALL, NEWFD)                                  \
	if (!on()) return REALCALL;                                          \
	int file = fd_file(fd);                                              \
	int target = (NEWFD) >= 0 && (NEWFD) != fd && fd_file(NEWFD);        \
	unsigned kind = fd >= 0 && fd < FDKINDS ? fdkind[fd] : 0;            \
	struct rec r = {0};                                                  \
	BEGIN;                                                               \
	int v = REALCALL;                                                    \
	END(r);                                                              \
	if (v >= 0 && v != fd) fd_set_kind(v, kind);                         \
	if (file || target) {                                                \
		r.call = CALL;                                                   \
		r.fd = fd;                                                       \
		r.size = (NEWFD);                                                \
		RET(r, v);                                                       \
		iotrace_emit(&r, NULL, NULL);                                    \
	}                                                                    \
	errno = saved;                                                       \
	return v

EXPORT int dup(int fd) {
	REAL(dup);
	DUP_BODY(C_DUP, real_dup(fd), -1);
}
EXPORT int dup2(int fd, int nfd) {
	REAL(dup2);
	DUP_BODY(C_DUP2, real_dup2(fd, nfd), nfd);
}
EXPORT int dup3(int fd, int nfd, int fl) {
	REAL(dup3);
	DUP_BODY(C_DUP3, real_dup3(fd, nfd, fl), nfd);
}

/* ---- metadata ---- */

#define PATH_BODY2(CALL, T, REALCALL, DIRFD, PATH, DIRFD2, PATH2, OFLAGS, MODE, SIZE) \
	if (!on()) return REALCALL;                                              \
	struct rec r = {0};                                                      \
	char buf[PATH_MAX], buf2[PATH_MAX];                                      \
	know_dir(DIRFD, PATH);                                                   \
	know_dir(DIRFD2, PATH2);                                                 \
	BEGIN;                                                                   \
	T v = REALCALL;                                                          \
	END(r);                                                                  \
	r.call = CALL;                                                           \
	r.fd = -1;                                                               \
	const char *p = atpath(DIRFD, PATH, buf, &r);                            \
	const char *p2 = atpath2(DIRFD2, PATH2, buf2, &r);                       \
	r.oflags = (OFLAGS);                                                     \
	r.mode = (MODE);                                                         \
	r.size = (SIZE);                                                         \
	RET(r, v);                                                               \
	iotrace_emit(&r, p, p2);                                                 \
	errno = saved;                                                           \
	return v

#define PATH_BODY(CALL, T, REALCALL, DIRFD, PATH, PATH2, OFLAGS, MODE, SIZE) \
	PATH_BODY2(CALL, T, REALCALL, DIRFD, PATH, AT_FDCWD, PATH2, OFLAGS, MODE, SIZE)

/* A stat record's size: one more than the size of the regular file a
 * stat that succeeded found, 0 for anything else (the stats the shim
 * makes up for a library's internal calls carry 0). The encoder records
 * it as trace.SizeSeen, so a replay prepares a file the program only
 * looked at with its size. */
static int64_t st_size(int v, const struct stat *st) {
	return v == 0 && st && S_ISREG(st->st_mode) && st->st_size >= 0 ? (int64_t)st->st_size + 1 : 0;
}
static int64_t st_size64(int v, const struct stat64 *st) {
	return v == 0 && st && S_ISREG(st->st_mode) && st->st_size >= 0 ? (int64_t)st->st_size + 1 : 0;
}
static int64_t stx_size(int v, const struct statx *st) {
	return v == 0 && st && (st->stx_mask & (STATX_TYPE | STATX_SIZE)) == (STATX_TYPE | STATX_SIZE) && S_ISREG(st->stx_mode) &&
	               st->stx_size < (uint64_t)INT64_MAX
	           ? (int64_t)st->stx_size + 1
	           : 0;
}

EXPORT int stat(const char *path, struct stat *st) {
	REAL(stat);
	PATH_BODY(C_STAT, int, real_stat(path, st), AT_FDCWD, path, NULL, 0, 0, st_size(v, st));
}
EXPORT int stat64(const char *path, struct stat64 *st) {
	REAL(stat64);
	PATH_BODY(C_STAT, int, real_stat64(path, st), AT_FDCWD, path, NULL, 0, 0, st_size64(v, st));
}
EXPORT int lstat(const char *path, struct stat *st) {
	REAL(lstat);
	PATH_BODY(C_LSTAT, int, real_lstat(path, st), AT_FDCWD, path, NULL, 0, 0, st_size(v, st));
}
EXPORT int lstat64(const char *path, struct stat64 *st) {
	REAL(lstat64);
	PATH_BODY(C_LSTAT, int, real_lstat64(path, st), AT_FDCWD, path, NULL, 0, 0, st_size64(v, st));
}
EXPORT int fstatat(int dirfd, const char *path, struct stat *st, int fl) {
	REAL(fstatat);
	PATH_BODY(C_FSTATAT, int, real_fstatat(dirfd, path, st, fl), dirfd, path, NULL, (uint32_t)fl, 0, st_size(v, st));
}
EXPORT int fstatat64(int dirfd, const char *path, struct stat64 *st, int fl) {
	REAL(fstatat64);
	PATH_BODY(C_FSTATAT, int, real_fstatat64(dirfd, path, st, fl), dirfd, path, NULL, (uint32_t)fl, 0, st_size64(v, st));
}
EXPORT int statx(int dirfd, const char *path, int fl, unsigned mask, struct statx *st) {
	REAL(statx);
	PATH_BODY(C_STATX, int, real_statx(dirfd, path, fl, mask, st), dirfd, path, NULL, (uint32_t)fl, mask, stx_size(v, st));
}
EXPORT int access(const char *path, int mode) {
	REAL(access);
	PATH_BODY(C_ACCESS, int, real_access(path, mode), AT_FDCWD, path, NULL, 0, (uint32_t)mode, 0);
}
EXPORT int unlink(const char *path) {
	REAL(unlink);
	PATH_BODY(C_UNLINK, int, real_unlink(path), AT_FDCWD, path, NULL, 0, 0, 0);
}
EXPORT int unlinkat(int dirfd, const char *path, int fl) {
	REAL(unlinkat);
	PATH_BODY(C_UNLINKAT, int, real_unlinkat(dirfd, path, fl), dirfd, path, NULL, (uint32_t)fl, 0, 0);
}
/* moved_size is, as st_size is for a stat, one more than the size of the
 * regular file a rename or link is about to move or link, 0 for anything
 * else: looked at before the call (after it the name may be gone), so
 * that a file a program only renames or links is prepared with its size
 * (find -exec mv). A raw system call: no stat of the shim's own is
 * recorded. */
static int64_t moved_size(int dirfd, const char *path, int follow) {
	struct stat st;
	if (!path || !*path || syscall(SYS_newfstatat, dirfd, path, &st, follow ? 0 : AT_SYMLINK_NOFOLLOW) != 0) return 0;
	return S_ISREG(st.st_mode) && st.st_size >= 0 ? (int64_t)st.st_size + 1 : 0;
}

EXPORT int rename(const char *a, const char *b) {
	REAL(rename);
	int64_t sz = on() ? moved_size(AT_FDCWD, a, 0) : 0;
	PATH_BODY(C_RENAME, int, real_rename(a, b), AT_FDCWD, a, b, 0, 0, sz);
}
EXPORT int renameat(int da, const char *a, int db, const char *b) {
	REAL(renameat);
	int64_t sz = on() ? moved_size(da, a, 0) : 0;
	PATH_BODY2(C_RENAMEAT, int, real_renameat(da, a, db, b), da, a, db, b, 0, 0, sz);
}
EXPORT int renameat2(int da, const char *a, int db, const char *b, unsigned fl) {
	REAL(renameat2);
	int64_t sz = on() ? moved_size(da, a, 0) : 0;
	PATH_BODY2(C_RENAMEAT2, int, real_renameat2(da, a, db, b, fl), da, a, db, b, fl, 0, sz);
}
EXPORT int mkdir(const char *path, mode_t mode) {
	REAL(mkdir);
	PATH_BODY(C_MKDIR, int, real_mkdir(path, mode), AT_FDCWD, path, NULL, 0, mode, 0);
}
EXPORT int mkdirat(int dirfd, const char *path, mode_t mode) {
	REAL(mkdirat);
	PATH_BODY(C_MKDIRAT, int, real_mkdirat(dirfd, path, mode), dirfd, path, NULL, 0, mode, 0);
}
EXPORT int rmdir(const char *path) {
	REAL(rmdir);
	PATH_BODY(C_RMDIR, int, real_rmdir(path), AT_FDCWD, path, NULL, 0, 0, 0);
}
EXPORT int truncate(const char *path, off_t len) {
	REAL(truncate);
	PATH_BODY(C_TRUNCATE, int, real_truncate(path, len), AT_FDCWD, path, NULL, 0, 0, len);
}
EXPORT int truncate64(const char *path, off64_t len) {
	REAL(truncate64);
	PATH_BODY(C_TRUNCATE, int, real_truncate64(path, len), AT_FDCWD, path, NULL, 0, 0, len);
}

EXPORT int fstat(int fd, struct stat *st) {
	REAL(fstat);
	FD_BODY(C_FSTAT, int, real_fstat(fd, st), 0, st_size(v, st), 0);
}
EXPORT int fstat64(int fd, struct stat64 *st) {
	REAL(fstat64);
	FD_BODY(C_FSTAT, int, real_fstat64(fd, st), 0, st_size64(v, st), 0);
}

/* The stat entry points of binaries built against glibc before 2.33. */
int __xstat(int, const char *, struct stat *);
int __lxstat(int, const char *, struct stat *);
int __fxstat(int, int, struct stat *);
int __xstat64(int, const char *, struct stat64 *);
int __lxstat64(int, const char *, struct stat64 *);
int __fxstat64(int, int, struct stat64 *);

EXPORT int __xstat(int ver, const char *path, struct stat *st) {
	REAL(__xstat);
	PATH_BODY(C_STAT, int, real___xstat(ver, path, st), AT_FDCWD, path, NULL, 0, 0, st_size(v, st));
}
EXPORT int __xstat64(int ver, const char *path, struct stat64 *st) {
	REAL(__xstat64);
	PATH_BODY(C_STAT, int, real___xstat64(ver, path, st), AT_FDCWD, path, NULL, 0, 0, st_size64(v, st));
}
EXPORT int __lxstat(int ver, const char *path, struct stat *st) {
	REAL(__lxstat);
	PATH_BODY(C_LSTAT, int, real___lxstat(ver, path, st), AT_FDCWD, path, NULL, 0, 0, st_size(v, st));
}
EXPORT int __lxstat64(int ver, const char *path, struct stat64 *st) {
	REAL(__lxstat64);
	PATH_BODY(C_LSTAT, int, real___lxstat64(ver, path, st), AT_FDCWD, path, NULL, 0, 0, st_size64(v, st));
}
EXPORT int __fxstat(int ver, int fd, struct stat *st) {
	REAL(__fxstat);
	FD_BODY(C_FSTAT, int, real___fxstat(ver, fd, st), 0, st_size(v, st), 0);
}
EXPORT int __fxstat64(int ver, int fd, struct stat64 *st) {
	REAL(__fxstat64);
	FD_BODY(C_FSTAT, int, real___fxstat64(ver, fd, st), 0, st_size64(v, st), 0);
}

/* fstatat of binaries built against glibc before 2.33. */
int __fxstatat(int, int, const char *, struct stat *, int);
int __fxstatat64(int, int, const char *, struct stat64 *, int);

EXPORT int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int fl) {
	REAL(__fxstatat);
	PATH_BODY(C_FSTATAT, int, real___fxstatat(ver, dirfd, path, st, fl), dirfd, path, NULL, (uint32_t)fl, 0, st_size(v, st));
}
EXPORT int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int fl) {
	REAL(__fxstatat64);
	PATH_BODY(C_FSTATAT, int, real___fxstatat64(ver, dirfd, path, st, fl), dirfd, path, NULL, (uint32_t)fl, 0, st_size64(v, st));
}

/* faccessat is one system call (faccessat2 with flags). */
EXPORT int faccessat(int dirfd, const char *path, int mode, int fl) {
	REAL(faccessat);
	PATH_BODY(C_ACCESS, int, real_faccessat(dirfd, path, mode, fl), dirfd, path, NULL, (uint32_t)fl, (uint32_t)mode, 0);
}

/* ---- calls glibc makes of its own inside a library function ----
 *
 * Each is recorded as the system calls glibc makes for it (glibc 2.36's
 * code: the calls, their order and their arguments), with their results
 * where the function's result and errno tell them, or made again by the
 * shim where they do not. */

/* euidaccess (eaccess): stat, then (not F_OK) access when the process's
 * real and effective ids are the same; else glibc decides from the stat
 * alone. The first case is made here, through the shim's own stat64 and
 * access (so each is recorded as it was made); the second is glibc's,
 * recorded as its one stat. */
#define EUIDACCESS_BODY(REALCALL)                                        \
	if (!on()) return REALCALL;                                          \
	if (getuid() == geteuid() && getgid() == getegid()) {                \
		struct stat64 st;                                                \
		if (stat64(path, &st) != 0) return -1;                           \
		mode &= X_OK | W_OK | R_OK;                                      \
		if (mode == F_OK) return 0;                                      \
		return access(path, mode);                                       \
	}                                                                    \
	PATH_BODY(C_STAT, int, REALCALL, AT_FDCWD, path, NULL, 0, 0, 0)

EXPORT int euidaccess(const char *path, int mode) {
	REAL(euidaccess);
	EUIDACCESS_BODY(real_euidaccess(path, mode));
}
EXPORT int eaccess(const char *path, int mode) {
	REAL(eaccess);
	EUIDACCESS_BODY(real_eaccess(path, mode));
}

/* glibc_before(major, minor): the C library running is older. */
static int glibc_before(int major, int minor) {
	static int ver;
	if (!ver) {
		const char *v = gnu_get_libc_version();
		int a = 0, b = 0;
		if (!v || sscanf(v, "%d.%d", &a, &b) != 2) a = 2, b = 36;
		ver = a * 1000 + b;
	}
	return ver < major * 1000 + minor;
}

/* fchmodat with AT_SYMLINK_NOFOLLOW (and lchmod, which is that): the
 * kernel's fchmodat has no flags, so glibc before 2.39 opens the file
 * (O_PATH | O_NOFOLLOW), fstatats it (a symbolic link: EOPNOTSUPP),
 * chmods /proc/self/fd/N and closes it. Which of these it made follows
 * from the result: an error of the open (ENOENT, EACCES, ...) ends it
 * there. */
static int opath_open_failed(int err) {
	switch (err) {
	case ENOENT: case ENOTDIR: case EACCES: case ELOOP: case ENAMETOOLONG:
	case EMFILE: case ENFILE: case EBADF: case ENOMEM: case EINVAL:
		return 1;
	}
	return 0;
}

#define CHMOD_NOFOLLOW_BODY(REALCALL, DIRFD)                             \
	if (!on() || !(fl & AT_SYMLINK_NOFOLLOW) || !glibc_before(2, 39)) return REALCALL; \
	char buf[PATH_MAX];                                                  \
	know_dir(DIRFD, path);                                               \
	int fd = free_fd();                                                  \
	int64_t t0 = iotrace_now();                                          \
	t_in++;                                                              \
	int v = REALCALL;                                                    \
	int saved = errno;                                                   \
	int64_t dur = iotrace_now() - t0;                                    \
	t_in--;                                                              \
	int opened = v == 0 || !opath_open_failed(saved);                    \
	struct kio k = {fd, t0, dur, opened ? 3 : 1, 0};                     \
	struct rec r = {0};                                                  \
	r.call = C_OPENAT;                                                   \
	r.fd = -1;                                                           \
	r.oflags = O_PATH | O_NOFOLLOW | O_CLOEXEC;                          \
	r.ret = opened ? fd : -(int64_t)saved;                               \
	const char *p = atpath(DIRFD, path, buf, &r);                        \
	if (opened) fd_set_kind(fd, 0);                                      \
	seq_emit(&k, &r, p, NULL);                                           \
	if (opened) {                                                        \
		struct rec s = {0};                                              \
		s.call = C_FSTAT; /* fstatat(fd, "", AT_EMPTY_PATH) */           \
		s.fd = fd;                                                       \
		seq_emit(&k, &s, NULL, NULL);                                    \
		struct rec c = {0};                                              \
		c.call = C_CLOSE;                                                \
		c.fd = fd;                                                       \
		seq_emit(&k, &c, NULL, NULL);                                    \
	}                                                                    \
	errno = saved;                                                       \
	return v

EXPORT int fchmodat(int dirfd, const char *path, mode_t mode, int fl) {
	REAL(fchmodat);
	CHMOD_NOFOLLOW_BODY(real_fchmodat(dirfd, path, mode, fl), dirfd);
}
EXPORT int lchmod(const char *path, mode_t mode) {
	REAL(lchmod);
	int fl = AT_SYMLINK_NOFOLLOW;
	CHMOD_NOFOLLOW_BODY(real_lchmod(path, mode), AT_FDCWD);
}

/* remove: unlink, and rmdir when that failed with EISDIR (glibc's own
 * calls): made here, through the shim's unlink and rmdir. */
EXPORT int remove(const char *path) {
	REAL(remove);
	if (!on()) return real_remove(path);
	if (unlink(path) == 0) return 0;
	if (errno != EISDIR) return -1;
	return rmdir(path) == 0 ? 0 : -1;
}

/* mkdtemp: mkdir(name, 0700) of names it makes up until one is new:
 * recorded as the mkdir that made it (or failed otherwise; the names
 * that existed already are not seen). */
EXPORT char *mkdtemp(char *tmpl) {
	REAL(mkdtemp);
	if (!on()) return real_mkdtemp(tmpl);
	struct rec r = {0};
	char buf[PATH_MAX];
	BEGIN;
	char *d = real_mkdtemp(tmpl);
	END(r);
	r.call = C_MKDIR;
	r.fd = -1;
	r.mode = 0700;
	r.ret = d ? 0 : -(int64_t)saved;
	if (d || saved != EINVAL) iotrace_emit(&r, abspath(tmpl, buf), NULL); /* EINVAL: a bad template, no call */
	errno = saved;
	return d;
}

/* realpath (canonicalize_file_name, __realpath_chk) resolves a name one
 * component at a time: readlink of each (EINVAL: not a link; a link's
 * target takes the rest of the name's place), and, where the rest of
 * the name needs a directory ("x/", "x/."), faccessat(name/, F_OK,
 * AT_EACCESS) of what is resolved so far; it stops at the first other
 * error. The shim walks the name again as glibc did, with its own
 * readlinks, to record those calls and their results. A relative name
 * starts from the working directory (not itself resolved). */
static int dir_suffix_needed(const char *end) {
	while (*end == '/') {
		while (*end == '/') end++;
		switch (*end++) {
		case '\0': return 1;
		case '.': break;
		default: return 0;
		}
		if (!*end || (*end == '.' && (!end[1] || end[1] == '/'))) return 1;
	}
	return 0;
}

#define RP_MAX (2 * PATH_MAX)

struct rp_bufs {
	char rname[RP_MAX + 2], extra[RP_MAX], link[1024];
};

static void realpath_walk(const char *name, int64_t t0, int64_t dur, struct rp_bufs *b);

static void realpath_calls(const char *name, int64_t t0, int64_t dur) {
	if (!name || !name[0]) return;
	struct rp_bufs *b = malloc(sizeof *b);
	if (!b) return;
	realpath_walk(name, t0, dur, b);
	free(b);
}

static void realpath_walk(const char *name, int64_t t0, int64_t dur, struct rp_bufs *b) {
	char *rname = b->rname, *extra = b->extra, *link = b->link;
	size_t dl;
	if (name[0] != '/') {
		if (syscall(SYS_getcwd, rname, RP_MAX) <= 0) return;
		dl = strnlen(rname, RP_MAX);
	} else {
		rname[0] = '/';
		dl = 1;
	}
	int ncomp = 1;
	for (const char *c = name; *c; c++)
		if (*c == '/') ncomp++;
	struct kio k = {-1, t0, dur, ncomp, 0};
	int links = 0;
	const char *start = name, *end;
	for (; *start; start = end) {
		while (*start == '/') start++;
		for (end = start; *end && *end != '/'; end++) {
		}
		size_t len = (size_t)(end - start);
		if (len == 0) break;
		if (len == 1 && start[0] == '.') continue;
		if (len == 2 && start[0] == '.' && start[1] == '.') {
			if (dl > 1)
				for (dl--; dl > 0 && rname[dl - 1] != '/'; dl--) {
				}
			continue;
		}
		if (rname[dl - 1] != '/') rname[dl++] = '/';
		if (dl + len + 2 > RP_MAX) return;
		memcpy(rname + dl, start, len);
		dl += len;
		rname[dl] = 0;
		long n = syscall(SYS_readlinkat, AT_FDCWD, rname, link, sizeof b->link - 1);
		int err = n < 0 ? errno : 0;
		if (k.i >= k.n) k.n = k.i + 1;
		struct rec r = {0};
		r.call = C_READLINK;
		r.fd = -1;
		r.size = sizeof b->link - 1;
		r.ret = n >= 0 ? n : -(int64_t)err;
		seq_emit(&k, &r, rname, NULL);
		if (n >= 0) {
			if (++links > 40 || n >= (long)sizeof b->link - 1) return; /* ELOOP; a longer link: glibc reads it again, bigger */
			size_t rest = strlen(end);
			if ((size_t)n + rest + 1 > sizeof b->extra) return;
			memmove(extra + n, end, rest + 1);
			memcpy(extra, link, (size_t)n);
			end = extra;
			if (link[0] == '/') {
				dl = 1;
			} else if (dl > 1) {
				for (dl--; dl > 0 && rname[dl - 1] != '/'; dl--) {
				}
			}
			if (k.i >= k.n) k.n = k.i + 1;
		} else if (dir_suffix_needed(end)) {
			rname[dl] = '/';
			rname[dl + 1] = 0;
			long a = syscall(SYS_faccessat2, AT_FDCWD, rname, F_OK, AT_EACCESS);
			int aerr = a < 0 ? errno : 0;
			if (k.i >= k.n) k.n = k.i + 1;
			struct rec s = {0};
			s.call = C_ACCESS;
			s.fd = -1;
			s.oflags = AT_EACCESS;
			s.ret = a < 0 ? -(int64_t)aerr : 0;
			seq_emit(&k, &s, rname, NULL);
			rname[dl] = 0;
			if (a < 0) return;
		} else if (err != EINVAL) {
			return;
		}
	}
}

#define REALPATH_BODY(T, REALCALL)                                       \
	if (!on()) return REALCALL;                                          \
	int64_t t0 = iotrace_now();                                          \
	t_in++;                                                              \
	T v = REALCALL;                                                      \
	int saved = errno;                                                   \
	int64_t dur = iotrace_now() - t0;                                    \
	realpath_calls(name, t0, dur);                                       \
	t_in--;                                                              \
	errno = saved;                                                       \
	return v

char *__realpath_chk(const char *, char *, size_t);

EXPORT char *realpath(const char *name, char *resolved) {
	REAL(realpath);
	REALPATH_BODY(char *, real_realpath(name, resolved));
}
EXPORT char *canonicalize_file_name(const char *name) {
	REAL(canonicalize_file_name);
	REALPATH_BODY(char *, real_canonicalize_file_name(name));
}
EXPORT char *__realpath_chk(const char *name, char *resolved, size_t rlen) {
	REAL(__realpath_chk);
	REALPATH_BODY(char *, real___realpath_chk(name, resolved, rlen));
}

/* ---- _FORTIFY_SOURCE entry points ----
 *
 * Programs built with _FORTIFY_SOURCE (Debian's are) call these instead
 * of the plain functions; each checks its buffer and does the plain
 * call, here recorded as that call. */

int __open_2(const char *, int);
int __open64_2(const char *, int);
int __openat_2(int, const char *, int);
int __openat64_2(int, const char *, int);
ssize_t __read_chk(int, void *, size_t, size_t);
ssize_t __pread_chk(int, void *, size_t, off_t, size_t);
ssize_t __pread64_chk(int, void *, size_t, off64_t, size_t);
ssize_t __readlink_chk(const char *, char *, size_t, size_t);
ssize_t __readlinkat_chk(int, const char *, char *, size_t, size_t);

EXPORT int __open_2(const char *path, int flags) {
	mode_t mode = 0;
	REAL(__open_2);
	OPEN_BODY(C_OPEN, AT_FDCWD, real___open_2(path, flags));
}
EXPORT int __open64_2(const char *path, int flags) {
	mode_t mode = 0;
	REAL(__open64_2);
	OPEN_BODY(C_OPEN, AT_FDCWD, real___open64_2(path, flags));
}
EXPORT int __openat_2(int dirfd, const char *path, int flags) {
	mode_t mode = 0;
	REAL(__openat_2);
	OPEN_BODY(C_OPENAT, dirfd, real___openat_2(dirfd, path, flags));
}
EXPORT int __openat64_2(int dirfd, const char *path, int flags) {
	mode_t mode = 0;
	REAL(__openat64_2);
	OPEN_BODY(C_OPENAT, dirfd, real___openat64_2(dirfd, path, flags));
}
EXPORT ssize_t __read_chk(int fd, void *b, size_t n, size_t blen) {
	REAL(__read_chk);
	DATA_BODY(C_READ, ssize_t, real___read_chk(fd, b, n, blen), -1, n, 0, 0);
}
EXPORT ssize_t __pread_chk(int fd, void *b, size_t n, off_t off, size_t blen) {
	REAL(__pread_chk);
	DATA_BODY(C_PREAD, ssize_t, real___pread_chk(fd, b, n, off, blen), off, n, 0, 0);
}
EXPORT ssize_t __pread64_chk(int fd, void *b, size_t n, off64_t off, size_t blen) {
	REAL(__pread64_chk);
	DATA_BODY(C_PREAD, ssize_t, real___pread64_chk(fd, b, n, off, blen), off, n, 0, 0);
}

/* ---- links ---- */

EXPORT int link(const char *a, const char *b) {
	REAL(link);
	int64_t sz = on() ? moved_size(AT_FDCWD, a, 0) : 0;
	PATH_BODY(C_LINK, int, real_link(a, b), AT_FDCWD, a, b, 0, 0, sz);
}
/* linkat with AT_EMPTY_PATH and an empty old name links the file open on
 * olddirfd: no path, fd = olddirfd (RF_PATH_AT marks it). */
EXPORT int linkat(int da, const char *a, int db, const char *b, int fl) {
	REAL(linkat);
	int64_t sz = on() ? moved_size(da, a, fl & AT_SYMLINK_FOLLOW) : 0;
	PATH_BODY2(C_LINKAT, int, real_linkat(da, a, db, b, fl), da, a, db, b, (uint32_t)fl, 0, sz);
}
/* symlink: the path is the link made, the second path its target exactly
 * as written (a target is not resolved: it is the link's content). */
#define SYMLINK_BODY(CALL, REALCALL, DIRFD)                              \
	if (!on()) return REALCALL;                                          \
	struct rec r = {0};                                                  \
	char buf[PATH_MAX];                                                  \
	know_dir(DIRFD, lp);                                                 \
	BEGIN;                                                               \
	int v = REALCALL;                                                    \
	END(r);                                                              \
	r.call = CALL;                                                       \
	r.fd = -1;                                                           \
	const char *p = atpath(DIRFD, lp, buf, &r);                          \
	RET(r, v);                                                           \
	iotrace_emit(&r, p, target);                                         \
	errno = saved;                                                       \
	return v

EXPORT int symlink(const char *target, const char *lp) {
	REAL(symlink);
	SYMLINK_BODY(C_SYMLINK, real_symlink(target, lp), AT_FDCWD);
}
EXPORT int symlinkat(const char *target, int dirfd, const char *lp) {
	REAL(symlinkat);
	SYMLINK_BODY(C_SYMLINKAT, real_symlinkat(target, dirfd, lp), dirfd);
}
EXPORT ssize_t readlink(const char *path, char *b, size_t n) {
	REAL(readlink);
	PATH_BODY(C_READLINK, ssize_t, real_readlink(path, b, n), AT_FDCWD, path, NULL, 0, 0, (int64_t)n);
}
EXPORT ssize_t readlinkat(int dirfd, const char *path, char *b, size_t n) {
	REAL(readlinkat);
	PATH_BODY(C_READLINKAT, ssize_t, real_readlinkat(dirfd, path, b, n), dirfd, path, NULL, 0, 0, (int64_t)n);
}
EXPORT ssize_t __readlink_chk(const char *path, char *b, size_t n, size_t blen) {
	REAL(__readlink_chk);
	PATH_BODY(C_READLINK, ssize_t, real___readlink_chk(path, b, n, blen), AT_FDCWD, path, NULL, 0, 0, (int64_t)n);
}
EXPORT ssize_t __readlinkat_chk(int dirfd, const char *path, char *b, size_t n, size_t blen) {
	REAL(__readlinkat_chk);
	PATH_BODY(C_READLINKAT, ssize_t, real___readlinkat_chk(dirfd, path, b, n, blen), dirfd, path, NULL, 0, 0, (int64_t)n);
}

/* ---- copies between descriptors ----
 *
 * Recorded when either side is a file: fd reads, peer writes. An offset
 * the call gave (oflags 1 in, 2 out) is recorded as it was before the
 * call; for a side without one, the position it read or wrote at, from
 * the position after the call (for an O_APPEND file: the end it wrote
 * at). A side that is not a file has offset -1. */

#define COPY_IN_AT 1u
#define COPY_OUT_AT 2u

static int64_t pos_before(int fd, int file, int64_t moved) {
	if (!file) return -1;
	int64_t p = syscall(SYS_lseek, fd, 0, SEEK_CUR);
	return p < 0 ? -1 : p - moved;
}

#define COPY_BODY(CALL, REALCALL, IN, OFFIN, OUT, OFFOUT, LEN)           \
	if (!on()) return REALCALL;                                          \
	int fin = fd_file(IN), fout = fd_file(OUT);                          \
	if (!fin && !fout) return REALCALL;                                  \
	int64_t oi = (OFFIN) ? (int64_t) * (OFFIN) : -1;                     \
	int64_t oo = (OFFOUT) ? (int64_t) * (OFFOUT) : -1;                   \
	struct rec r = {0};                                                  \
	BEGIN;                                                               \
	ssize_t v = REALCALL;                                                \
	END(r);                                                              \
	int64_t moved = v > 0 ? v : 0;                                       \
	r.call = CALL;                                                       \
	r.fd = IN;                                                           \
	r.peer = OUT;                                                        \
	r.size = (int64_t)(LEN);                                             \
	r.oflags = ((OFFIN) ? COPY_IN_AT : 0) | ((OFFOUT) ? COPY_OUT_AT : 0); \
	r.off = (OFFIN) ? oi : pos_before(IN, fin, moved);                   \
	r.bytes = (OFFOUT) ? oo : pos_before(OUT, fout, moved);              \
	RET(r, v);                                                           \
	iotrace_emit(&r, NULL, NULL);                                        \
	errno = saved;                                                       \
	return v

EXPORT ssize_t copy_file_range(int in, off64_t *offin, int out, off64_t *offout, size_t len, unsigned fl) {
	REAL(copy_file_range);
	COPY_BODY(C_COPY_FILE_RANGE, real_copy_file_range(in, offin, out, offout, len, fl), in, offin, out, offout, len);
}
EXPORT ssize_t splice(int in, loff_t *offin, int out, loff_t *offout, size_t len, unsigned fl) {
	REAL(splice);
	COPY_BODY(C_SPLICE, real_splice(in, offin, out, offout, len, fl), in, offin, out, offout, len);
}
EXPORT ssize_t sendfile(int out, int in, off_t *off, size_t n) {
	REAL(sendfile);
	off_t *none = NULL;
	COPY_BODY(C_SENDFILE, real_sendfile(out, in, off, n), in, off, out, none, n);
}
EXPORT ssize_t sendfile64(int out, int in, off64_t *off, size_t n) {
	REAL(sendfile64);
	off64_t *none = NULL;
	COPY_BODY(C_SENDFILE, real_sendfile64(out, in, off, n), in, off, out, none, n);
}

/* ---- space, advice, sync, mappings ---- */

EXPORT int fallocate(int fd, int mode, off_t off, off_t len) {
	REAL(fallocate);
	FD_BODY(C_FALLOCATE, int, real_fallocate(fd, mode, off, len), off, len, (uint32_t)mode);
}
EXPORT int fallocate64(int fd, int mode, off64_t off, off64_t len) {
	REAL(fallocate64);
	FD_BODY(C_FALLOCATE, int, real_fallocate64(fd, mode, off, len), off, len, (uint32_t)mode);
}

/* posix_fadvise and posix_fallocate return the error number itself. */
#define ERRNUM_BODY(CALL, REALCALL, OFF, SIZE, OFLAGS)                   \
	if (!on() || !fd_file(fd)) return REALCALL;                         \
	struct rec r = {0};                                                  \
	BEGIN;                                                               \
	int rc = REALCALL;                                                   \
	END(r);                                                              \
	r.call = CALL;                                                       \
	r.fd = fd;                                                           \
	r.off = (OFF);                                                       \
	r.size = (SIZE);                                                     \
	r.oflags = (OFLAGS);                                                 \
	r.ret = -(int64_t)rc;                                                \
	iotrace_emit(&r, NULL, NULL);                                        \
	errno = saved;                                                       \
	return rc

EXPORT int posix_fadvise(int fd, off_t off, off_t len, int advice) {
	REAL(posix_fadvise);
	ERRNUM_BODY(C_FADVISE, real_posix_fadvise(fd, off, len, advice), off, len, (uint32_t)advice);
}
EXPORT int posix_fadvise64(int fd, off64_t off, off64_t len, int advice) {
	REAL(posix_fadvise64);
	ERRNUM_BODY(C_FADVISE, real_posix_fadvise64(fd, off, len, advice), off, len, (uint32_t)advice);
}
/* posix_fallocate is fallocate(fd, 0, off, len) for the kernel (glibc
 * writes zeros itself where the file system cannot: not seen). */
EXPORT int posix_fallocate(int fd, off_t off, off_t len) {
	REAL(posix_fallocate);
	ERRNUM_BODY(C_FALLOCATE, real_posix_fallocate(fd, off, len), off, len, 0);
}
EXPORT int posix_fallocate64(int fd, off64_t off, off64_t len) {
	REAL(posix_fallocate64);
	ERRNUM_BODY(C_FALLOCATE, real_posix_fallocate64(fd, off, len), off, len, 0);
}
EXPORT int syncfs(int fd) {
	REAL(syncfs);
	FD_BODY(C_SYNCFS, int, real_syncfs(fd), 0, 0, 0);
}
EXPORT void sync(void) {
	REAL(sync);
	if (!on()) {
		real_sync();
		return;
	}
	struct rec r = {0};
	BEGIN;
	real_sync();
	END(r);
	r.call = C_SYNC;
	r.fd = -1;
	iotrace_emit(&r, NULL, NULL);
	errno = saved;
}

/* The address ranges of the file mappings the shim recorded, so that
 * munmap, which programs call by the thousand on anonymous memory, is
 * recorded only when it may end one (the encoder knows the mappings
 * exactly: this is a filter). A fork copies it with the memory. Beyond
 * FMAPS entries every munmap is recorded. (Declared above, for fork.) */

static void fmaps_lock_take(void) {
	while (__atomic_exchange_n(&fmaps_lock, 1, __ATOMIC_ACQUIRE)) sched_yield();
}
static void fmaps_lock_drop(void) { __atomic_store_n(&fmaps_lock, 0, __ATOMIC_RELEASE); }

static void fmaps_add(void *m, size_t len) {
	fmaps_lock_take();
	if (fmaps_n < FMAPS) {
		fmaps[fmaps_n].lo = (uintptr_t)m;
		fmaps[fmaps_n].hi = (uintptr_t)m + len;
		__atomic_store_n(&fmaps_n, fmaps_n + 1, __ATOMIC_RELEASE);
	} else {
		__atomic_store_n(&fmaps_full, 1, __ATOMIC_RELEASE);
	}
	fmaps_lock_drop();
}

/* fmaps_hit says whether [a, a+len) meets a recorded mapping; with drop,
 * it forgets the mappings the range covers whole. */
static int fmaps_hit(void *a, size_t len, int drop) {
	if (__atomic_load_n(&fmaps_n, __ATOMIC_ACQUIRE) == 0) return __atomic_load_n(&fmaps_full, __ATOMIC_ACQUIRE);
	uintptr_t lo = (uintptr_t)a, hi = lo + len;
	int hit = 0;
	fmaps_lock_take();
	for (int i = 0; i < fmaps_n; i++) {
		if (fmaps[i].hi <= lo || fmaps[i].lo >= hi) continue;
		hit = 1;
		if (drop && fmaps[i].lo >= lo && fmaps[i].hi <= hi) {
			fmaps[i] = fmaps[fmaps_n - 1];
			__atomic_store_n(&fmaps_n, fmaps_n - 1, __ATOMIC_RELEASE);
			i--;
		}
	}
	fmaps_lock_drop();
	return hit || __atomic_load_n(&fmaps_full, __ATOMIC_ACQUIRE);
}

/* mmap of a file (not anonymous memory): ret 0 or -errno, not the
 * address (which bytes holds, for munmap and msync). A mapping an MPI library makes inside an MPI-IO call (Open
 * MPI's shared file pointer segment) is its own machinery, which the
 * replay's MPI-IO call makes again and a script cannot say: recorded only
 * with record_all. */
#define MMAP_BODY(REALCALL)                                              \
	if (fd < 0 || (fl & MAP_ANONYMOUS) || !on() || (t_mpiio > 0 && !record_all) || !fd_file(fd)) return REALCALL; \
	struct rec r = {0};                                                  \
	BEGIN;                                                               \
	void *m = REALCALL;                                                  \
	END(r);                                                              \
	r.call = C_MMAP;                                                     \
	r.fd = fd;                                                           \
	r.off = off;                                                         \
	r.size = (int64_t)len;                                               \
	r.oflags = (uint32_t)fl;                                             \
	r.mode = (uint32_t)prot;                                             \
	r.ret = m == MAP_FAILED ? -(int64_t)saved : 0;                       \
	if (m != MAP_FAILED) {                                               \
		r.bytes = (int64_t)(uintptr_t)m;                                 \
		fmaps_add(m, len);                                               \
	}                                                                    \
	iotrace_emit(&r, NULL, NULL);                                        \
	errno = saved;                                                       \
	return m

EXPORT void *mmap(void *a, size_t len, int prot, int fl, int fd, off_t off) {
	REAL(mmap);
	MMAP_BODY(real_mmap(a, len, prot, fl, fd, off));
}
EXPORT void *mmap64(void *a, size_t len, int prot, int fl, int fd, off64_t off) {
	REAL(mmap64);
	MMAP_BODY(real_mmap64(a, len, prot, fl, fd, off));
}

/* munmap and msync of a recorded mapping: the address and length; the
 * encoder finds the file. A range the shim's table does not meet runs
 * unrecorded. */
EXPORT int munmap(void *a, size_t len) {
	REAL(munmap);
	if (!on() || !fmaps_hit(a, len, 0)) return real_munmap(a, len);
	struct rec r = {0};
	BEGIN;
	int v = real_munmap(a, len);
	END(r);
	if (v == 0) fmaps_hit(a, len, 1);
	r.call = C_MUNMAP;
	r.fd = -1;
	r.off = (int64_t)(uintptr_t)a;
	r.size = (int64_t)len;
	RET(r, v);
	iotrace_emit(&r, NULL, NULL);
	errno = saved;
	return v;
}
EXPORT int msync(void *a, size_t len, int flags) {
	REAL(msync);
	if (!on() || !fmaps_hit(a, len, 0)) return real_msync(a, len, flags);
	struct rec r = {0};
	BEGIN;
	int v = real_msync(a, len, flags);
	END(r);
	r.call = C_MSYNC;
	r.fd = -1;
	r.off = (int64_t)(uintptr_t)a;
	r.size = (int64_t)len;
	r.oflags = (uint32_t)flags;
	RET(r, v);
	iotrace_emit(&r, NULL, NULL);
	errno = saved;
	return v;
}
EXPORT ssize_t readahead(int fd, off64_t off, size_t count) {
	REAL(readahead);
	FD_BODY(C_READAHEAD, ssize_t, real_readahead(fd, off, count), off, (int64_t)count, 0);
}

/* ---- fcntl, close_range ---- */

/* fcntl: the dup commands (the new descriptor takes the source's kind),
 * F_SETFD and F_SETFL (which may set or clear O_APPEND) on files; other
 * commands pass through. The argument is read as glibc reads it. */
#define FCNTL_BODY(REALCALL)                                             \
	switch (cmd) {                                                       \
	case F_DUPFD:                                                        \
	case F_DUPFD_CLOEXEC:                                                \
	case F_SETFD:                                                        \
	case F_SETFL:                                                        \
		break;                                                           \
	default:                                                             \
		return REALCALL;                                                 \
	}                                                                    \
	if (!on() || !fd_file(fd)) return REALCALL;                         \
	unsigned kind = fd < FDKINDS ? fdkind[fd] : 0;                       \
	struct rec r = {0};                                                  \
	BEGIN;                                                               \
	int v = REALCALL;                                                    \
	END(r);                                                              \
	if ((cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) && v >= 0) fd_set_kind(v, kind); \
	if (cmd == F_SETFL && v >= 0) fd_set_kind(fd, ((long)arg & O_APPEND) ? 3 : 1); \
	r.call = C_FCNTL;                                                    \
	r.fd = fd;                                                           \
	r.oflags = (uint32_t)cmd;                                            \
	r.size = (int64_t)(long)arg;                                         \
	RET(r, v);                                                           \
	iotrace_emit(&r, NULL, NULL);                                        \
	errno = saved;                                                       \
	return v

EXPORT int fcntl(int fd, int cmd, ...) {
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	REAL(fcntl);
	FCNTL_BODY(real_fcntl(fd, cmd, arg));
}
EXPORT int fcntl64(int fd, int cmd, ...) {
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	REAL(fcntl64);
	FCNTL_BODY(real_fcntl64(fd, cmd, arg));
}

/* close_range (and closefrom, which is close_range(low, ~0U, 0) for the
 * kernel): recorded always; the encoder knows which of its files the
 * range held. */
EXPORT int close_range(unsigned first, unsigned last, int fl) {
	REAL(close_range);
	if (!on()) {
		int rc = real_close_range(first, last, fl);
		if (rc == 0) forget_range(first, last, fl);
		return rc;
	}
	struct rec r = {0};
	BEGIN;
	int rc = real_close_range(first, last, fl);
	END(r);
	if (rc == 0) forget_range(first, last, fl);
	r.call = C_CLOSE_RANGE;
	r.fd = (int32_t)first;
	r.size = last;
	r.oflags = (uint32_t)fl;
	RET(r, rc);
	iotrace_emit(&r, NULL, NULL);
	errno = saved;
	return rc;
}
EXPORT void closefrom(int low) {
	REAL(closefrom);
	if (!on() || low < 0) {
		real_closefrom(low);
		if (low >= 0) forget_range((unsigned)low, ~0u, 0);
		return;
	}
	struct rec r = {0};
	BEGIN;
	real_closefrom(low);
	END(r);
	forget_range((unsigned)low, ~0u, 0);
	r.call = C_CLOSE_RANGE;
	r.fd = low;
	r.size = ~0u;
	iotrace_emit(&r, NULL, NULL);
	errno = saved;
}

/* ---- opens made inside glibc ----
 *
 * The mkstemp family, tmpfile and opendir open their files with glibc's
 * own calls, which no wrapper sees: each is recorded as the openat the
 * kernel sees, closedir as the close; readdir's getdents64 calls are
 * recorded from the block glibc's DIR holds (below). */

#define TEMP_BODY(REALCALL, FLAGS)                                       \
	if (!on()) return REALCALL;                                          \
	struct rec r = {0};                                                  \
	char buf[PATH_MAX];                                                  \
	BEGIN;                                                               \
	int fd = REALCALL;                                                   \
	END(r);                                                              \
	r.call = C_OPENAT;                                                   \
	r.fd = -1;                                                           \
	r.oflags = O_RDWR | O_CREAT | O_EXCL | ((uint32_t)(FLAGS) & ~(uint32_t)O_ACCMODE); \
	r.mode = 0600;                                                       \
	RET(r, fd);                                                          \
	fd_opened(fd);                                                       \
	iotrace_emit(&r, abspath(tmpl, buf), NULL);                          \
	errno = saved;                                                       \
	return fd

EXPORT int mkstemp(char *tmpl) {
	REAL(mkstemp);
	TEMP_BODY(real_mkstemp(tmpl), 0);
}
EXPORT int mkstemp64(char *tmpl) {
	REAL(mkstemp64);
	TEMP_BODY(real_mkstemp64(tmpl), 0);
}
EXPORT int mkstemps(char *tmpl, int suffix) {
	REAL(mkstemps);
	TEMP_BODY(real_mkstemps(tmpl, suffix), 0);
}
EXPORT int mkstemps64(char *tmpl, int suffix) {
	REAL(mkstemps64);
	TEMP_BODY(real_mkstemps64(tmpl, suffix), 0);
}
EXPORT int mkostemp(char *tmpl, int fl) {
	REAL(mkostemp);
	TEMP_BODY(real_mkostemp(tmpl, fl), fl);
}
EXPORT int mkostemp64(char *tmpl, int fl) {
	REAL(mkostemp64);
	TEMP_BODY(real_mkostemp64(tmpl, fl), fl);
}
EXPORT int mkostemps(char *tmpl, int suffix, int fl) {
	REAL(mkostemps);
	TEMP_BODY(real_mkostemps(tmpl, suffix, fl), fl);
}
EXPORT int mkostemps64(char *tmpl, int suffix, int fl) {
	REAL(mkostemps64);
	TEMP_BODY(real_mkostemps64(tmpl, suffix, fl), fl);
}

/* tmpfile: the file has no name (O_TMPFILE) or lost it (unlinked at
 * once): recorded with its /proc/self/fd name ("/tmp/#123 (deleted)"). */
#define TMPFILE_BODY(REALCALL)                                           \
	if (!on()) return REALCALL;                                          \
	struct rec r = {0};                                                  \
	char name[PATH_MAX] = "";                                            \
	BEGIN;                                                               \
	FILE *f = REALCALL;                                                  \
	END(r);                                                              \
	int fd = f ? f->_fileno : -1;                                        \
	if (fd >= 0) {                                                       \
		char link[64];                                                   \
		snprintf(link, sizeof link, "/proc/self/fd/%d", fd);             \
		long n = syscall(SYS_readlinkat, AT_FDCWD, link, name, sizeof name - 1); \
		name[n > 0 ? n : 0] = 0;                                         \
	}                                                                    \
	r.call = C_OPENAT;                                                   \
	r.fd = -1;                                                           \
	r.oflags = O_RDWR | O_CREAT | O_EXCL;                                \
	r.mode = 0600;                                                       \
	r.ret = f ? fd : -(int64_t)saved;                                    \
	fd_opened(fd);                                                       \
	iotrace_emit(&r, name[0] ? name : "/tmp", NULL);                     \
	errno = saved;                                                       \
	return f

EXPORT FILE *tmpfile(void) {
	REAL(tmpfile);
	TMPFILE_BODY(real_tmpfile());
}
EXPORT FILE *tmpfile64(void) {
	REAL(tmpfile64);
	TMPFILE_BODY(real_tmpfile64());
}

/* glibc's opendir: openat(O_DIRECTORY), then fstat of the descriptor
 * (is it a directory?); an empty name fails with no call. */
#define OPENDIR_FLAGS (O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_DIRECTORY)

static void dir_opened(struct kio *k, int dirfd, const char *path, int fd, int err, char *buf) {
	struct rec r = {0};
	r.call = C_OPENAT;
	r.fd = -1;
	r.oflags = OPENDIR_FLAGS;
	r.ret = fd >= 0 ? fd : -(int64_t)err;
	const char *p = atpath(dirfd, path, buf, &r);
	fd_opened(fd);
	seq_emit(k, &r, p, NULL);
	if (fd >= 0) {
		struct rec s = {0};
		s.call = C_FSTAT;
		s.fd = fd;
		seq_emit(k, &s, NULL, NULL);
	}
}

EXPORT DIR *opendir(const char *path) {
	REAL(opendir);
	if (!on() || !path || !path[0]) return real_opendir(path);
	char buf[PATH_MAX];
	int64_t t0 = iotrace_now();
	t_in++;
	DIR *d = real_opendir(path);
	int saved = errno;
	int64_t dur = iotrace_now() - t0;
	t_in--;
	int fd = d ? dirfd(d) : -1;
	struct kio k = {fd, t0, dur, d ? 2 : 1, 0};
	dir_opened(&k, AT_FDCWD, path, fd, saved, buf);
	errno = saved;
	return d;
}

/* fdopendir: fstat (a directory?), fcntl(F_GETFL) (readable? not a
 * command the shim records), fcntl(F_SETFD, FD_CLOEXEC). It failed at
 * the fstat (EBADF), after it (ENOTDIR, EINVAL: not readable), or made
 * all three. */
EXPORT DIR *fdopendir(int fd) {
	REAL(fdopendir);
	if (!on() || !fd_file(fd)) return real_fdopendir(fd);
	int64_t t0 = iotrace_now();
	t_in++;
	DIR *d = real_fdopendir(fd);
	int saved = errno;
	int64_t dur = iotrace_now() - t0;
	t_in--;
	int setfd = d || (saved != EBADF && saved != ENOTDIR && saved != EINVAL);
	struct kio k = {fd, t0, dur, 1 + setfd, 0};
	struct rec r = {0};
	r.call = C_FSTAT;
	r.fd = fd;
	r.ret = d || saved != EBADF ? 0 : -(int64_t)saved;
	seq_emit(&k, &r, NULL, NULL);
	if (setfd) {
		struct rec s = {0};
		s.call = C_FCNTL;
		s.fd = fd;
		s.oflags = F_SETFD;
		s.size = FD_CLOEXEC;
		s.ret = d ? 0 : -(int64_t)saved;
		seq_emit(&k, &s, NULL, NULL);
	}
	errno = saved;
	return d;
}

EXPORT int closedir(DIR *d) {
	REAL(closedir);
	int fd = d ? dirfd(d) : -1;
	if (!on() || !fd_file(fd)) {
		if (fd >= 0) fd_set_kind(fd, 0);
		return real_closedir(d);
	}
	struct rec r = {0};
	BEGIN;
	int rc = real_closedir(d);
	END(r);
	fd_set_kind(fd, 0);
	r.call = C_CLOSE;
	r.fd = fd;
	RET(r, rc);
	iotrace_emit(&r, NULL, NULL);
	errno = saved;
	return rc;
}

/* readdir: glibc reads a directory in blocks, with a getdents64 inside
 * libc that no wrapper sees. The block is in glibc's DIR (struct
 * __dirstream: fd, lock, allocation, size, offset, …): a readdir that
 * finds it used up (offset >= size) makes one getdents64 of `allocation`
 * bytes, which returned the new size (0 at the end of the directory, when
 * readdir returns NULL; −errno when it fails). The layout is believed only
 * where it fits (its fd is dirfd's, offset <= size <= allocation, a sane
 * allocation); a DIR it does not fit is read unrecorded. A readdir served
 * from the block costs the shim two loads. */
struct glibc_dir {
	int fd;
	int lock;
	size_t allocation, size, offset;
};

static struct glibc_dir *glibc_dir(DIR *d, int fd) {
	struct glibc_dir *g = (struct glibc_dir *)d;
	if (g->fd != fd || g->offset > g->size || g->size > g->allocation || g->allocation < 512 ||
	    g->allocation > (1u << 24))
		return NULL;
	return g;
}

/* READDIR_BODY runs REALCALL, which leaves its entry in E (NULL at the end
 * or on an error), and records the getdents64 it made. */
#define READDIR_BODY(REALCALL, E)                                                 \
	int fd = d ? dirfd(d) : -1;                                                   \
	struct glibc_dir *g = fd >= 0 && on() && fd_file(fd) ? glibc_dir(d, fd) : NULL; \
	if (!g || g->offset < g->size) {                                              \
		REALCALL;                                                                 \
	} else {                                                                      \
		struct rec r = {0};                                                       \
		size_t alloc = g->allocation;                                             \
		int before = errno;                                                       \
		errno = 0;                                                                \
		BEGIN;                                                                    \
		REALCALL;                                                                 \
		END(r);                                                                   \
		r.call = C_GETDENTS;                                                      \
		r.fd = fd;                                                                \
		r.size = (int64_t)alloc;                                                  \
		r.ret = (E) ? (int64_t)g->size : saved ? -(int64_t)saved : 0;             \
		iotrace_emit(&r, NULL, NULL);                                             \
		errno = saved ? saved : before;                                           \
	}

EXPORT struct dirent *readdir(DIR *d) {
	REAL(readdir);
	struct dirent *e;
	READDIR_BODY(e = real_readdir(d), e);
	return e;
}
EXPORT struct dirent64 *readdir64(DIR *d) {
	REAL(readdir64);
	struct dirent64 *e;
	READDIR_BODY(e = real_readdir64(d), e);
	return e;
}
/* readdir_r is deprecated, and still called. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
EXPORT int readdir_r(DIR *d, struct dirent *ent, struct dirent **res) {
	REAL(readdir_r);
	int rc;
	READDIR_BODY(rc = real_readdir_r(d, ent, res), rc == 0 && *res);
	return rc;
}
EXPORT int readdir64_r(DIR *d, struct dirent64 *ent, struct dirent64 **res) {
	REAL(readdir64_r);
	int rc;
	READDIR_BODY(rc = real_readdir64_r(d, ent, res), rc == 0 && *res);
	return rc;
}
#pragma GCC diagnostic pop

/* rewinddir and seekdir move the descriptor: lseek(fd, pos, SEEK_SET). */
#define SEEKDIR_BODY(REALCALL, POS)                                      \
	int fd = d ? dirfd(d) : -1;                                          \
	if (!on() || !fd_file(fd)) {                                         \
		REALCALL;                                                        \
		return;                                                          \
	}                                                                    \
	struct rec r = {0};                                                  \
	BEGIN;                                                               \
	REALCALL;                                                            \
	END(r);                                                              \
	r.call = C_LSEEK;                                                    \
	r.fd = fd;                                                           \
	r.off = (POS);                                                       \
	r.oflags = SEEK_SET;                                                 \
	r.ret = (POS);                                                       \
	iotrace_emit(&r, NULL, NULL);                                        \
	errno = saved

EXPORT void rewinddir(DIR *d) {
	REAL(rewinddir);
	SEEKDIR_BODY(real_rewinddir(d), 0);
}
EXPORT void seekdir(DIR *d, long pos) {
	REAL(seekdir);
	SEEKDIR_BODY(real_seekdir(d, pos), pos);
}

/* scandir opens the directory as opendir does, reads it (getdents64,
 * unseen) and closes it. */
#define SCANDIR_BODY(REALCALL, DIRFD)                                    \
	if (!on() || !path || !path[0]) return REALCALL;                     \
	char buf[PATH_MAX];                                                  \
	know_dir(DIRFD, path);                                               \
	int fd = free_fd();                                                  \
	int64_t t0 = iotrace_now();                                          \
	t_in++;                                                              \
	int v = REALCALL;                                                    \
	int saved = errno;                                                   \
	int64_t dur = iotrace_now() - t0;                                    \
	t_in--;                                                              \
	int opened = v >= 0 || (saved != ENOENT && saved != ENOTDIR && saved != EACCES && saved != ELOOP && saved != ENAMETOOLONG && saved != EMFILE && saved != ENFILE && saved != EBADF); \
	struct kio k = {fd, t0, dur, opened ? 3 : 1, 0};                     \
	dir_opened(&k, DIRFD, path, opened ? fd : -1, saved, buf);           \
	if (opened) {                                                        \
		fd_set_kind(fd, 0);                                              \
		struct rec c = {0};                                              \
		c.call = C_CLOSE;                                                \
		c.fd = fd;                                                       \
		seq_emit(&k, &c, NULL, NULL);                                    \
	}                                                                    \
	errno = saved;                                                       \
	return v

typedef int (*dirent_filter)(const struct dirent *);
typedef int (*dirent_compar)(const struct dirent **, const struct dirent **);
typedef int (*dirent64_filter)(const struct dirent64 *);
typedef int (*dirent64_compar)(const struct dirent64 **, const struct dirent64 **);

EXPORT int scandir(const char *path, struct dirent ***list, dirent_filter sel, dirent_compar cmp) {
	REAL(scandir);
	SCANDIR_BODY(real_scandir(path, list, sel, cmp), AT_FDCWD);
}
EXPORT int scandir64(const char *path, struct dirent64 ***list, dirent64_filter sel, dirent64_compar cmp) {
	REAL(scandir64);
	SCANDIR_BODY(real_scandir64(path, list, sel, cmp), AT_FDCWD);
}
EXPORT int scandirat(int dirfd, const char *path, struct dirent ***list, dirent_filter sel, dirent_compar cmp) {
	REAL(scandirat);
	SCANDIR_BODY(real_scandirat(dirfd, path, list, sel, cmp), dirfd);
}
EXPORT int scandirat64(int dirfd, const char *path, struct dirent64 ***list, dirent64_filter sel, dirent64_compar cmp) {
	REAL(scandirat64);
	SCANDIR_BODY(real_scandirat64(dirfd, path, list, sel, cmp), dirfd);
}

/* fts_open keeps the working directory open (open(".", O_RDONLY), its
 * fts_rfd) unless FTS_NOCHDIR; fts_close goes back to it and closes it.
 * The walk itself (fts_read, fts_children: opendir, stat, chdir of each
 * directory) is glibc's own: not seen. */
EXPORT FTS *fts_open(char *const *argv, int opts, int (*cmp)(const FTSENT **, const FTSENT **)) {
	REAL(fts_open);
	if (!on() || (opts & FTS_NOCHDIR)) return real_fts_open(argv, opts, cmp);
	char buf[PATH_MAX];
	struct rec r = {0};
	BEGIN;
	FTS *sp = real_fts_open(argv, opts, cmp);
	END(r);
	/* The open is fts_open's last step: it made it when it returned a
	 * stream. (One that failed leaves fts_rfd -1 and the errno unknown:
	 * not recorded.) */
	if (sp && sp->fts_rfd >= 0) {
		r.call = C_OPEN;
		r.fd = -1;
		r.oflags = O_RDONLY;
		r.ret = sp->fts_rfd;
		fd_opened(sp->fts_rfd);
		iotrace_emit(&r, abspath(".", buf), NULL);
	}
	errno = saved;
	return sp;
}
EXPORT int fts_close(FTS *sp) {
	REAL(fts_close);
	int fd = sp && !(sp->fts_options & FTS_NOCHDIR) ? sp->fts_rfd : -1;
	if (!on() || fd < 0 || !fd_file(fd)) return real_fts_close(sp);
	struct rec r = {0};
	BEGIN;
	int rc = real_fts_close(sp);
	END(r);
	fd_set_kind(fd, 0);
	r.call = C_CLOSE;
	r.fd = fd;
	iotrace_emit(&r, NULL, NULL);
	errno = saved;
	return rc;
}
/* fts64_* are the same functions (an FTS64 begins as an FTS does). */
EXPORT FTS64 *fts64_open(char *const *argv, int opts, int (*cmp)(const FTSENT64 **, const FTSENT64 **)) {
	return (FTS64 *)fts_open(argv, opts, (int (*)(const FTSENT **, const FTSENT **))cmp);
}
EXPORT int fts64_close(FTS64 *sp) { return fts_close((FTS *)sp); }

/* ---- stdio ----
 *
 * A stream on a file is recorded as the system calls stdio makes for it,
 * as a tracer of system calls sees them, not as the library calls: a
 * refill of the stream's buffer is a read of the file at the kernel's
 * position, a flush is a write, fopen is OpFopen (the kernel's openat),
 * fclose is the flush's write and OpFclose (the close), an fseek that
 * moves the kernel's position is an lseek (with the read that refills
 * the buffer after it). glibc makes these calls with its own read and
 * write, which no wrapper sees, so the shim infers them: around each
 * wrapped call on a file stream it compares the stream's buffer pointers
 * (struct _IO_FILE, public in <bits/types/struct_FILE.h>) before and
 * after. Only when they show that the call reached the kernel (a getc or
 * putc that found its buffer empty or full, a read-side call that got
 * more bytes than the buffer held, a write-side call that left fewer
 * pending than it was given) does it read the kernel's position
 * (lseek(fd, 0, SEEK_CUR)) and emit the calls glibc made: the bytes moved
 * come from the pointers, split as glibc splits them (it refills and
 * flushes whole buffers, and reads or writes the whole blocks of a large
 * fread or fwrite straight between the caller's memory and the file), the
 * offsets from the kernel's position after the call. The hot path of
 * getc and putc is glibc's own test (is there a byte in the buffer, room
 * for one?) before calling glibc.
 *
 * Streams on pipes and terminals are not files: not recorded. What glibc
 * flushes at exit is flushed (and recorded) by the shim's exit handler,
 * just before glibc would. */

#ifndef _IO_EOF_SEEN
#define _IO_EOF_SEEN 0x10
#endif
#ifndef _IO_ERR_SEEN
#define _IO_ERR_SEEN 0x20
#endif
/* Flags of glibc's FILE that its public header does not name (libio.h;
 * part of its ABI since glibc 2.1). */
#define IOF_UNBUFFERED 0x2
#define IOF_NO_READS 0x4
#define IOF_NO_WRITES 0x8
#define IOF_IN_BACKUP 0x100
#define IOF_LINE_BUF 0x200
#define IOF_PUTTING 0x800
#define IOF_APPENDING 0x1000
#define IOF_MAGIC_MASK 0xFFFF0000u
#define IOF_MAGIC 0xFBAD0000u

/* <stdio.h> makes these macros when optimizing. */
#undef fread_unlocked
#undef fwrite_unlocked
#undef getc_unlocked
#undef putc_unlocked
#undef getc
#undef putc

int _IO_getc(FILE *);
int _IO_putc(int, FILE *);
int __uflow(FILE *);
int __overflow(FILE *, int);
ssize_t __getdelim(char **, size_t *, int, FILE *);
size_t __fread_chk(void *, size_t, size_t, size_t, FILE *);
size_t __fread_unlocked_chk(void *, size_t, size_t, size_t, FILE *);
char *__fgets_chk(char *, size_t, int, FILE *);
char *__fgets_unlocked_chk(char *, size_t, int, FILE *);
int __fprintf_chk(FILE *, int, const char *, ...);
int __printf_chk(int, const char *, ...);
int __vfprintf_chk(FILE *, int, const char *, va_list);
int __vprintf_chk(int, const char *, va_list);

/* A stream's pointers, flags and the kernel's position as glibc knows
 * it (_offset, -1 when it does not). */
struct snap {
	char *rptr, *rend, *rbase, *wbase, *wptr, *wend, *bbase, *bend;
	int flags;
	int64_t off;
};

static inline void snap(FILE *f, struct snap *s) {
	s->rptr = f->_IO_read_ptr;
	s->rend = f->_IO_read_end;
	s->rbase = f->_IO_read_base;
	s->wbase = f->_IO_write_base;
	s->wptr = f->_IO_write_ptr;
	s->wend = f->_IO_write_end;
	s->bbase = f->_IO_buf_base;
	s->bend = f->_IO_buf_end;
	s->flags = f->_flags;
	s->off = f->_offset;
}

/* pending: bytes written to the stream, not yet to the file. */
static inline int64_t pending(const struct snap *s) {
	return (s->flags & IOF_PUTTING) && s->wptr > s->wbase ? s->wptr - s->wbase : 0;
}

/* avail: bytes read from the file, not yet by the program. */
static inline int64_t avail(const struct snap *s) { return s->rend > s->rptr ? s->rend - s->rptr : 0; }

/* bufsize: the stream's buffer (1 for an unbuffered stream). */
static inline int64_t bufsize(const struct snap *s) { return s->bend > s->bbase ? s->bend - s->bbase : 1; }

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* kio_emit emits a system call one stdio call made (k: the call), with
 * its share of the call's time. */

static void kio_emit(struct kio *k, uint16_t call, int64_t off, int64_t size, int64_t ret, uint32_t whence) {
	struct rec r = {0};
	int64_t n = k->n > 0 ? k->n : 1;
	r.call = call;
	r.fd = k->fd;
	r.off = off;
	r.size = size;
	r.ret = ret;
	r.oflags = whence;
	r.start = k->t0 + k->dur * k->i / n;
	r.dur = k->dur / n;
	k->i++;
	iotrace_emit(&r, NULL, NULL);
}

static int64_t kpos(int fd) { return syscall(SYS_lseek, fd, 0, SEEK_CUR); }

/* allocated: the call gave the stream its buffer, and glibc's
 * _IO_file_doallocate fstat'ed the file for its block size (an
 * unbuffered stream gets a byte of its own, with no call). */
static inline int allocated(const struct snap *s0, const struct snap *s1) {
	return !s0->bbase && s1->bbase && !(s0->flags & IOF_UNBUFFERED);
}

/* flush_delta: glibc's new_do_write, before it writes what a stream in
 * state s holds, seeks the file back (lseek(delta, SEEK_CUR)) from where
 * the stream read up to (its read end, where the kernel is) to where its
 * writes begin, when they differ; never for a stream in append mode. A
 * stream that was reading begins its writes where the program read. */
static inline int64_t flush_delta(const struct snap *s) {
	if (s->flags & IOF_APPENDING) return 0;
	if (s->flags & IOF_PUTTING) return s->wbase - s->rend;
	if (!s->bbase || s->rptr == s->bend) return 0;
	return s->rptr - s->rend;
}

/* flush_n: the calls a flush of w bytes from state s makes. */
static inline int flush_n(const struct snap *s, int64_t w) { return w > 0 ? 1 + (flush_delta(s) != 0) : 0; }

/* kio_flush emits a flush of w bytes from state s: the lseek back, if
 * any, and the write, at at (-1: unknown) with result ret. */
static void kio_flush(struct kio *k, const struct snap *s, int64_t w, int64_t at, int64_t ret) {
	int64_t d = flush_delta(s);
	if (d != 0) kio_emit(k, C_LSEEK, d, 0, at, SEEK_CUR);
	kio_emit(k, C_WRITE, at, w, ret, 0);
}

/* A run of reads of the same size and result. */
struct rrun {
	int64_t req, got, count;
};

/* stdio_read: a read-side call on f gave the program got bytes; s0 is
 * the stream before it; want is what fread asked for, or -1 for a call
 * that only refills the buffer (getc, fgets, getdelim: glibc's underflow,
 * a read of a whole buffer each time). It emits the reads the call made
 * (and the flush of a stream that was writing). */
static void stdio_read(FILE *f, const struct snap *s0, int64_t got, int64_t want, int64_t t0, int64_t dur, int err) {
	struct snap s1;
	snap(f, &s1);
	int64_t w = pending(s0) - pending(&s1);
	int64_t d = got - avail(s0) + avail(&s1); /* bytes the kernel gave */
	int eof0 = s0->flags & _IO_EOF_SEEN, eof1 = s1.flags & _IO_EOF_SEEN;
	int err1 = (s1.flags & _IO_ERR_SEEN) && !(s0->flags & _IO_ERR_SEEN);
	int alloc = allocated(s0, &s1);
	if (w < 0) w = 0;
	if (d < 0) d = 0;
	if (d == 0 && w == 0 && !alloc && !err1 && !(eof1 && !eof0) && (want < 0 || want <= avail(s0))) return;
	int64_t bs = bufsize(&s1);
	struct rrun runs[8];
	int nr = 0;
	if (want < 0) {
		if (!eof0) {
			if (d / bs) runs[nr++] = (struct rrun){bs, bs, d / bs};
			if (d % bs) runs[nr++] = (struct rrun){bs, d % bs, 1};
			if (eof1) runs[nr++] = (struct rrun){bs, 0, 1};
			else if (err1) runs[nr++] = (struct rrun){bs, -(int64_t)err, 1};
		}
	} else {
		/* glibc's fread (_IO_file_xsgetn): what the buffer holds, then
		 * whole blocks straight to the caller, then a refill for the
		 * rest; reads of a file give what they ask while it lasts. */
		int64_t left = want - min64(avail(s0), want), rem = d;
		while (left > 0 && nr < 6) {
			int refill = s1.bbase && left < bs;
			int64_t req = left;
			if (refill) {
				if (eof0) break;
				req = bs;
			} else if (bs >= 128) {
				req -= left % bs;
			}
			int64_t g = min64(req, rem);
			if (g == 0 && err1) {
				runs[nr++] = (struct rrun){req, -(int64_t)err, 1};
				break;
			}
			runs[nr++] = (struct rrun){req, g, 1};
			rem -= g;
			if (g == 0) break;
			left -= refill ? min64(g, left) : g;
		}
		if (rem != 0) { /* not what glibc would have done: one read */
			nr = 0;
			runs[nr++] = (struct rrun){d, d, 1};
		}
	}
	int64_t n = flush_n(s0, w) + alloc;
	for (int i = 0; i < nr; i++) n += runs[i].count;
	if (n == 0) return;
	struct kio k = {f->_fileno, t0, dur, n, 0};
	int64_t pos = kpos(k.fd);
	pos = pos < 0 ? -1 : pos - d;
	if (w > 0) kio_flush(&k, s0, w, pos < 0 ? -1 : pos - w, w);
	if (alloc) kio_emit(&k, C_FSTAT, 0, 0, 0, 0);
	for (int i = 0; i < nr; i++) {
		for (int64_t c = 0; c < runs[i].count; c++) {
			kio_emit(&k, C_READ, pos, runs[i].req, runs[i].got, 0);
			if (pos >= 0 && runs[i].got > 0) pos += runs[i].got;
		}
	}
}

/* stdio_write: a write-side call on f took n bytes; s0 is the stream
 * before it. It emits the writes the call made: the flush of the full
 * buffer, then (glibc's _IO_new_file_xsputn) the whole blocks of the
 * rest straight from the caller's memory. */
static void stdio_write(FILE *f, const struct snap *s0, int64_t n, int64_t t0, int64_t dur, int err) {
	struct snap s1;
	snap(f, &s1);
	int64_t p0 = pending(s0), p1 = pending(&s1);
	int64_t w = p0 + n - p1;
	int err1 = (s1.flags & _IO_ERR_SEEN) && !(s0->flags & _IO_ERR_SEEN);
	int alloc = allocated(s0, &s1);
	if (w <= 0 && !err1 && !alloc) return;
	int64_t bs = bufsize(&s1), sizes[3];
	int nw = 0;
	if (!(s0->flags & IOF_LINE_BUF) && n > 0) {
		int64_t space = s0->wend > s0->wptr ? s0->wend - s0->wptr : 0;
		int64_t fill = min64(space, n), todo = n - fill;
		if (todo > 0) {
			if (p0 + fill > 0) sizes[nw++] = p0 + fill;
			int64_t direct = todo - (bs >= 128 ? todo % bs : 0);
			if (direct > 0) sizes[nw++] = direct;
		}
	}
	int64_t sum = 0;
	for (int i = 0; i < nw; i++) sum += sizes[i];
	if (sum != w) { /* line buffered, or not what glibc would have done: one write */
		nw = 0;
		if (w > 0) sizes[nw++] = w;
	}
	/* The first write is the one that may seek back first. */
	int64_t back = nw > 0 || err1 ? flush_delta(s0) : 0;
	struct kio k = {f->_fileno, t0, dur, alloc + (back != 0) + nw + (err1 ? 1 : 0), 0};
	int64_t pos = w > 0 || err1 || back ? kpos(k.fd) : -1;
	pos = pos < 0 ? -1 : pos - (w > 0 ? w : 0);
	if (alloc) kio_emit(&k, C_FSTAT, 0, 0, 0, 0);
	if (back) kio_emit(&k, C_LSEEK, back, 0, pos, SEEK_CUR);
	for (int i = 0; i < nw; i++) {
		kio_emit(&k, C_WRITE, pos, sizes[i], sizes[i], 0);
		if (pos >= 0) pos += sizes[i];
	}
	if (err1) kio_emit(&k, C_WRITE, pos, p1 > 0 ? p1 : bs, -(int64_t)err, 0);
}

/* stdio_flush: fflush made f write what it held, or (a stream that was
 * reading) move the kernel's position back to where the program read. */
static void stdio_flush(FILE *f, const struct snap *s0, int64_t t0, int64_t dur, int err) {
	struct snap s1;
	snap(f, &s1);
	int64_t w = pending(s0) - pending(&s1);
	int64_t back = !(s0->flags & IOF_PUTTING) && avail(s0) > 0 && avail(&s1) == 0 ? avail(s0) : 0;
	int err1 = (s1.flags & _IO_ERR_SEEN) && !(s0->flags & _IO_ERR_SEEN);
	if (w <= 0 && back == 0 && !err1) return;
	struct kio k = {f->_fileno, t0, dur, flush_n(s0, w) + (back > 0) + err1, 0};
	int64_t pos = kpos(k.fd);
	if (w > 0) kio_flush(&k, s0, w, pos < 0 ? -1 : pos - w, w);
	if (err1) kio_emit(&k, C_WRITE, pos, pending(&s1), -(int64_t)err, 0);
	if (back > 0) kio_emit(&k, C_LSEEK, -back, 0, pos, SEEK_CUR);
}

/* ---- stdio: opening and closing ---- */

static uint32_t mode_flags(const char *m) {
	uint32_t f = 0;
	if (!m) return 0;
	switch (m[0]) {
	case 'r': f = O_RDONLY; break;
	case 'w': f = O_WRONLY | O_CREAT | O_TRUNC; break;
	case 'a': f = O_WRONLY | O_CREAT | O_APPEND; break;
	}
	for (const char *c = m + 1; *c && *c != ','; c++) {
		if (*c == '+') f = (f & ~(uint32_t)O_ACCMODE) | O_RDWR;
		if (*c == 'x') f |= O_EXCL;
		if (*c == 'e') f |= O_CLOEXEC;
	}
	return f;
}

/* fopen is the kernel's openat; in append mode without reading ("a",
 * not "a+") glibc then seeks to the end (lseek(fd, 0, SEEK_END)). */
static inline int append_only(const char *m) { return m && m[0] == 'a' && !strchr(m, '+'); }

#define FOPEN_BODY(REALCALL)                                             \
	if (!on()) return REALCALL;                                          \
	char buf[PATH_MAX];                                                  \
	int64_t t0 = iotrace_now();                                          \
	t_in++;                                                              \
	FILE *f = REALCALL;                                                  \
	int saved = errno;                                                   \
	int64_t dur = iotrace_now() - t0;                                    \
	t_in--;                                                              \
	int fd = f ? f->_fileno : -1;                                        \
	fd_opened(fd);                                                       \
	int app = f && append_only(mode);                                    \
	struct rec r = {0};                                                  \
	r.call = C_FOPEN;                                                    \
	r.fd = -1;                                                           \
	r.oflags = mode_flags(mode);                                         \
	r.mode = 0666;                                                       \
	r.ret = f ? fd : -(int64_t)saved;                                    \
	r.start = t0;                                                        \
	r.dur = app ? dur / 2 : dur;                                         \
	iotrace_emit(&r, abspath(path, buf), NULL);                          \
	if (app) {                                                           \
		struct kio k = {fd, t0, dur, 2, 1};                              \
		kio_emit(&k, C_LSEEK, 0, 0, kpos(fd), SEEK_END);                 \
	}                                                                    \
	errno = saved;                                                       \
	return f

EXPORT FILE *fopen(const char *path, const char *mode) {
	REAL(fopen);
	FOPEN_BODY(real_fopen(path, mode));
}
EXPORT FILE *fopen64(const char *path, const char *mode) {
	REAL(fopen64);
	FOPEN_BODY(real_fopen64(path, mode));
}

/* fdopen opens nothing; in append mode glibc sets O_APPEND (fcntl
 * F_SETFL) if the descriptor lacks it and then, not reading ("a"), seeks
 * to the end. */
EXPORT FILE *fdopen(int fd, const char *mode) {
	REAL(fdopen);
	if (!on() || !mode || mode[0] != 'a' || !fd_file(fd)) return real_fdopen(fd, mode);
	long fl = syscall(SYS_fcntl, fd, F_GETFL);
	int64_t t0 = iotrace_now();
	t_in++;
	FILE *f = real_fdopen(fd, mode);
	int saved = errno;
	int64_t dur = iotrace_now() - t0;
	t_in--;
	if (f) {
		int set = fl >= 0 && !(fl & O_APPEND), seek = set && append_only(mode);
		struct kio k = {fd, t0, dur, set + seek, 0};
		if (set) {
			fd_set_kind(fd, 3);
			struct rec r = {0};
			r.call = C_FCNTL;
			r.fd = fd;
			r.oflags = F_SETFL;
			r.size = fl | O_APPEND;
			r.start = t0;
			r.dur = dur / 2;
			k.i++;
			iotrace_emit(&r, NULL, NULL);
		}
		if (seek) kio_emit(&k, C_LSEEK, 0, 0, kpos(fd), SEEK_END);
	}
	errno = saved;
	return f;
}

/* setvbuf(f, NULL, _IOFBF, size) on a stream without a buffer makes glibc
 * allocate one at once (_IO_DOALLOCATE: it fstats the file for its block
 * size), where the other modes leave that to the first read or write:
 * recorded as that fstat. zstd sets its output stream so. */
EXPORT int setvbuf(FILE *f, char *buf, int mode, size_t size) {
	REAL(setvbuf);
	if (!on() || !f || buf || mode != _IOFBF || f->_IO_buf_base || f->_fileno < 0 || !fd_file(f->_fileno))
		return real_setvbuf(f, buf, mode, size);
	int64_t t0 = iotrace_now();
	t_in++;
	int v = real_setvbuf(f, buf, mode, size);
	int saved = errno;
	int64_t dur = iotrace_now() - t0;
	t_in--;
	if (f->_IO_buf_base) {
		struct kio k = {f->_fileno, t0, dur, 1, 0};
		kio_emit(&k, C_FSTAT, 0, 0, 0, 0);
	}
	errno = saved;
	return v;
}

/* freopen flushes and closes the stream's file and opens another on the
 * same descriptor (glibc opens it, dup3s it onto the old number and
 * closes the new one): recorded as the flush's write, the close and the
 * fopen of the descriptor. */
#define FREOPEN_BODY(REALCALL)                                           \
	int old = f ? f->_fileno : -1;                                       \
	if (!on() || !path) {                                                \
		FILE *nf = REALCALL;                                             \
		if (old >= 0) fd_set_kind(old, 0);                               \
		if (nf) fd_set_kind(nf->_fileno, 0);                             \
		return nf;                                                       \
	}                                                                    \
	int file = old >= 0 && fd_file(old);                                 \
	struct snap s0;                                                      \
	snap(f, &s0);                                                        \
	int64_t w = file ? pending(&s0) : 0;                                 \
	int64_t pos = w > 0 ? kpos(old) : -1;                                \
	if (pos >= 0) pos += flush_delta(&s0);                               \
	char buf[PATH_MAX];                                                  \
	int64_t t0 = iotrace_now();                                          \
	t_in++;                                                              \
	FILE *nf = REALCALL;                                                 \
	int saved = errno;                                                   \
	int64_t dur = iotrace_now() - t0;                                    \
	t_in--;                                                              \
	fd_set_kind(old, 0);                                                 \
	int fd = nf ? nf->_fileno : -1;                                      \
	fd_opened(fd);                                                       \
	struct kio k = {old, t0, dur, flush_n(&s0, w) + file + 1, 0};        \
	if (w > 0) kio_flush(&k, &s0, w, pos, w);                            \
	if (file) kio_emit(&k, C_CLOSE, 0, 0, 0, 0);                         \
	struct rec r = {0};                                                  \
	r.call = C_FOPEN;                                                    \
	r.fd = -1;                                                           \
	r.oflags = mode_flags(mode);                                         \
	r.mode = 0666;                                                       \
	r.ret = nf ? fd : -(int64_t)saved;                                   \
	r.start = t0 + dur * k.i / k.n;                                      \
	r.dur = dur / k.n;                                                   \
	iotrace_emit(&r, abspath(path, buf), NULL);                          \
	errno = saved;                                                       \
	return nf

EXPORT FILE *freopen(const char *path, const char *mode, FILE *f) {
	REAL(freopen);
	FREOPEN_BODY(real_freopen(path, mode, f));
}
EXPORT FILE *freopen64(const char *path, const char *mode, FILE *f) {
	REAL(freopen64);
	FREOPEN_BODY(real_freopen64(path, mode, f));
}

/* fclose: the flush's write, then the close. */
EXPORT int fclose(FILE *f) {
	REAL(fclose);
	int fd = f ? f->_fileno : -1;
	if (!on() || !fd_file(fd)) {
		if (fd >= 0) fd_set_kind(fd, 0);
		return real_fclose(f);
	}
	struct snap s0;
	snap(f, &s0);
	int64_t w = pending(&s0), pos = -1;
	if (w > 0) {
		pos = kpos(fd);
		if (pos >= 0) pos += flush_delta(&s0);
		struct stat st;
		if (fd < FDKINDS && fdkind[fd] == 3 && syscall(SYS_fstat, fd, &st) == 0) pos = st.st_size; /* O_APPEND */
	}
	int64_t t0 = iotrace_now();
	t_in++;
	int rc = real_fclose(f);
	int saved = errno;
	int64_t dur = iotrace_now() - t0;
	t_in--;
	fd_set_kind(fd, 0);
	struct kio k = {fd, t0, dur, 1 + flush_n(&s0, w), 0};
	if (w > 0) kio_flush(&k, &s0, w, pos, rc == 0 ? w : -(int64_t)saved);
	kio_emit(&k, C_FCLOSE, 0, 0, rc == 0 ? 0 : -(int64_t)saved, 0);
	errno = saved;
	return rc;
}

EXPORT int fcloseall(void) {
	REAL(fcloseall);
	return real_fcloseall();
}

/* ---- stdio: reading ---- */

/* STDIO_CALL runs a call on a file stream with the stream's pointers
 * before it in s0, the call's time in t0 and dur, errno in saved. Every
 * wrapper tests, inline, whether the call can reach the kernel (glibc's
 * own test for getc and putc), and does the rest out of line, so that its
 * hot path saves no register. */
#define STDIO_CALL(F, T, V, REALCALL) STDIO_CALL2(F, T, V, REALCALL, REALCALL)

/* STDIO_CALL2: PASSCALL when the call is not recorded, else REALCALL. */
#define STDIO_CALL2(F, T, V, PASSCALL, REALCALL)                         \
	int fd_ = (F)->_fileno;                                              \
	if (!on() || !fd_file(fd_)) return PASSCALL;                         \
	struct snap s0;                                                      \
	snap((F), &s0);                                                      \
	int64_t t0 = iotrace_now();                                          \
	t_in++;                                                              \
	T V = REALCALL;                                                      \
	int saved = errno;                                                   \
	int64_t dur = iotrace_now() - t0;                                    \
	t_in--

#define SLOW __attribute__((noinline))

/* getc and its kin read the file only when the buffer is empty. */
static SLOW int getc_slow(FILE *f, int (*fn)(FILE *)) {
	STDIO_CALL(f, int, c, fn(f));
	stdio_read(f, &s0, c == EOF ? 0 : 1, -1, t0, dur, saved);
	errno = saved;
	return c;
}

/* single_threaded: glibc's flag (<sys/single_threaded.h>, 2.32): no
 * other thread can use a stream, so getc and putc need not lock it and
 * the hot path is glibc's own macro body, inline. Weak: an older glibc
 * has no flag (the address is 0) and every call goes to glibc. */
extern char __libc_single_threaded __attribute__((weak));
static inline int single_threaded(void) { return &__libc_single_threaded && __libc_single_threaded; }

/* GETC: getc NAME takes a byte in the buffer as getc_unlocked's macro
 * does (UNLOCKED, or a single thread), inline; the rest (glibc's NAME,
 * or the slow path on an empty buffer) is in NAME_rest, tail-called, so
 * that the wrapper saves no register. */
#define GETC(NAME, UNLOCKED)                                             \
	static SLOW int NAME##_rest(FILE *f) {                               \
		REAL(NAME);                                                      \
		if (f->_IO_read_ptr < f->_IO_read_end) return real_##NAME(f);    \
		return getc_slow(f, real_##NAME);                                \
	}                                                                    \
	EXPORT int NAME(FILE *f) {                                           \
		if (__builtin_expect(f->_IO_read_ptr < f->_IO_read_end, 1) && ((UNLOCKED) || single_threaded())) \
			return *(unsigned char *)f->_IO_read_ptr++;                  \
		return NAME##_rest(f);                                           \
	}

GETC(getc, 0)
GETC(fgetc, 0)
GETC(_IO_getc, 0)
GETC(getc_unlocked, 1)
GETC(fgetc_unlocked, 1)
/* __uflow: what the getc macros of <stdio.h> call on an empty buffer. */
GETC(__uflow, 0)

/* getchar is getc(stdin). */
EXPORT int getchar(void) {
	FILE *f = stdin;
	if (__builtin_expect(f->_IO_read_ptr < f->_IO_read_end, 1) && single_threaded()) return *(unsigned char *)f->_IO_read_ptr++;
	return getc_rest(f);
}
EXPORT int getchar_unlocked(void) {
	FILE *f = stdin;
	if (__builtin_expect(f->_IO_read_ptr < f->_IO_read_end, 1)) return *(unsigned char *)f->_IO_read_ptr++;
	return getc_unlocked_rest(f);
}

/* line_buffered_in: the stream's buffer holds the rest of a line (up to
 * delim), or the n bytes fgets takes (n < 0: no limit): the call does not
 * reach the kernel. */
static inline int line_buffered_in(FILE *f, int delim, int64_t n) {
	int64_t a = f->_IO_read_end > f->_IO_read_ptr ? f->_IO_read_end - f->_IO_read_ptr : 0;
	if (n >= 0 && a >= n) return 1;
	return a > 0 && memchr(f->_IO_read_ptr, delim, n >= 0 && n < a ? n : a) != NULL;
}

static SLOW char *fgets_slow(char *s, int n, FILE *f, char *(*fn)(char *, int, FILE *)) {
	STDIO_CALL(f, char *, v, fn(s, n, f));
	stdio_read(f, &s0, v ? (int64_t)strlen(v) : 0, -1, t0, dur, saved);
	errno = saved;
	return v;
}
static SLOW char *fgets_chk_slow(char *s, size_t size, int n, FILE *f, char *(*fn)(char *, size_t, int, FILE *)) {
	STDIO_CALL(f, char *, v, fn(s, size, n, f));
	stdio_read(f, &s0, v ? (int64_t)strlen(v) : 0, -1, t0, dur, saved);
	errno = saved;
	return v;
}

EXPORT char *fgets(char *s, int n, FILE *f) {
	REAL(fgets);
	if (n <= 1 || line_buffered_in(f, '\n', n - 1)) return real_fgets(s, n, f);
	return fgets_slow(s, n, f, real_fgets);
}
EXPORT char *fgets_unlocked(char *s, int n, FILE *f) {
	REAL(fgets_unlocked);
	if (n <= 1 || line_buffered_in(f, '\n', n - 1)) return real_fgets_unlocked(s, n, f);
	return fgets_slow(s, n, f, real_fgets_unlocked);
}
EXPORT char *__fgets_chk(char *s, size_t size, int n, FILE *f) {
	REAL(__fgets_chk);
	if (n <= 1 || line_buffered_in(f, '\n', n - 1)) return real___fgets_chk(s, size, n, f);
	return fgets_chk_slow(s, size, n, f, real___fgets_chk);
}
EXPORT char *__fgets_unlocked_chk(char *s, size_t size, int n, FILE *f) {
	REAL(__fgets_unlocked_chk);
	if (n <= 1 || line_buffered_in(f, '\n', n - 1)) return real___fgets_unlocked_chk(s, size, n, f);
	return fgets_chk_slow(s, size, n, f, real___fgets_unlocked_chk);
}

static SLOW ssize_t getdelim_slow(char **lp, size_t *np, int delim, FILE *f, ssize_t (*fn)(char **, size_t *, int, FILE *)) {
	STDIO_CALL(f, ssize_t, v, fn(lp, np, delim, f));
	stdio_read(f, &s0, v > 0 ? v : 0, -1, t0, dur, saved);
	errno = saved;
	return v;
}

/* getline is getdelim with '\n'. */
EXPORT ssize_t getline(char **lp, size_t *np, FILE *f) {
	REAL(getline);
	REAL(getdelim);
	if (line_buffered_in(f, '\n', -1)) return real_getline(lp, np, f);
	return getdelim_slow(lp, np, '\n', f, real_getdelim);
}
EXPORT ssize_t getdelim(char **lp, size_t *np, int delim, FILE *f) {
	REAL(getdelim);
	if (line_buffered_in(f, delim, -1)) return real_getdelim(lp, np, delim, f);
	return getdelim_slow(lp, np, delim, f, real_getdelim);
}
EXPORT ssize_t __getdelim(char **lp, size_t *np, int delim, FILE *f) {
	REAL(__getdelim);
	if (line_buffered_in(f, delim, -1)) return real___getdelim(lp, np, delim, f);
	return getdelim_slow(lp, np, delim, f, real___getdelim);
}

/* fread: glibc's fread reads size × nmemb bytes and returns whole items;
 * the shim asks for the bytes (size 1), so that it knows how many came,
 * and returns the items as glibc does. A request the buffer holds does
 * not reach the kernel. */
static inline int64_t avail_now(FILE *f) {
	return f->_IO_read_end > f->_IO_read_ptr ? f->_IO_read_end - f->_IO_read_ptr : 0;
}

static SLOW size_t fread_slow(void *b, size_t size, size_t nmemb, FILE *f, size_t (*fn)(void *, size_t, size_t, FILE *)) {
	size_t req = size * nmemb;
	STDIO_CALL2(f, size_t, got, fn(b, size, nmemb, f), fn(b, 1, req, f));
	stdio_read(f, &s0, (int64_t)got, (int64_t)req, t0, dur, saved);
	errno = saved;
	return got == req ? nmemb : got / size;
}
static SLOW size_t fread_chk_slow(void *b, size_t blen, size_t size, size_t nmemb, FILE *f, size_t (*fn)(void *, size_t, size_t, size_t, FILE *)) {
	size_t req = size * nmemb;
	STDIO_CALL2(f, size_t, got, fn(b, blen, size, nmemb, f), fn(b, blen, 1, req, f));
	stdio_read(f, &s0, (int64_t)got, (int64_t)req, t0, dur, saved);
	errno = saved;
	return got == req ? nmemb : got / size;
}

#define FREAD_FAST(REQ) ((REQ) == 0 || (REQ) <= (size_t)avail_now(f))

EXPORT size_t fread(void *b, size_t size, size_t nmemb, FILE *f) {
	REAL(fread);
	if (FREAD_FAST(size * nmemb)) return real_fread(b, size, nmemb, f);
	return fread_slow(b, size, nmemb, f, real_fread);
}
EXPORT size_t fread_unlocked(void *b, size_t size, size_t nmemb, FILE *f) {
	REAL(fread_unlocked);
	if (FREAD_FAST(size * nmemb)) return real_fread_unlocked(b, size, nmemb, f);
	return fread_slow(b, size, nmemb, f, real_fread_unlocked);
}
/* The _chk forms check size × nmemb against the buffer: a product that
 * overflows goes to glibc as it is, which fails it. */
EXPORT size_t __fread_chk(void *b, size_t blen, size_t size, size_t nmemb, FILE *f) {
	REAL(__fread_chk);
	if ((size != 0 && nmemb > SIZE_MAX / size) || FREAD_FAST(size * nmemb)) return real___fread_chk(b, blen, size, nmemb, f);
	return fread_chk_slow(b, blen, size, nmemb, f, real___fread_chk);
}
EXPORT size_t __fread_unlocked_chk(void *b, size_t blen, size_t size, size_t nmemb, FILE *f) {
	REAL(__fread_unlocked_chk);
	if ((size != 0 && nmemb > SIZE_MAX / size) || FREAD_FAST(size * nmemb)) return real___fread_unlocked_chk(b, blen, size, nmemb, f);
	return fread_chk_slow(b, blen, size, nmemb, f, real___fread_unlocked_chk);
}

/* ---- stdio: writing ---- */

/* putc and its kin write the file only when the buffer is full (or the
 * stream is line buffered or unbuffered: glibc then keeps no room). */
static SLOW int putc_slow(int c, FILE *f, int (*fn)(int, FILE *)) {
	STDIO_CALL(f, int, v, fn(c, f));
	stdio_write(f, &s0, v == EOF ? 0 : 1, t0, dur, saved);
	errno = saved;
	return v;
}

/* PUTC: putc NAME puts a byte in a buffer with room as putc_unlocked's
 * macro does (UNLOCKED, or a single thread), inline; the rest is in
 * NAME_rest, tail-called. */
#define PUTC(NAME, UNLOCKED)                                             \
	static SLOW int NAME##_rest(int c, FILE *f) {                        \
		REAL(NAME);                                                      \
		if (f->_IO_write_ptr < f->_IO_write_end) return real_##NAME(c, f); \
		return putc_slow(c, f, real_##NAME);                             \
	}                                                                    \
	EXPORT int NAME(int c, FILE *f) {                                    \
		if (__builtin_expect(f->_IO_write_ptr < f->_IO_write_end, 1) && ((UNLOCKED) || single_threaded())) \
			return (unsigned char)(*f->_IO_write_ptr++ = (char)c);       \
		return NAME##_rest(c, f);                                        \
	}

PUTC(putc, 0)
PUTC(fputc, 0)
PUTC(_IO_putc, 0)
PUTC(putc_unlocked, 1)
PUTC(fputc_unlocked, 1)

/* putchar is putc(c, stdout). */
EXPORT int putchar(int c) {
	FILE *f = stdout;
	if (__builtin_expect(f->_IO_write_ptr < f->_IO_write_end, 1) && single_threaded()) return (unsigned char)(*f->_IO_write_ptr++ = (char)c);
	return putc_rest(c, f);
}
EXPORT int putchar_unlocked(int c) {
	FILE *f = stdout;
	if (__builtin_expect(f->_IO_write_ptr < f->_IO_write_end, 1)) return (unsigned char)(*f->_IO_write_ptr++ = (char)c);
	return putc_unlocked_rest(c, f);
}

/* __overflow: what the putc macros of <stdio.h> call on a full buffer
 * (with EOF: a flush). */
static SLOW int overflow_slow(FILE *f, int c, int (*fn)(FILE *, int)) {
	STDIO_CALL(f, int, v, fn(f, c));
	stdio_write(f, &s0, v == EOF || c == EOF ? 0 : 1, t0, dur, saved);
	errno = saved;
	return v;
}
EXPORT int __overflow(FILE *f, int c) {
	REAL(__overflow);
	if (__builtin_expect(f->_IO_write_ptr < f->_IO_write_end && c != EOF, 1)) return real___overflow(f, c);
	return overflow_slow(f, c, real___overflow);
}

/* room: the stream takes n bytes without writing (not line buffered). */
static inline int room(FILE *f, size_t n) {
	return !(f->_flags & IOF_LINE_BUF) && f->_IO_write_end > f->_IO_write_ptr && (size_t)(f->_IO_write_end - f->_IO_write_ptr) >= n;
}

static SLOW int fputs_slow(const char *s, size_t n, FILE *f, int (*fn)(const char *, FILE *)) {
	STDIO_CALL(f, int, v, fn(s, f));
	stdio_write(f, &s0, v == EOF ? 0 : (int64_t)n, t0, dur, saved);
	errno = saved;
	return v;
}

EXPORT int fputs(const char *s, FILE *f) {
	REAL(fputs);
	size_t n = strlen(s);
	if (room(f, n)) return real_fputs(s, f);
	return fputs_slow(s, n, f, real_fputs);
}
EXPORT int fputs_unlocked(const char *s, FILE *f) {
	REAL(fputs_unlocked);
	size_t n = strlen(s);
	if (room(f, n)) return real_fputs_unlocked(s, f);
	return fputs_slow(s, n, f, real_fputs_unlocked);
}
static SLOW int puts_slow(const char *s, size_t n, int (*fn)(const char *)) {
	FILE *f = stdout;
	STDIO_CALL(f, int, v, fn(s));
	stdio_write(f, &s0, v == EOF ? 0 : (int64_t)n, t0, dur, saved);
	errno = saved;
	return v;
}
EXPORT int puts(const char *s) {
	REAL(puts);
	size_t n = strlen(s) + 1;
	if (room(stdout, n)) return real_puts(s);
	return puts_slow(s, n, real_puts);
}

/* fwrite: as fread, the shim writes bytes and returns glibc's items. */
static SLOW size_t fwrite_slow(const void *b, size_t size, size_t nmemb, FILE *f, size_t (*fn)(const void *, size_t, size_t, FILE *)) {
	size_t req = size * nmemb;
	STDIO_CALL2(f, size_t, v, fn(b, size, nmemb, f), fn(b, 1, req, f));
	stdio_write(f, &s0, (int64_t)v, t0, dur, saved);
	errno = saved;
	return v == req ? nmemb : v / size;
}
EXPORT size_t fwrite(const void *b, size_t size, size_t nmemb, FILE *f) {
	REAL(fwrite);
	size_t req = size * nmemb;
	if (req == 0 || room(f, req)) return real_fwrite(b, size, nmemb, f);
	return fwrite_slow(b, size, nmemb, f, real_fwrite);
}
EXPORT size_t fwrite_unlocked(const void *b, size_t size, size_t nmemb, FILE *f) {
	REAL(fwrite_unlocked);
	size_t req = size * nmemb;
	if (req == 0 || room(f, req)) return real_fwrite_unlocked(b, size, nmemb, f);
	return fwrite_slow(b, size, nmemb, f, real_fwrite_unlocked);
}

/* The printf family: the bytes printed are the result. How many is not
 * known before the call, so when the buffer has room for PRINTF_ROOM
 * bytes the call is not timed (two clock reads would double its cost):
 * should it flush all the same, its writes get the time it ended and no
 * duration. */
#define PRINTF_ROOM 512

static SLOW void printf_flushed(FILE *f, const struct snap *s0, int v, int saved) {
	if (on() && fd_file(f->_fileno)) stdio_write(f, s0, v > 0 ? v : 0, iotrace_now(), 0, saved);
}
static SLOW int vfprintf_slow(FILE *f, int flag, const char *fmt, va_list ap, int (*fn)(FILE *, const char *, va_list), int (*chk)(FILE *, int, const char *, va_list)) {
	STDIO_CALL(f, int, v, fn ? fn(f, fmt, ap) : chk(f, flag, fmt, ap));
	stdio_write(f, &s0, v > 0 ? v : 0, t0, dur, saved);
	errno = saved;
	return v;
}

/* print runs vfprintf (fn) or __vfprintf_chk (chk). */
static inline int print(FILE *f, int flag, const char *fmt, va_list ap, int (*fn)(FILE *, const char *, va_list), int (*chk)(FILE *, int, const char *, va_list)) {
	if (!room(f, PRINTF_ROOM)) return vfprintf_slow(f, flag, fmt, ap, fn, chk);
	struct snap s0;
	s0.wbase = f->_IO_write_base;
	s0.wptr = f->_IO_write_ptr;
	s0.wend = f->_IO_write_end;
	s0.flags = f->_flags;
	t_in++;
	int v = fn ? fn(f, fmt, ap) : chk(f, flag, fmt, ap);
	t_in--;
	if (__builtin_expect(v >= 0 && f->_IO_write_ptr - s0.wptr == v, 1)) return v;
	int saved = errno;
	printf_flushed(f, &s0, v, saved);
	errno = saved;
	return v;
}

EXPORT int vfprintf(FILE *f, const char *fmt, va_list ap) {
	REAL(vfprintf);
	return print(f, 0, fmt, ap, real_vfprintf, NULL);
}
EXPORT int vprintf(const char *fmt, va_list ap) {
	REAL(vfprintf);
	return print(stdout, 0, fmt, ap, real_vfprintf, NULL);
}
EXPORT int __vfprintf_chk(FILE *f, int flag, const char *fmt, va_list ap) {
	REAL(__vfprintf_chk);
	return print(f, flag, fmt, ap, NULL, real___vfprintf_chk);
}
EXPORT int __vprintf_chk(int flag, const char *fmt, va_list ap) {
	REAL(__vfprintf_chk);
	return print(stdout, flag, fmt, ap, NULL, real___vfprintf_chk);
}
EXPORT int fprintf(FILE *f, const char *fmt, ...) {
	REAL(vfprintf);
	va_list ap;
	va_start(ap, fmt);
	int v = print(f, 0, fmt, ap, real_vfprintf, NULL);
	va_end(ap);
	return v;
}
EXPORT int printf(const char *fmt, ...) {
	REAL(vfprintf);
	va_list ap;
	va_start(ap, fmt);
	int v = print(stdout, 0, fmt, ap, real_vfprintf, NULL);
	va_end(ap);
	return v;
}
EXPORT int __fprintf_chk(FILE *f, int flag, const char *fmt, ...) {
	REAL(__vfprintf_chk);
	va_list ap;
	va_start(ap, fmt);
	int v = print(f, flag, fmt, ap, NULL, real___vfprintf_chk);
	va_end(ap);
	return v;
}
EXPORT int __printf_chk(int flag, const char *fmt, ...) {
	REAL(__vfprintf_chk);
	va_list ap;
	va_start(ap, fmt);
	int v = print(stdout, flag, fmt, ap, NULL, real___vfprintf_chk);
	va_end(ap);
	return v;
}

/* ---- stdio: flushing and seeking ---- */

static int flush_one(FILE *f, int (*fn)(FILE *)) {
	STDIO_CALL(f, int, rc, fn(f));
	stdio_flush(f, &s0, t0, dur, saved);
	errno = saved;
	return rc;
}

/* glibc's list of its streams and its lock (libio, exported since 2.1;
 * the list's head is a struct _IO_FILE_plus, which begins with a FILE). */
extern FILE *_IO_list_all __attribute__((weak));
void _IO_list_lock(void) __attribute__((weak));
void _IO_list_unlock(void) __attribute__((weak));

/* overflow_eof is what glibc's fflush(NULL) and exit do to a stream
 * holding bytes to write: _IO_OVERFLOW(f, EOF), which writes them (not
 * fflush(f), which then also forgets the kernel's position). */
static int overflow_eof(FILE *f) {
	REAL(__overflow);
	return real___overflow(f, EOF);
}

/* flush_streams makes, one stream at a time (so that the shim sees
 * each), the calls glibc makes for all of them: fflush(NULL) flushes each
 * file stream holding bytes to write; exit (_IO_cleanup) does that, then
 * makes each used stream unbuffered, which syncs it: a stream that read
 * ahead seeks the file back to where the program read (fsync is fn). */
static void flush_streams(int (*fsync_fn)(FILE *), int at_exit) {
	if (!&_IO_list_all) return;
	if (&_IO_list_lock) _IO_list_lock();
	for (int pass = 0; pass < 1 + at_exit; pass++)
		for (FILE *f = _IO_list_all; f; f = f->_chain) {
			if (((unsigned)f->_flags & IOF_MAGIC_MASK) != IOF_MAGIC) continue;
			int w = f->_mode <= 0 && f->_IO_write_ptr > f->_IO_write_base;
			int back = !(f->_flags & IOF_UNBUFFERED) && f->_mode != 0 && f->_IO_read_ptr != f->_IO_read_end;
			if (pass == 0 && w && fd_file(f->_fileno)) flush_one(f, overflow_eof);
			if (pass == 1 && back && fsync_fn && fd_file(f->_fileno)) flush_one(f, fsync_fn);
		}
	if (&_IO_list_unlock) _IO_list_unlock();
}

EXPORT int fflush(FILE *f) {
	REAL(fflush);
	if (!f) {
		if (on()) flush_streams(NULL, 0);
		return real_fflush(f);
	}
	return flush_one(f, real_fflush);
}
EXPORT int fflush_unlocked(FILE *f) {
	REAL(fflush_unlocked);
	if (!f) {
		if (on()) flush_streams(NULL, 0);
		return real_fflush_unlocked(f);
	}
	return flush_one(f, real_fflush_unlocked);
}

/* stdio_seek: glibc's fseek (_IO_new_file_seekoff, every fseek,
 * fsetpos and rewind), step by step from the stream's state before it
 * (s0) and the kernel's position then (pos0, known when it flushes):
 * the flush of what the stream held (a stream that read first seeks back
 * to where its writes begin), the fstat of a stream's first buffer; then
 * the target: SEEK_CUR counts from glibc's idea of the position (an
 * lseek SEEK_CUR when it has none), SEEK_END from an fstat of the size.
 * A target in the buffer keeps it and seeks the kernel to where it was
 * (a "resync"); else glibc seeks to the start of the target's block and
 * reads up to the target (the whole buffer unless the stream was empty)
 * and, when that read is short (past the end), seeks on by the rest. The
 * results come from the stream after the call (s1: its _offset is the
 * kernel's position; its read pointers the bytes read), the length of a
 * short read from the file's size. */
struct scall {
	uint16_t call;
	uint32_t whence;
	int64_t off, size, ret;
};

static void stdio_seek(FILE *f, const struct snap *s0, int64_t pos0, int rc, int err, int64_t offset, int whence, int64_t t0, int64_t dur) {
	struct snap s1;
	snap(f, &s1);
	struct scall c[8];
	int n = 0;
#define SCALL(CALL, OFF, SIZE, RET, WH) (c[n++] = (struct scall){CALL, (uint32_t)(WH), OFF, SIZE, RET})
	int exact = s0->rbase == s0->rend && s0->wbase == s0->wptr;
	int64_t koff = s0->off;
	char *bbase = s0->bbase, *rbase = s0->rbase, *rptr = s0->rptr, *rend = s0->rend;
	if (s0->wptr > s0->wbase || (s0->flags & IOF_PUTTING)) {
		int64_t w = s0->wptr > s0->wbase ? s0->wptr - s0->wbase : 0;
		if (w > 0) {
			int64_t d = flush_delta(s0), at = pos0 < 0 ? -1 : pos0 + d;
			if (d != 0) SCALL(C_LSEEK, d, 0, at, SEEK_CUR);
			struct stat st;
			if ((s0->flags & IOF_APPENDING) && syscall(SYS_fstat, f->_fileno, &st) == 0) at = st.st_size - w;
			int failed = (s1.flags & _IO_ERR_SEEN) && !(s0->flags & _IO_ERR_SEEN);
			SCALL(C_WRITE, at, w, failed ? -(int64_t)err : w, 0);
			if (failed) goto emit;
			koff = (s0->flags & IOF_APPENDING) ? -1 : d != 0 ? at + w : koff >= 0 ? koff + w : -1;
			rbase = rptr = rend = bbase;
		} else {
			rbase = bbase;
			if (s0->wptr > rend) rend = s0->wptr;
			rptr = s0->wptr;
		}
	}
	if (!bbase) {
		if (!(s0->flags & IOF_UNBUFFERED)) SCALL(C_FSTAT, 0, 0, 0, 0);
		bbase = rbase = rptr = rend = s1.bbase;
	}
	int64_t bs = bufsize(&s1), target;
	switch (whence) {
	case SEEK_CUR:
		offset -= rend - rptr;
		if (koff < 0) goto dumb;
		target = offset + koff;
		if (target < 0) goto emit; /* EINVAL, no call */
		break;
	case SEEK_SET:
		target = offset;
		break;
	case SEEK_END:
		SCALL(C_FSTAT, 0, 0, 0, 0);
		if (rc != 0 || s1.off < 0) goto emit;
		target = s1.off - (s1.rend - s1.rptr);
		break;
	default:
		goto emit;
	}
	if (koff >= 0 && rbase && !(s0->flags & IOF_IN_BACKUP)) {
		int64_t first = koff - (rend - bbase);
		if (target >= first && target < koff) {
			SCALL(C_LSEEK, koff, 0, koff, SEEK_SET); /* resync */
			goto emit;
		}
	}
	if (s0->flags & IOF_NO_READS) {
		offset = target;
		whence = SEEK_SET;
		goto dumb;
	}
	{
		int64_t at = target & ~(bs - 1), delta = target - at;
		if (delta > bs) {
			at = target;
			delta = 0;
		}
		SCALL(C_LSEEK, at, 0, at >= 0 ? at : -(int64_t)err, SEEK_SET);
		if (at < 0 || delta == 0) goto emit;
		int64_t req = exact ? delta : bs;
		if (s1.rptr > s1.bbase) { /* it read up to the target at least */
			SCALL(C_READ, at, req, s1.rend - s1.bbase, 0);
			goto emit;
		}
		struct stat st;
		int64_t got = syscall(SYS_fstat, f->_fileno, &st) == 0 && st.st_size > at ? min64(st.st_size - at, req) : 0;
		if (got >= delta) got = 0;
		SCALL(C_READ, at, req, got, 0);
		offset = delta - got;
		whence = SEEK_CUR;
	}
dumb:
	SCALL(C_LSEEK, offset, 0, rc == 0 ? s1.off : -(int64_t)err, whence);
emit:;
#undef SCALL
	struct kio k = {f->_fileno, t0, dur, n, 0};
	for (int i = 0; i < n; i++) kio_emit(&k, c[i].call, c[i].off, c[i].size, c[i].ret, c[i].whence);
}

#define FSEEK_BODY(T, REALCALL, OFF, WHENCE)                             \
	int fd = f ? f->_fileno : -1;                                        \
	if (!on() || !fd_file(fd)) return REALCALL;                          \
	struct snap s0;                                                      \
	snap(f, &s0);                                                        \
	int64_t pos0 = s0.wptr > s0.wbase ? kpos(fd) : -1;                   \
	int64_t t0 = iotrace_now();                                          \
	t_in++;                                                              \
	T rc = REALCALL;                                                     \
	int saved = errno;                                                   \
	int64_t dur = iotrace_now() - t0;                                    \
	t_in--;                                                              \
	stdio_seek(f, &s0, pos0, rc, saved, (OFF), (WHENCE), t0, dur);       \
	errno = saved;                                                       \
	return rc

EXPORT int fseek(FILE *f, long off, int whence) {
	REAL(fseek);
	FSEEK_BODY(int, real_fseek(f, off, whence), off, whence);
}
EXPORT int fseeko(FILE *f, off_t off, int whence) {
	REAL(fseeko);
	FSEEK_BODY(int, real_fseeko(f, off, whence), off, whence);
}
EXPORT int fseeko64(FILE *f, off64_t off, int whence) {
	REAL(fseeko64);
	FSEEK_BODY(int, real_fseeko64(f, off, whence), off, whence);
}
EXPORT int fsetpos(FILE *f, const fpos_t *p) {
	REAL(fsetpos);
	FSEEK_BODY(int, real_fsetpos(f, p), p->__pos, SEEK_SET);
}
EXPORT int fsetpos64(FILE *f, const fpos64_t *p) {
	REAL(fsetpos64);
	FSEEK_BODY(int, real_fsetpos64(f, p), p->__pos, SEEK_SET);
}
EXPORT void rewind(FILE *f) {
	REAL(rewind);
	int fd = f ? f->_fileno : -1;
	if (!on() || !fd_file(fd)) {
		real_rewind(f);
		return;
	}
	struct snap s0;
	snap(f, &s0);
	int64_t pos0 = s0.wptr > s0.wbase ? kpos(fd) : -1;
	int64_t t0 = iotrace_now();
	t_in++;
	real_rewind(f);
	int saved = errno;
	int64_t dur = iotrace_now() - t0;
	t_in--;
	stdio_seek(f, &s0, pos0, 0, saved, 0, SEEK_SET, t0, dur);
	errno = saved;
}

/* ftell (ftello, fgetpos): glibc asks the kernel only when it does not
 * know the position (_offset -1: a new stream, one read to its end or
 * flushed): lseek(fd, 0, SEEK_CUR); and a stream in append mode holding
 * bytes seeks to the end first (lseek(fd, 0, SEEK_END)), which it then
 * knows. The hot path is that test. */
static inline int ftell_appends(FILE *f) {
	return f->_IO_buf_base && f->_IO_write_ptr > f->_IO_write_base && (f->_flags & IOF_APPENDING);
}

/* ftell_adjust: what glibc adds to the kernel's position for the bytes
 * the stream holds (do_ftell). */
static int64_t ftell_adjust(FILE *f) {
	if (!f->_IO_buf_base) return 0;
	if (f->_IO_write_ptr <= f->_IO_write_base) return -(f->_IO_read_end - f->_IO_read_ptr);
	if (f->_flags & IOF_APPENDING) return f->_IO_write_ptr - f->_IO_write_base;
	return f->_IO_write_ptr - f->_IO_read_end;
}

static SLOW void ftell_rec(FILE *f, int app, int64_t adj, int64_t pos, int err, int64_t t0, int64_t dur) {
	struct kio k = {f->_fileno, t0, dur, 1, 0};
	if (app) kio_emit(&k, C_LSEEK, 0, 0, f->_offset >= 0 ? f->_offset : -(int64_t)err, SEEK_END);
	else kio_emit(&k, C_LSEEK, 0, 0, pos >= 0 ? pos - adj : -(int64_t)err, SEEK_CUR);
}

#define FTELL_BODY(T, REALCALL, POS)                                     \
	int fd = f->_fileno;                                                 \
	int app = ftell_appends(f);                                          \
	if ((!app && f->_offset >= 0) || !on() || !fd_file(fd)) return REALCALL; \
	int64_t adj = ftell_adjust(f);                                       \
	int64_t t0 = iotrace_now();                                          \
	t_in++;                                                              \
	T v = REALCALL;                                                      \
	int saved = errno;                                                   \
	int64_t dur = iotrace_now() - t0;                                    \
	t_in--;                                                              \
	ftell_rec(f, app, adj, (POS), saved, t0, dur);                       \
	errno = saved;                                                       \
	return v

EXPORT long ftell(FILE *f) {
	REAL(ftell);
	FTELL_BODY(long, real_ftell(f), v);
}
EXPORT off_t ftello(FILE *f) {
	REAL(ftello);
	FTELL_BODY(off_t, real_ftello(f), v);
}
EXPORT off64_t ftello64(FILE *f) {
	REAL(ftello64);
	FTELL_BODY(off64_t, real_ftello64(f), v);
}
EXPORT int fgetpos(FILE *f, fpos_t *p) {
	REAL(fgetpos);
	FTELL_BODY(int, real_fgetpos(f, p), v == 0 ? (int64_t)p->__pos : -1);
}
EXPORT int fgetpos64(FILE *f, fpos64_t *p) {
	REAL(fgetpos64);
	FTELL_BODY(int, real_fgetpos64(f, p), v == 0 ? (int64_t)p->__pos : -1);
}

/* ---- I/O the shim cannot see ----
 *
 * io_uring and Linux AIO hand requests to the kernel without a call per
 * request. The shim cannot record that I/O; it records, once per process
 * and kind, that the program set it up (C_UNSEEN), so that iotrace record
 * says so: through liburing (io_uring_queue_init, io_uring_setup), libaio
 * (io_queue_init, io_setup) and syscall(2). (POSIX AIO, whose calls
 * glibc's threads make inside libc, is recorded request by request,
 * below.)
 * (A program that makes the system call itself, as liburing's own
 * functions do inside the library, is not noticed.) */
static uint32_t unseen_noted;

static void note_unseen(uint32_t what) {
	if (!active || t_in) return;
	if (__atomic_fetch_or(&unseen_noted, what, __ATOMIC_RELAXED) & what) return;
	struct rec r = {0};
	r.call = C_UNSEEN;
	r.fd = -1;
	r.oflags = what;
	r.start = iotrace_now();
	iotrace_emit(&r, NULL, NULL);
}

EXPORT long syscall(long n, ...) {
	REAL(syscall);
	va_list ap;
	va_start(ap, n);
	long a = va_arg(ap, long), b = va_arg(ap, long), c = va_arg(ap, long);
	long d = va_arg(ap, long), e = va_arg(ap, long), f = va_arg(ap, long);
	va_end(ap);
#ifdef SYS_io_uring_setup
	if (n == SYS_io_uring_setup) note_unseen(UNSEEN_IO_URING);
#endif
	if (n == SYS_io_setup) note_unseen(UNSEEN_AIO);
	return real_syscall(n, a, b, c, d, e, f);
}

/* liburing's and libaio's set-up functions (their prototypes here: the
 * shim builds without their headers; the arguments pass through). */
EXPORT int io_uring_queue_init(unsigned entries, void *ring, unsigned flags) {
	REAL(io_uring_queue_init);
	if (!real_io_uring_queue_init) return -ENOSYS; /* not loaded: never called */
	note_unseen(UNSEEN_IO_URING);
	return real_io_uring_queue_init(entries, ring, flags);
}
EXPORT int io_uring_queue_init_params(unsigned entries, void *ring, void *p) {
	REAL(io_uring_queue_init_params);
	if (!real_io_uring_queue_init_params) return -ENOSYS; /* not loaded: never called */
	note_unseen(UNSEEN_IO_URING);
	return real_io_uring_queue_init_params(entries, ring, p);
}
EXPORT int io_uring_setup(unsigned entries, void *p) {
	REAL(io_uring_setup);
	if (!real_io_uring_setup) return -ENOSYS; /* not loaded: never called */
	note_unseen(UNSEEN_IO_URING);
	return real_io_uring_setup(entries, p);
}
EXPORT int io_queue_init(int maxevents, void *ctxp) {
	REAL(io_queue_init);
	if (!real_io_queue_init) return -ENOSYS; /* not loaded: never called */
	note_unseen(UNSEEN_AIO);
	return real_io_queue_init(maxevents, ctxp);
}
EXPORT int io_setup(int maxevents, void *ctxp) {
	REAL(io_setup);
	if (!real_io_setup) return -ENOSYS; /* not loaded: never called */
	note_unseen(UNSEEN_AIO);
	return real_io_setup(maxevents, ctxp);
}

/* POSIX AIO requests on recorded files (aio_read, aio_write): glibc's
 * threads make their preads and pwrites inside libc, where the shim
 * cannot see them. It records each request as the pread or pwrite it
 * stands for, at the offset the request named, when the program
 * collects its result (aio_return), from the request's submission to
 * then; inside an MPI-IO call's submission (Open MPI's ompio makes
 * MPI_File_iwrite_at so), as made inside it (IN_MPIIO). A request whose
 * result the program never collects, or beyond AIO_SLOTS pending at
 * once, is not recorded. lio_listio's requests are kept the same way. */
struct aio_pending {
	const void *cb;
	int64_t t0, off, size;
	int fd;
	uint16_t call, flags;
};
#define AIO_SLOTS 256
static struct aio_pending aio_slots[AIO_SLOTS];
static int aio_lock;

static void aio_lock_take(void) {
	while (__atomic_exchange_n(&aio_lock, 1, __ATOMIC_ACQUIRE)) sched_yield();
}
static void aio_lock_give(void) { __atomic_store_n(&aio_lock, 0, __ATOMIC_RELEASE); }

static void aio_submitted(const void *cb, uint16_t call, int fd, int64_t off, int64_t size, int64_t t0) {
	struct aio_pending p = {cb, t0, off, size, fd, call, t_mpiio > 0 ? RF_IN_MPIIO : 0};
	aio_lock_take();
	int free_ = -1;
	for (int i = 0; i < AIO_SLOTS; i++) {
		if (aio_slots[i].cb == cb) { /* submitted again without its result collected */
			free_ = i;
			break;
		}
		if (!aio_slots[i].cb && free_ < 0) free_ = i;
	}
	if (free_ >= 0) aio_slots[free_] = p;
	aio_lock_give();
}

static int aio_collected(const void *cb, struct aio_pending *out) {
	int found = 0;
	aio_lock_take();
	for (int i = 0; i < AIO_SLOTS; i++) {
		if (aio_slots[i].cb == cb) {
			*out = aio_slots[i];
			aio_slots[i].cb = NULL;
			found = 1;
			break;
		}
	}
	aio_lock_give();
	return found;
}

#define AIO_SUBMIT(name, T, CALL)                                                     \
	EXPORT int name(T *cb) {                                                          \
		REAL(name);                                                                   \
		if (!real_##name) { /* not loaded: never called */                            \
			errno = ENOSYS;                                                           \
			return -1;                                                                \
		}                                                                             \
		int rec = cb && on() && fd_file(cb->aio_fildes);                              \
		int64_t t0 = rec ? iotrace_now() : 0;                                         \
		int v = real_##name(cb);                                                      \
		if (rec && v == 0)                                                            \
			aio_submitted(cb, CALL, cb->aio_fildes, cb->aio_offset, (int64_t)cb->aio_nbytes, t0); \
		return v;                                                                     \
	}
AIO_SUBMIT(aio_read, struct aiocb, C_PREAD)
AIO_SUBMIT(aio_write, struct aiocb, C_PWRITE)
AIO_SUBMIT(aio_read64, struct aiocb64, C_PREAD)
AIO_SUBMIT(aio_write64, struct aiocb64, C_PWRITE)

#define AIO_RETURN(name, T)                                                           \
	EXPORT ssize_t name(T *cb) {                                                      \
		REAL(name);                                                                   \
		if (!real_##name) {                                                           \
			errno = ENOSYS;                                                           \
			return -1;                                                                \
		}                                                                             \
		ssize_t v = real_##name(cb);                                                  \
		int saved = errno;                                                            \
		struct aio_pending p;                                                         \
		if (cb && aio_collected(cb, &p) && active && !t_in) {                         \
			struct rec r = {0};                                                       \
			r.call = p.call;                                                          \
			r.fd = p.fd;                                                              \
			r.off = p.off;                                                            \
			r.size = p.size;                                                          \
			r.ret = v < 0 ? -(int64_t)saved : (int64_t)v;                             \
			r.start = p.t0;                                                           \
			r.dur = iotrace_now() - p.t0;                                             \
			r.flags = p.flags;                                                        \
			iotrace_emit(&r, NULL, NULL);                                             \
		}                                                                             \
		errno = saved;                                                                \
		return v;                                                                     \
	}
AIO_RETURN(aio_return, struct aiocb)
AIO_RETURN(aio_return64, struct aiocb64)

/* lio_listio submits a list of requests at once: each read or write of a
 * recorded file is kept as aio_read's and aio_write's are, and recorded
 * when aio_return collects it. (Requests glibc refused to queue come back
 * with an error that aio_return gives too.) */
#define AIO_LIST(name, T)                                                             \
	EXPORT int name(int mode, T *const list[], int n, struct sigevent *sev) {        \
		REAL(name);                                                                   \
		if (!real_##name) {                                                           \
			errno = ENOSYS;                                                           \
			return -1;                                                                \
		}                                                                             \
		int rec = on() && list;                                                       \
		int64_t t0 = rec ? iotrace_now() : 0;                                         \
		int v = real_##name(mode, list, n, sev);                                      \
		int saved = errno;                                                            \
		for (int i = 0; rec && i < n; i++) {                                          \
			T *cb = list[i];                                                          \
			if (!cb || (cb->aio_lio_opcode != LIO_READ && cb->aio_lio_opcode != LIO_WRITE)) continue; \
			if (!fd_file(cb->aio_fildes)) continue;                                   \
			aio_submitted(cb, cb->aio_lio_opcode == LIO_READ ? C_PREAD : C_PWRITE, cb->aio_fildes, \
			              cb->aio_offset, (int64_t)cb->aio_nbytes, t0);               \
		}                                                                             \
		errno = saved;                                                                \
		return v;                                                                     \
	}
AIO_LIST(lio_listio, struct aiocb)
AIO_LIST(lio_listio64, struct aiocb64)

/* ---- processes started without fork ---- */

/* posix_spawn starts its process without fork's handlers (clone with
 * CLONE_VFORK): the spawning thread forgets its usage reading, as at a
 * fork (fw_forget). Nothing else is recorded here: the child's spool
 * says it started. */
EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *attr,
                       char *const argv[], char *const envp[]) {
	REAL(posix_spawn);
	fw_forget();
	return real_posix_spawn(pid, path, fa, attr, argv, envp);
}
EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *attr,
                        char *const argv[], char *const envp[]) {
	REAL(posix_spawnp);
	fw_forget();
	return real_posix_spawnp(pid, file, fa, attr, argv, envp);
}

/* ---- exit ---- */

/* shim_exit runs in exit(), after the handlers the program registered
 * (the shim's was registered before them): it does to the file streams
 * what glibc is about to (flushes those that hold bytes, seeks back those
 * that read ahead), so that those calls are recorded. */
static void exit_record(int status) {
	/* A vfork child shares its parent's memory, spool included: its
	 * _exit (an exec that failed) is not its parent's. */
	if (hdr && (uint32_t)syscall(SYS_getpid) != hdr->pid) return;
	struct rec r = {0};
	r.call = C_EXIT;
	r.fd = -1;
	r.start = iotrace_now();
	r.ret = status & 0xff;
	iotrace_emit(&r, NULL, NULL);
}

static void shim_exit(int status, void *arg) {
	(void)arg;
	if (!active || t_in) return;
	if (on()) {
		static int (*flush)(FILE *);
		if (!flush) flush = (int (*)(FILE *))dlsym(RTLD_NEXT, "fflush");
		flush_streams(flush, 1);
	}
	/* The exit status: the encoder ends the process with it (a process
	 * killed by a signal has none). */
	exit_record(status);
}

/* _exit and _Exit end the process without exit's handlers. */
EXPORT void _exit(int status) {
	REAL(_exit);
	if (active && !t_in) exit_record(status);
	real__exit(status);
	__builtin_unreachable();
}
EXPORT void _Exit(int status) {
	REAL(_Exit);
	if (active && !t_in) exit_record(status);
	real__Exit(status);
	__builtin_unreachable();
}
