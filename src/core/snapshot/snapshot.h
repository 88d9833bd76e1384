/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Snapshot sources: where the memory image comes from at hibernation and
 * where it goes back at resume.  Two implementations behind one interface:
 * "kernel" (/dev/snapshot, snapshot-kernel.c), in every program, and
 * "sim" (a deterministic synthetic image, sim/), a library of its own
 * that adds itself as a source (struct snapshot_source) to the programs
 * and tests that link it: torpor and torpord, not torpor-resume.
 */
#ifndef TORPOR_SNAPSHOT_H
#define TORPOR_SNAPSHOT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <torpor/plugin.h>

#include "snapshot-spec.h"

enum snapshot_mode {
	SNAPSHOT_MODE_HIBERNATE,	/* read the image out */
	SNAPSHOT_MODE_RESUME,		/* write an image back */
};

/* Fields of the image's first page (struct swsusp_info) we care about. */
struct snapshot_info {
	char release[65];		/* utsname.release */
	char version[65];		/* utsname.version */
	uint32_t version_code;		/* LINUX_VERSION_CODE */
	uint64_t num_physpages;
	uint32_t cpus;
	uint64_t image_pages;
	uint64_t pages;			/* pages in the image incl. metadata */
	uint64_t size;			/* bytes */
	char machine[65];		/* utsname.machine; "x86_64" for an
					 * architecture header */
	/* The page carries the x86 kernel's architecture header instead of
	 * a utsname: release and version are then the running kernel's,
	 * not the image's (the page does not say which kernel wrote it). */
	bool arch_header;
};

struct snapshot;

struct snapshot_ops {
	/* Freeze / thaw user space (SNAPSHOT_FREEZE / _UNFREEZE). */
	int (*freeze)(struct snapshot *s);
	int (*unfreeze)(struct snapshot *s);

	/* Limit the image size (SNAPSHOT_PREF_IMAGE_SIZE); optional. */
	int (*pref_image_size)(struct snapshot *s, uint64_t bytes);

	/* SNAPSHOT_CREATE_IMAGE: returns 0 and *in_suspend = 1 after the
	 * snapshot was taken, and returns again with *in_suspend = 0 in the
	 * resumed system. */
	int (*create_image)(struct snapshot *s, int *in_suspend);

	/* Bytes of the image (SNAPSHOT_GET_IMAGE_SIZE). */
	int (*image_size)(struct snapshot *s, uint64_t *ret);

	/* Next page of the image into buf (page_size bytes): returns the
	 * bytes read (page_size), 0 at the end, -errno. */
	ssize_t (*read_page)(struct snapshot *s, void *buf);

	/* Hand one page back at resume: returns page_size, 0 once the image
	 * is complete, -errno (-EPERM: the kernel refused it). */
	ssize_t (*write_page)(struct snapshot *s, const void *buf);

	/* Up to n pages in one call: the bytes read or taken, a multiple of
	 * page_size.  Fewer than n pages when the image ended or a page
	 * failed after the first: read_page() or write_page() of the next
	 * page then says which (0 or -errno).  0 or -errno for the first
	 * page, as read_page() and write_page() return them.  Optional in a
	 * source: snapshot.c calls its one-page op n times instead.  The
	 * kernel's device takes one page per read() or write(): readv() and
	 * writev() call them once per page, in one system call. */
	ssize_t (*read_pages)(struct snapshot *s, void *buf, size_t n);
	ssize_t (*write_pages)(struct snapshot *s, const void *buf, size_t n);

	/* SNAPSHOT_ATOMIC_RESTORE: with the kernel it does not return on
	 * success.  With the sim it checks that every page was handed back
	 * and verified, and returns 0. */
	int (*atomic_restore)(struct snapshot *s);

	/* SNAPSHOT_FREE: drop the image after hibernation / a failed cycle. */
	int (*free_image)(struct snapshot *s);

	/* SNAPSHOT_PLATFORM_SUPPORT: use the platform's hibernation method
	 * (ACPI S4) to power off; set before create_image().  Optional. */
	int (*platform_support)(struct snapshot *s, bool on);

	/* Power the machine off: with platform support SNAPSHOT_POWER_OFF,
	 * and reboot(RB_POWER_OFF) when that returns or without it.  The
	 * sim returns 0 and the cycle goes on as after a resume. */
	int (*power_off)(struct snapshot *s);

	/* Restart the machine (reboot(RB_AUTOBOOT)) with the image written:
	 * the next boot resumes it.  The sim records it and returns 0. */
	int (*reboot)(struct snapshot *s);

	/* SNAPSHOT_S2RAM: suspend to RAM with the image written (suspend to
	 * both).  0 once the machine woke up from RAM (the image on disk is
	 * then stale), -errno when it could not suspend.  The sim records
	 * it and returns 0 at once. */
	int (*suspend_to_ram)(struct snapshot *s);


	/* Swap services (see struct torpor_host); sim: -EOPNOTSUPP. */
	int (*set_swap_area)(struct snapshot *s, uint32_t dev, uint64_t offset);
	int64_t (*avail_swap)(struct snapshot *s);
	int64_t (*alloc_swap_page)(struct snapshot *s);
	int (*free_swap_pages)(struct snapshot *s);

	void (*close)(struct snapshot *s);
};

/* Room for what the kernel said about a refused image. */
#define SNAPSHOT_SAID_SIZE 512

/* Swap pages taken from the device at a time by whichever thread needs
 * one (snapshot_open()). */
#define SNAPSHOT_SWAP_BATCH 64

struct snapshot {
	/*
	 * What callers call: once snapshot_open() returns, these are the
	 * one-at-a-time entry points of snapshot.c, which call the source's
	 * own (dev) under lock.  The kernel's device is not for two threads
	 * at once: its ioctls fail with EBUSY while another thread is inside
	 * read() or write() (system_transition_mutex, kernel/power/user.c).
	 */
	const struct snapshot_ops *ops;
	const struct snapshot_ops *dev;	/* the source's own; NULL: ops are */
	pthread_mutex_t lock;		/* held for every call on dev */
	/* Swap pages taken (under lock) and not handed out yet: a thread
	 * that writes the image takes the lock once per batch, not once per
	 * page while the reading thread holds it page after page.  What is
	 * left over the kernel frees with the rest (SNAPSHOT_FREE_SWAP_PAGES,
	 * or closing the device). */
	pthread_mutex_t swap_lock;
	int64_t swap_batch[SNAPSHOT_SWAP_BATCH];
	unsigned swap_have, swap_next;
	enum torpor_snapshot_kind kind;
	enum snapshot_mode mode;
	size_t page_size;
	/* Pages handed back at resume so far (tests check it stays 0 for a
	 * refused image). */
	uint64_t pages_written;
	/* Pages the resume side verified (sim only). */
	uint64_t pages_verified;
	/* atomic_restore() succeeded (sim only: the kernel's does not
	 * return).  Pages handed back without it are dropped at close. */
	bool restored;
	/* After write_page() failed with -EPERM: what the kernel said, its
	 * own log lines quoted (the kernel's device: the records /dev/kmsg
	 * got since the header page went in, bounded; the sim's: its
	 * kernel's words); "" when nothing could be read. */
	char refusal_said[SNAPSHOT_SAID_SIZE];
};

/* What the kernel's files say disables hibernation, before anything is
 * tried: lockdown (lockdown_path, normally /sys/kernel/security/lockdown)
 * or `nohibernate` / `hibernate=no` (cmdline_path, normally /proc/cmdline).
 * The reason goes into buf (one line, the same for status, setup and the
 * refusal to open the device) unless it is SNAPSHOT_BLOCK_NONE. */
enum snapshot_block {
	SNAPSHOT_BLOCK_NONE,
	SNAPSHOT_BLOCK_LOCKDOWN,
	SNAPSHOT_BLOCK_CMDLINE,
};
enum snapshot_block snapshot_kernel_block(const char *lockdown_path,
					  const char *cmdline_path,
					  char *buf, size_t size);

/* The page size the source a spec names will have once open (the sim's,
 * or the kernel's), known without opening it. */
size_t snapshot_page_size(const char *spec);

/*
 * Open the source named by spec: "/dev/snapshot" (or another path to a
 * snapshot device) or a sim spec (see snapshot_spec_parse()), which opens
 * only where the simulator's library is linked (-EOPNOTSUPP, said, in
 * the others).  With the kernel source in hibernate mode this also calls
 * mlockall().  EPERM is turned into a message saying why (lockdown,
 * nohibernate, secretmem).  Its ops may be called from any thread: one
 * call at a time reaches the device.
 */
int snapshot_open(const char *spec, enum snapshot_mode mode,
		  struct snapshot **ret);

/* Close (NULL is fine). */
void snapshot_close(struct snapshot *s);

/*
 * A source besides the kernel's, which the library that implements it
 * adds when it is linked (the simulator's constructor, sim/): a program
 * that does not link it cannot open its specs, read its test levers or
 * run any of its code.  Its open() gets the specs of its kind; the rest
 * say what the machine it stands for has in place of this one's, each
 * NULL (or returning NULL) for "this machine's".
 */
struct snapshot_source {
	enum torpor_snapshot_kind kind;
	int (*open)(const char *spec, enum snapshot_mode mode,
		    struct snapshot **ret);
	/* The release of the kernel it runs as (uname -r). */
	const char *(*kernel_release)(void);
	/* The machine it runs as (uname -m). */
	const char *(*machine)(void);
	/* The path whose filesystem is its root filesystem (the root
	 * guard's "/"). */
	const char *(*root_path)(void);
};

/* Add a source; one of a kind, the last added wins. */
void snapshot_source_add(const struct snapshot_source *src);

/* The path whose filesystem a cycle on a source of this kind guards:
 * "/", or the source's own root_path(). */
const char *snapshot_root_path(enum torpor_snapshot_kind kind);

struct torpor_config;

/*
 * Hand the configuration's preferences to the source before the image is
 * created: image_size through pref_image_size when the configuration sets
 * it.  Nothing to do is success.  Returns what the source returned.
 */
int snapshot_apply_prefs(struct snapshot *s, const struct torpor_config *c);

/*
 * The memory the snapshot needs: the kernel copies every page it saves
 * into free memory before a byte is written, so the image (image bytes)
 * must fit in what is free or can be freed for it, which is taken as
 * MemAvailable (free and reclaimable) plus SwapFree (the kernel may move
 * memory to swap first).  From /proc/meminfo, under $TORPOR_TEST_SYSROOT
 * in a test build.
 */
struct snapshot_memory {
	uint64_t image;		/* bytes the copy takes */
	uint64_t total, available, free, swap_free;	/* meminfo, bytes */
	bool known;		/* meminfo was read */
};

void snapshot_memory_read(uint64_t image, struct snapshot_memory *ret);
/* The copy would not fit (only when known). */
bool snapshot_memory_short(const struct snapshot_memory *m);
/* What the figures mean and what helps, one sentence into buf. */
void snapshot_memory_explain(const struct snapshot_memory *m, char *buf,
			     size_t size);

/* Parse the first page of an image (struct swsusp_info). */
int snapshot_parse_info(const void *page, size_t page_size,
			struct snapshot_info *ret);

/* The release the running kernel reports (uname), or the one of the
 * kernel a source of s->kind runs as (its kernel_release(): the sim's
 * $TORPOR_SIM_KERNEL_RELEASE, which tests use to fake a foreign kernel).
 * Only s->kind is looked at: callers may pass a probe never opened. */
int snapshot_running_release(const struct snapshot *s, char *buf, size_t size);

/*
 * Whether the running kernel judges an image by an architecture header
 * of its own (CONFIG_ARCH_HIBERNATION_HEADER: x86-64 checks a magic, the
 * restore address and a digest of the firmware memory map) rather than
 * by the release of the kernel that wrote it, so that an image of
 * another build may be handed to it and its answer awaited.  It is the
 * running kernel that checks: decided by its machine (uname -m
 * "x86_64"), not by what torpor was compiled for; a source that stands
 * for another machine answers for it (its machine(): the sim's
 * $TORPOR_SIM_MACHINE or "x86_64").  Only s->kind is looked at.
 */
bool snapshot_kernel_judges_image(const struct snapshot *s);

/* The machine a kernel that judges images by its architecture header
 * writes them for: the first page says it (snapshot_info.machine). */
#define SNAPSHOT_ARCH_HEADER_MACHINE "x86_64"

#endif
