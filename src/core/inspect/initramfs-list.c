/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * An initramfs's entries, read as the kernel unpacks it: newc cpio
 * archives back to back, zero padding between them, and a compressed part
 * that holds more archives.  The compressed part is piped through the
 * installed decompressor of its format (the same programs the generators
 * use to make it); every count and size is bounded (initramfs-list.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "initramfs-list.h"

#define CPIO_HEADER	110
#define READ_BUF	65536

/* A buffered reader over a file or a decompressor's pipe. */
struct reader {
	int fd;
	uint8_t buf[READ_BUF];
	size_t pos, len;
	uint64_t off;		/* bytes consumed */
	uint64_t limit;		/* off may not pass it */
	bool eof;
};

/* At least n bytes (n <= READ_BUF) buffered, unless the input ends first:
 * the number buffered, or -errno. */
static ssize_t
rd_ensure(struct reader *r, size_t n)
{
	while (r->len - r->pos < n && !r->eof) {
		ssize_t k;

		if (r->pos > 0) {
			memmove(r->buf, r->buf + r->pos, r->len - r->pos);
			r->len -= r->pos;
			r->pos = 0;
		}
		k = read(r->fd, r->buf + r->len, sizeof(r->buf) - r->len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			r->eof = true;
		r->len += (size_t)k;
	}
	return (ssize_t)(r->len - r->pos);
}

/* Exactly n bytes into dst (NULL: skipped); -EBADMSG when the input ends
 * first, -EFBIG past the limit. */
static int
rd_take(struct reader *r, void *dst, uint64_t n)
{
	if (n > r->limit - r->off)
		return -EFBIG;
	while (n > 0) {
		ssize_t have = rd_ensure(r, 1);
		size_t k;

		if (have < 0)
			return (int)have;
		if (have == 0)
			return -EBADMSG;
		k = (uint64_t)have < n ? (size_t)have : (size_t)n;
		if (dst) {
			memcpy(dst, r->buf + r->pos, k);
			dst = (uint8_t *)dst + k;
		}
		r->pos += k;
		r->off += k;
		n -= k;
	}
	return 0;
}

/* Skip the zero bytes between archives; 1 when more input follows. */
static int
rd_skip_zeros(struct reader *r)
{
	for (;;) {
		ssize_t have = rd_ensure(r, 1);

		if (have <= 0)
			return have < 0 ? (int)have : 0;
		if (r->buf[r->pos] != 0)
			return 1;
		if (r->off >= r->limit)
			return -EFBIG;
		r->pos++;
		r->off++;
	}
}

static int
hex_field(const char *h, uint32_t *ret)
{
	uint32_t v = 0;
	int i;

	for (i = 0; i < 8; i++) {
		char ch = h[i];
		int d = ch >= '0' && ch <= '9' ? ch - '0' :
			ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 :
			ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;

		if (d < 0)
			return -EBADMSG;
		v = v << 4 | (uint32_t)d;
	}
	*ret = v;
	return 0;
}

static const char *
strip_root(const char *name)
{
	while (name[0] == '/' || (name[0] == '.' && name[1] == '/'))
		name += name[0] == '/' ? 1 : 2;
	return name;
}

static struct initramfs_capture *
capture_of(struct initramfs_listing *l, const char *name)
{
	size_t i;

	for (i = 0; i < l->n_captures; i++)
		if (strcmp(l->captures[i].name, name) == 0)
			return &l->captures[i];
	return NULL;
}

static int
add_entry(struct initramfs_listing *l, const char *name, uint32_t mode)
{
	struct initramfs_entry *grown;
	char *copy;

	if (l->n_entries >= INITRAMFS_MAX_ENTRIES)
		return -EFBIG;
	if ((l->n_entries & (l->n_entries - 1)) == 0) {
		size_t cap = l->n_entries ? l->n_entries * 2 : 64;

		grown = realloc(l->entries, cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		l->entries = grown;
	}
	copy = strdup(name);
	if (!copy)
		return -ENOMEM;
	l->entries[l->n_entries++] = (struct initramfs_entry){ copy, mode };
	return 0;
}

/* The data of an entry: kept when it is a capture asked for, else skipped;
 * then the padding to four bytes. */
static int
take_data(struct reader *r, struct initramfs_listing *l, const char *name,
	  uint32_t mode, uint32_t size)
{
	struct initramfs_capture *c = S_ISREG(mode) ? capture_of(l, name) : NULL;
	uint8_t *data = NULL;
	int r2;

	if (c && size <= INITRAMFS_MAX_CAPTURE) {
		data = malloc(size ? size : 1);
		if (!data)
			return -ENOMEM;
	}
	r2 = rd_take(r, data, size);
	if (r2 >= 0)
		r2 = rd_take(r, NULL, (4 - size % 4) % 4);
	if (r2 < 0 || !c) {
		free(data);
		return r2;
	}
	/* A later copy replaces the earlier one, as when unpacked. */
	if (c->data)
		explicit_bzero(c->data, c->len);
	free(c->data);
	c->data = data;
	c->len = data ? size : 0;
	return 0;
}

/* One entry; 1 after the trailer of an archive. */
static int
read_entry(struct reader *r, struct initramfs_listing *l)
{
	char h[CPIO_HEADER + 1], *name;
	uint32_t mode, size, namesize;
	int r2;

	r2 = rd_take(r, h, CPIO_HEADER);
	if (r2 < 0)
		return r2;
	if (memcmp(h, "070701", 6) != 0 && memcmp(h, "070702", 6) != 0)
		return -EBADMSG;
	if (hex_field(h + 14, &mode) < 0 || hex_field(h + 54, &size) < 0 ||
	    hex_field(h + 94, &namesize) < 0 || namesize == 0 ||
	    namesize > INITRAMFS_MAX_NAME)
		return -EBADMSG;
	name = malloc(namesize);
	if (!name)
		return -ENOMEM;
	r2 = rd_take(r, name, namesize);
	if (r2 >= 0 && name[namesize - 1] != '\0')
		r2 = -EBADMSG;
	if (r2 >= 0)
		r2 = rd_take(r, NULL, (4 - (CPIO_HEADER + namesize) % 4) % 4);
	if (r2 >= 0 && strcmp(name, "TRAILER!!!") == 0)
		r2 = rd_take(r, NULL, size + (4 - size % 4) % 4) < 0 ? -EBADMSG : 1;
	else if (r2 >= 0 && *strip_root(name))
		r2 = add_entry(l, strip_root(name), mode);
	if (r2 == 0)
		r2 = take_data(r, l, strip_root(name), mode, size);
	free(name);
	return r2;
}

/* Archives until the input ends (0) or something that is not a cpio
 * archive starts (1: at r->off, as the kernel looks for a compressed
 * part there). */
static int
read_archives(struct reader *r, struct initramfs_listing *l)
{
	for (;;) {
		ssize_t have;
		int r2 = rd_skip_zeros(r);

		if (r2 <= 0)
			return r2;
		have = rd_ensure(r, 6);
		if (have < 0)
			return (int)have;
		if ((size_t)have < 6 || memcmp(r->buf + r->pos, "07070", 5) != 0)
			return 1;
		do
			r2 = read_entry(r, l);
		while (r2 == 0);
		if (r2 < 0)
			return r2;
	}
}

/* The compressed formats the kernel unpacks, by their first bytes. */
static const struct {
	uint8_t magic[6];
	size_t len;
	const char *program;
	const char *args[3];
} compressors[] = {
	{ { 0x1f, 0x8b }, 2, "gzip", { "-dc" } },
	{ { 0x28, 0xb5, 0x2f, 0xfd }, 4, "zstd", { "-dcq" } },
	{ { 0xfd, '7', 'z', 'X', 'Z', 0 }, 6, "xz", { "-dc" } },
	{ { 0x5d, 0x00, 0x00 }, 3, "xz", { "-dc", "--format=lzma" } },
	{ { 0x02, 0x21, 0x4c, 0x18 }, 4, "lz4", { "-dc" } },
	{ { 0x04, 0x22, 0x4d, 0x18 }, 4, "lz4", { "-dc" } },
	{ { 'B', 'Z', 'h' }, 3, "bzip2", { "-dc" } },
	{ { 0x89, 'L', 'Z', 'O' }, 4, "lzop", { "-dc" } },
};

#define N_COMPRESSORS	(sizeof(compressors) / sizeof(compressors[0]))

/* A program in the system's directories (never the caller's PATH: this
 * runs as root). */
static int
find_program(const char *name, char *buf, size_t size)
{
	static const char *const dirs[] = {
		"/usr/bin", "/bin", "/usr/sbin", "/sbin",
	};
	size_t i;

	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(buf, size, "%s/%s", dirs[i], name);
		if (access(buf, X_OK) == 0)
			return 0;
	}
	return -ENOEXEC;
}

/* The decompressor for the bytes at the reader's position, or -1. */
static int
which_compressor(struct reader *r)
{
	ssize_t have = rd_ensure(r, 6);
	size_t i;

	for (i = 0; have > 0 && i < N_COMPRESSORS; i++)
		if ((size_t)have >= compressors[i].len &&
		    memcmp(r->buf + r->pos, compressors[i].magic,
			   compressors[i].len) == 0)
			return (int)i;
	return -1;
}

/* The decompressor reading fd from offset off, writing to a pipe: its
 * pid, the pipe's reading end in *ret_fd. */
static pid_t
spawn_decompressor(int c, const char *program, int fd, uint64_t off,
		   int *ret_fd)
{
	const char *argv[5] = { program, compressors[c].args[0],
				compressors[c].args[1], NULL, NULL };
	int p[2], null;
	pid_t pid;

	if (lseek(fd, (off_t)off, SEEK_SET) < 0 || pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -errno;
	}
	if (pid == 0) {
		null = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (dup2(fd, 0) < 0 || dup2(p[1], 1) < 0 ||
		    (null >= 0 && dup2(null, 2) < 0))
			_exit(127);
		execv(program, (char *const *)argv);
		_exit(127);
	}
	close(p[1]);
	*ret_fd = p[0];
	return pid;
}

/* The compressed part at r->off: its archives, through the decompressor. */
static int
read_compressed(struct reader *file, struct initramfs_listing *l,
		char *why, size_t why_size)
{
	struct reader *r;
	char program[64];
	int c = which_compressor(file), status = 0, r2;
	pid_t pid;

	if (c < 0) {
		snprintf(why, why_size, "has data at byte %llu that is neither a cpio archive nor a compressed one",
			 (unsigned long long)file->off);
		return -EBADMSG;
	}
	if (find_program(compressors[c].program, program, sizeof(program)) < 0) {
		snprintf(why, why_size, "is compressed with %s, and no %s program is installed to read it",
			 compressors[c].program, compressors[c].program);
		return -ENOEXEC;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->limit = INITRAMFS_MAX_BYTES;
	pid = spawn_decompressor(c, program, file->fd, file->off, &r->fd);
	if (pid < 0) {
		free(r);
		snprintf(why, why_size, "could not be decompressed: %s", strerror((int)-pid));
		return (int)pid;
	}
	r2 = read_archives(r, l);
	close(r->fd);
	/* Stopped early (a bound, a bad archive): the program is ours. */
	if (r2 != 0 || !r->eof)
		kill(pid, SIGTERM);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	free(r);
	/* gzip says 2 for trailing zeros after its stream: a warning. */
	if (r2 == 0 && !(WIFEXITED(status) &&
			 (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 2)))
		r2 = -EBADMSG;
	if (r2 == 1 || r2 == -EBADMSG)
		snprintf(why, why_size, "has a %s part that does not hold whole cpio archives",
			 compressors[c].program);
	else if (r2 < 0)
		snprintf(why, why_size, "could not be read: %s", strerror(-r2));
	return r2 == 1 ? -EBADMSG : r2;
}

int
initramfs_list(const char *path, struct initramfs_listing *l,
	       char *why, size_t why_size)
{
	struct reader *r;
	struct stat st;
	int fd, r2;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		snprintf(why, why_size, "cannot be opened: %s", strerror(errno));
		return -errno;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size > INITRAMFS_MAX_FILE) {
		close(fd);
		snprintf(why, why_size, "is not a regular file of at most %llu MiB",
			 INITRAMFS_MAX_FILE >> 20);
		return -EFBIG;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		close(fd);
		return -ENOMEM;
	}
	r->fd = fd;
	r->limit = (uint64_t)st.st_size;
	r2 = read_archives(r, l);
	if (r2 == -EFBIG)	/* an entry runs past the end of the file */
		r2 = -EBADMSG;
	if (r2 == 1)
		r2 = read_compressed(r, l, why, why_size);
	else if (r2 < 0)
		snprintf(why, why_size, "is not a whole cpio archive (at byte %llu: %s)",
			 (unsigned long long)r->off,
			 r2 == -EBADMSG ? "bad or truncated entry" : strerror(-r2));
	if (r2 >= 0 && l->n_entries == 0) {
		snprintf(why, why_size, "holds no files");
		r2 = -EBADMSG;
	}
	free(r);
	close(fd);
	return r2;
}

const struct initramfs_entry *
initramfs_find(const struct initramfs_listing *l, const char *name)
{
	size_t i;

	name = strip_root(name);
	/* The last one wins, as when unpacked. */
	for (i = l->n_entries; i-- > 0;)
		if (strcmp(l->entries[i].name, name) == 0)
			return &l->entries[i];
	return NULL;
}

void
initramfs_listing_clear(struct initramfs_listing *l)
{
	size_t i;

	for (i = 0; i < l->n_entries; i++)
		free(l->entries[i].name);
	free(l->entries);
	l->entries = NULL;
	l->n_entries = 0;
	for (i = 0; i < l->n_captures; i++) {
		/* Captures may be key files. */
		if (l->captures[i].data)
			explicit_bzero(l->captures[i].data, l->captures[i].len);
		free(l->captures[i].data);
		l->captures[i].data = NULL;
		l->captures[i].len = 0;
	}
}
