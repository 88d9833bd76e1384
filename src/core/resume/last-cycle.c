/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "torpor-build.h"

#include "config.h"
#include "last-cycle.h"
#include "log.h"
#include "resume.h"
#include "snapshot.h"
#include "write-all.h"

#define TMP_FILE LAST_CYCLE_FILE ".new"

/* One line of the file: its key and where its number lives. */
struct lc_key {
	char name[32];
	size_t offset;		/* of a uint64_t in struct last_cycle */
};

#define LC_FIELD(f)	offsetof(struct last_cycle, f)

static const struct lc_key fixed_keys[] = {
	{ "started", LC_FIELD(started) },
	{ "pages", LC_FIELD(pages) },
	{ "page_size", LC_FIELD(page_size) },
	{ "stored_bytes", LC_FIELD(stored_bytes) },
	{ "resumed_at", LC_FIELD(resumed_at) },
	{ "resume_usec", LC_FIELD(resume_usec) },
	{ "resume_pages", LC_FIELD(resume_pages) },
	{ "verified_at", LC_FIELD(verified_at) },
};

#define N_FIXED (sizeof(fixed_keys) / sizeof(fixed_keys[0]))
/* The fixed keys, "test", "error", one "usec.PHASE" per phase, and
 * "verify_intact", "verify_uuid". */
#define N_KEYS (N_FIXED + 2 + CYCLE_N_PHASES + 2)
#define KEY_VERIFY_INTACT (N_FIXED + 2 + CYCLE_N_PHASES)
#define KEY_VERIFY_UUID (KEY_VERIFY_INTACT + 1)

const char *
last_cycle_dir(const struct torpor_config *c)
{
	return c && c->state_dir ? c->state_dir : TORPOR_STATEDIR;
}

uint32_t
last_cycle_ratio(const struct last_cycle *lc)
{
	uint64_t raw;

	if (!lc->pages || !lc->page_size || !lc->stored_bytes ||
	    lc->pages > UINT64_MAX / lc->page_size)
		return 0;
	raw = lc->pages * lc->page_size;
	if (lc->stored_bytes > raw * 2)
		return 0;	/* not a ratio to plan with */
	return (uint32_t)((lc->stored_bytes * 1000 + raw - 1) / raw);
}

void
last_cycle_from(struct last_cycle *lc, const struct cycle_times *t,
		bool test, int r, uint64_t started)
{
	size_t i;

	memset(lc, 0, sizeof(*lc));
	lc->started = started;
	lc->test = test;
	lc->error = r < 0 ? (uint32_t)-r : 0;
	for (i = 0; i < CYCLE_N_PHASES; i++)
		lc->phase_usec[i] = t->phase[i] > 0 ?
				    (uint64_t)(t->phase[i] * 1e6 + 0.5) : 0;
	lc->pages = t->pages;
	lc->page_size = t->page_size;
	lc->stored_bytes = t->stored_bytes;
	lc->resumed_at = t->resumed_at;
	lc->resume_usec = t->resume_usec;
	lc->resume_pages = t->resume_pages;
}

/* The text of the file into buf; its length, or -ENOBUFS. */
static int
format(const struct last_cycle *lc, char *buf, size_t size)
{
	size_t n = 0, i;
	int k;

	k = snprintf(buf, size, "# torpor: the last hibernation cycle (torpor status)\ntest=%d\nerror=%" PRIu32 "\n",
		     lc->test ? 1 : 0, lc->error);
	for (i = 0; k >= 0 && (size_t)k < size - n && i < N_FIXED; i++) {
		n += (size_t)k;
		k = snprintf(buf + n, size - n, "%s=%" PRIu64 "\n",
			     fixed_keys[i].name,
			     *(const uint64_t *)((const char *)lc +
						 fixed_keys[i].offset));
	}
	for (i = 0; k >= 0 && (size_t)k < size - n && i < CYCLE_N_PHASES; i++) {
		n += (size_t)k;
		k = snprintf(buf + n, size - n, "usec.%s=%" PRIu64 "\n",
			     cycle_phase_name((enum cycle_phase)i),
			     lc->phase_usec[i]);
	}
	if (k >= 0 && (size_t)k < size - n) {
		n += (size_t)k;
		k = snprintf(buf + n, size - n, "verify_intact=%d\nverify_uuid=",
			     lc->verify_intact ? 1 : 0);
	}
	for (i = 0; k >= 0 && (size_t)k < size - n && i <= 16; i++) {
		n += (size_t)k;
		k = i < 16 ? snprintf(buf + n, size - n, "%02x",
				      lc->verify_uuid[i]) :
			     snprintf(buf + n, size - n, "\n");
	}
	if (k < 0 || (size_t)k >= size - n)
		return -ENOBUFS;
	return (int)(n + (size_t)k);
}

/* dir, created when missing, as an fd; refused when others may write to
 * it or it is not the writer's (someone could swap the file under it). */
static int
open_state_dir(const char *dir)
{
	struct stat st;
	int fd;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid() ||
	    (st.st_mode & 022)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

int
last_cycle_write(const char *dir, const struct last_cycle *lc)
{
	char text[LAST_CYCLE_MAX_SIZE];
	int dfd, fd, r, len;

	len = format(lc, text, sizeof(text));
	if (len < 0)
		return len;
	dfd = open_state_dir(dir);
	if (dfd < 0)
		return dfd;
	/* A file left by a writer that died is ours to replace. */
	fd = openat(dfd, TMP_FILE, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST && unlinkat(dfd, TMP_FILE, 0) == 0)
		fd = openat(dfd, TMP_FILE, O_WRONLY | O_CREAT | O_EXCL |
			    O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		r = -errno;
		close(dfd);
		return r;
	}
	r = write_all(fd, text, (size_t)len);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && renameat(dfd, TMP_FILE, dfd, LAST_CYCLE_FILE) < 0)
		r = -errno;
	if (r < 0)
		unlinkat(dfd, TMP_FILE, 0);
	close(dfd);
	return r;
}

/* A decimal number that fits 64 bits, as format() writes it: digits
 * only, no leading zero. */
static int
parse_number(const char *s, uint64_t *ret)
{
	if (s[0] == '0' && s[1])
		return -EBADMSG;
	return config_parse_u64(s, ret) < 0 ? -EBADMSG : 0;
}

/* The field of key in lc, or NULL for an unknown key. */
static uint64_t *
field_of_key(struct last_cycle *lc, const char *key, uint64_t *scratch,
	     size_t *ret_index)
{
	size_t i;

	for (i = 0; i < N_FIXED; i++)
		if (strcmp(key, fixed_keys[i].name) == 0) {
			*ret_index = i;
			return (uint64_t *)((char *)lc + fixed_keys[i].offset);
		}
	if (strcmp(key, "test") == 0 || strcmp(key, "error") == 0) {
		*ret_index = N_FIXED + (key[0] == 'e');
		return scratch;
	}
	if (strcmp(key, "verify_intact") == 0) {
		*ret_index = KEY_VERIFY_INTACT;
		return scratch;
	}
	for (i = 0; i < CYCLE_N_PHASES; i++)
		if (strncmp(key, "usec.", 5) == 0 &&
		    strcmp(key + 5, cycle_phase_name((enum cycle_phase)i)) == 0) {
			*ret_index = N_FIXED + 2 + i;
			return &lc->phase_usec[i];
		}
	return NULL;
}

/* Exactly 32 lower-case hex digits. */
static int
parse_uuid(const char *s, uint8_t *ret)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	if (strlen(s) != 32)
		return -EBADMSG;
	for (i = 0; i < 32; i++) {
		const char *d = s[i] ? strchr(digits, s[i]) : NULL;

		if (!d)
			return -EBADMSG;
		ret[i / 2] = (uint8_t)(i % 2 ? ret[i / 2] | (d - digits) :
					       (d - digits) << 4);
	}
	return 0;
}

/* One "key=value" line (without its newline). */
static int
parse_line(struct last_cycle *lc, char *line, bool *seen)
{
	uint64_t scratch = 0, *v;
	char *eq = strchr(line, '=');
	size_t at;

	if (line[0] == '#' || !eq)
		return line[0] == '#' ? 0 : -EBADMSG;
	*eq = '\0';
	if (strcmp(line, "verify_uuid") == 0) {
		if (seen[KEY_VERIFY_UUID] || parse_uuid(eq + 1, lc->verify_uuid) < 0)
			return -EBADMSG;
		seen[KEY_VERIFY_UUID] = true;
		return 0;
	}
	v = field_of_key(lc, line, &scratch, &at);
	if (!v || seen[at] || parse_number(eq + 1, v) < 0)
		return -EBADMSG;
	seen[at] = true;
	if (at == N_FIXED) {
		if (scratch > 1)
			return -EBADMSG;
		lc->test = scratch == 1;
	} else if (at == N_FIXED + 1) {
		if (scratch > 4095)
			return -EBADMSG;
		lc->error = (uint32_t)scratch;
	} else if (at == KEY_VERIFY_INTACT) {
		if (scratch > 1)
			return -EBADMSG;
		lc->verify_intact = scratch == 1;
	}
	return 0;
}

static int
parse(char *text, struct last_cycle *ret)
{
	bool seen[N_KEYS] = { false };
	struct last_cycle lc;
	char *line = text, *nl;
	int r;

	memset(&lc, 0, sizeof(lc));
	for (; *line; line = nl + 1) {
		nl = strchr(line, '\n');
		if (!nl)
			return -EBADMSG;	/* a torn last line */
		*nl = '\0';
		r = parse_line(&lc, line, seen);
		if (r < 0)
			return r;
	}
	*ret = lc;
	return 0;
}

/* The file's bytes, from a file that the reader owns and nobody else may
 * write, at most LAST_CYCLE_MAX_SIZE of them. */
static int
read_trusted(int fd, char *buf, size_t size)
{
	struct stat st;
	size_t n = 0;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022))
		return -EPERM;
	if (st.st_size >= (off_t)size)
		return -EFBIG;
	while (n < size - 1) {
		ssize_t k = read(fd, buf + n, size - 1 - n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			break;
		n += (size_t)k;
	}
	if (n == size - 1)
		return -EFBIG;	/* it grew since fstat() */
	buf[n] = '\0';
	return memchr(buf, '\0', n) ? -EBADMSG : 0;
}

int
last_cycle_read(const char *dir, struct last_cycle *ret)
{
	char text[LAST_CYCLE_MAX_SIZE + 1];
	char path[4096];
	int fd, r;

	if (snprintf(path, sizeof(path), "%s/%s", dir, LAST_CYCLE_FILE) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP ? -EPERM : -errno;
	r = read_trusted(fd, text, sizeof(text));
	close(fd);
	if (r < 0)
		return r;
	return parse(text, ret);
}

/* The file as it is, or an empty record when there is none. */
static int
read_for_update(const char *dir, struct last_cycle *lc)
{
	int r = last_cycle_read(dir, lc);

	if (r == -ENOENT)
		memset(lc, 0, sizeof(*lc));
	return r == -ENOENT ? 0 : r;
}

int
last_cycle_record_verify(const char *dir, const uint8_t uuid[16],
			 bool intact)
{
	struct last_cycle lc;
	int r = read_for_update(dir, &lc);

	if (r < 0)
		return r;
	lc.verified_at = (uint64_t)time(NULL);
	lc.verify_intact = intact;
	memcpy(lc.verify_uuid, uuid, sizeof(lc.verify_uuid));
	return last_cycle_write(dir, &lc);
}

int
last_cycle_record_resume(const char *dir,
			 const struct image_resume_stats *stats)
{
	struct last_cycle lc;
	int r = read_for_update(dir, &lc);

	if (r < 0)
		return r;
	lc.resumed_at = stats->resumed_at;
	lc.resume_usec = stats->read_usec;
	lc.resume_pages = stats->pages_restored;
	return last_cycle_write(dir, &lc);
}

/* A state directory this session records in: the machine's for the
 * kernel source, only a configured one for the sim's (whose cycles are
 * not the machine's); NULL: none. */
static const char *
record_dir(const struct torpor_session *s)
{
	if (snapshot_spec_kind(s->config->snapshot) != TORPOR_SNAPSHOT_KERNEL &&
	    !s->config->state_dir)
		return NULL;
	return last_cycle_dir(s->config);
}

static void
warn_unrecorded(const char *dir, int r)
{
	if (r == -EPERM)
		log_full(geteuid() == 0 ? TORPOR_LOG_WARNING : TORPOR_LOG_INFO,
			 NULL, "could not record the figures in %s/%s: the folder "
			 "or the file is not uid %u's, or others may write to it, "
			 "or it is a symbolic link (chown %u %s; chmod go-w %s)",
			 dir, LAST_CYCLE_FILE, (unsigned)geteuid(),
			 (unsigned)geteuid(), dir, dir);
	else
		log_full(geteuid() == 0 ? TORPOR_LOG_WARNING : TORPOR_LOG_INFO,
			 NULL, "could not record the figures in %s/%s: %s", dir,
			 LAST_CYCLE_FILE, strerror(-r));
}

/*
 * Keep the figures of a cycle that ran for `torpor status`.  With the
 * kernel source this runs in the resumed system, which knows what was
 * measured before the snapshot and nothing after it (cycle_times says
 * which).  A sim cycle is not the machine's: it is recorded only where
 * [torpor] state_dir says.
 */
void
last_cycle_record(const struct torpor_session *s,
		  const struct cycle_times *t, bool test, int r,
		  uint64_t started)
{
	const char *dir = record_dir(s);
	struct last_cycle lc;
	int k;

	if (!dir)
		return;
	last_cycle_from(&lc, t, test, r, started);
	k = last_cycle_write(dir, &lc);
	if (k < 0)
		warn_unrecorded(dir, k);
}

/* The verdict of a verify that read an image, for status to show. */
void
last_cycle_record_verify_result(const struct torpor_session *s,
				const struct resume_options *o, int r)
{
	const char *dir = s->config ? record_dir(s) : NULL;
	int k;

	if (!dir || !o->header_valid || (r != 0 && r != EXIT_REFUSED))
		return;
	k = last_cycle_record_verify(dir, o->uuid, r == 0);
	if (k < 0)
		warn_unrecorded(dir, k);
}
