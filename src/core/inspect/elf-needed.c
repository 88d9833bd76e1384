/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * DT_NEEDED of an ELF file (elf-needed.h): the dynamic section found
 * through the program headers, the string table's address turned into a
 * file offset through the PT_LOAD segment that holds it.  Every offset is
 * checked against the file's size before it is read.
 */
#include <elf.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf-needed.h"

#if UINTPTR_MAX == UINT64_MAX
typedef Elf64_Ehdr Ehdr;
typedef Elf64_Phdr Phdr;
typedef Elf64_Dyn Dyn;
#define OUR_CLASS ELFCLASS64
#else
typedef Elf32_Ehdr Ehdr;
typedef Elf32_Phdr Phdr;
typedef Elf32_Dyn Dyn;
#define OUR_CLASS ELFCLASS32
#endif
#if __BYTE_ORDER == __LITTLE_ENDIAN
#define OUR_DATA ELFDATA2LSB
#else
#define OUR_DATA ELFDATA2MSB
#endif

struct elf_file {
	const uint8_t *p;
	size_t size;
	const Phdr *ph;
	size_t phnum;
};

static bool
inside(const struct elf_file *f, uint64_t off, uint64_t len)
{
	return off <= f->size && len <= f->size - off;
}

/* The file offset of virtual address v, through its PT_LOAD segment. */
static int
offset_of(const struct elf_file *f, uint64_t v, uint64_t *ret)
{
	size_t i;

	for (i = 0; i < f->phnum; i++) {
		const Phdr *ph = &f->ph[i];

		if (ph->p_type == PT_LOAD && v >= ph->p_vaddr &&
		    v - ph->p_vaddr < ph->p_filesz) {
			*ret = ph->p_offset + (v - ph->p_vaddr);
			return 0;
		}
	}
	return -ENOEXEC;
}

static int
read_dynamic(const struct elf_file *f, const Phdr *dyn, struct elf_needed *ret)
{
	const Dyn *d = (const Dyn *)(f->p + dyn->p_offset);
	size_t n = dyn->p_filesz / sizeof(Dyn), i;
	uint64_t strtab = 0, strsz = 0, off;
	uint64_t needed[ELF_NEEDED_MAX];
	size_t n_needed = 0;

	for (i = 0; i < n && d[i].d_tag != DT_NULL; i++) {
		if (d[i].d_tag == DT_STRTAB)
			strtab = d[i].d_un.d_ptr;
		else if (d[i].d_tag == DT_STRSZ)
			strsz = d[i].d_un.d_val;
		else if (d[i].d_tag == DT_NEEDED && n_needed < ELF_NEEDED_MAX)
			needed[n_needed++] = d[i].d_un.d_val;
	}
	if (n_needed && (offset_of(f, strtab, &off) < 0 || !inside(f, off, strsz)))
		return -ENOEXEC;
	for (i = 0; i < n_needed; i++) {
		const char *s = (const char *)f->p + off + needed[i];
		size_t len;

		if (needed[i] >= strsz)
			return -ENOEXEC;
		len = strnlen(s, strsz - needed[i]);
		if (len == strsz - needed[i] || len >= ELF_NEEDED_NAME)
			return -ENOEXEC;
		memcpy(ret->names[ret->n], s, len + 1);
		ret->n++;
	}
	return 0;
}

static int
parse(const struct elf_file *base, struct elf_needed *ret)
{
	const Ehdr *eh = (const Ehdr *)base->p;
	struct elf_file f = *base;
	size_t i;

	if (f.size < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh->e_ident[EI_CLASS] != OUR_CLASS || eh->e_ident[EI_DATA] != OUR_DATA ||
	    eh->e_phentsize != sizeof(Phdr) ||
	    !inside(&f, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Phdr)) ||
	    eh->e_phoff % _Alignof(Phdr) != 0)
		return -ENOEXEC;
	f.ph = (const Phdr *)(f.p + eh->e_phoff);
	f.phnum = eh->e_phnum;
	for (i = 0; i < f.phnum; i++) {
		const Phdr *ph = &f.ph[i];

		if (ph->p_type != PT_DYNAMIC)
			continue;
		if (!inside(&f, ph->p_offset, ph->p_filesz) ||
		    ph->p_offset % _Alignof(Dyn) != 0)
			return -ENOEXEC;
		return read_dynamic(&f, ph, ret);
	}
	return 0;	/* static: needs nothing */
}

int
elf_needed(const char *path, struct elf_needed *ret)
{
	struct elf_file f = { 0 };
	struct stat st;
	void *map;
	int fd, r;

	ret->n = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
		close(fd);
		return -ENOEXEC;
	}
	if ((uint64_t)st.st_size > ELF_NEEDED_MAX_FILE) {
		close(fd);
		return -EFBIG;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -errno;
	f.p = map;
	f.size = (size_t)st.st_size;
	r = parse(&f, ret);
	munmap(map, f.size);
	if (r < 0)
		ret->n = 0;
	return r;
}
