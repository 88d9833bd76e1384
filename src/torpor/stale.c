/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * torpor invalidate --stale: run by torpor-stale-image.service in the
 * booted system, before any swap is activated.  Once the system has booted
 * its filesystems have been mounted read-write, so an image still stored is
 * stale: a later resume would bring back memory that no longer matches
 * the disks.  An image the initramfs did not resume (its storage appeared
 * too late, the initramfs has no torpor, it was refused and kept) is
 * discarded here, with one line saying why, from what the initramfs step
 * left in /run.  No image, or no storage: nothing is changed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "session.h"
#include "stale.h"
#include "sysroot.h"

/* Written by torpor-initrd-resume (initramfs/common), which names it too:
 * one word, what the initramfs did.  /run survives the switch to the root. */
#define INITRD_RESULT "/run/initramfs/torpor-resume.result"

/* Why the image is still there, from the initramfs step's word. */
static const char *
initrd_reason(char *buf, size_t size)
{
	static const struct {
		const char *word, *why;
	} reasons[] = {
		{ "none", "the initramfs found no image: its storage appeared too late" },
		{ "no-device", "its storage did not appear within the initramfs' wait" },
		{ "refused", "the initramfs refused it" },
		{ "failed", "torpor-resume failed in the initramfs (see /run/initramfs/torpor-resume.log)" },
		{ "noresume", "noresume was given" },
	};
	char path[4096], word[64] = "";
	FILE *f;
	size_t i;

	snprintf(path, sizeof(path), "%s%s", sysroot(), INITRD_RESULT);
	f = fopen(path, "re");
	if (!f)
		return "the initramfs did not run torpor-resume (is torpor in it? rebuild it: update-initramfs -u, dracut -f)";
	if (!fgets(word, sizeof(word), f))
		word[0] = '\0';
	fclose(f);
	word[strcspn(word, "\n")] = '\0';
	for (i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
		if (strcmp(word, reasons[i].word) == 0)
			return reasons[i].why;
	snprintf(buf, size, "the initramfs left '%s' in %s", word, INITRD_RESULT);
	return buf;
}

/* The storage is missing or unreadable: the writer says which and why
 * (the wait's probes were quiet), then the line about the image. */
static int
storage_unreadable(const char *config_path, const char *plugin_dir)
{
	int r = session_probe_storage(config_path, plugin_dir, false);

	if (r >= 0)	/* there after all: the next boot looks again */
		return EXIT_SUCCESS;
	log_warning("cannot look for a stale hibernation image: the storage is %s; "
		    "an image on it stays until a boot where it is there",
		    r == -ENOENT || r == -ENODEV ? "not there" : "unreadable");
	return r == -ENOENT || r == -ENODEV ? EXIT_SUCCESS : EXIT_FAILURE;
}

int
torpor_invalidate_stale(const char *config_path, const char *plugin_dir,
			unsigned wait_seconds)
{
	struct torpor_session s;
	const char *why;
	char buf[256];
	int r;

	r = session_wait_for_storage(config_path, plugin_dir, wait_seconds);
	if (r == 0)
		return EXIT_SUCCESS;
	if (r < 0)
		return storage_unreadable(config_path, plugin_dir);
	why = initrd_reason(buf, sizeof(buf));
	r = session_open(&s, config_path, plugin_dir, false);
	if (r >= 0)
		r = session_arrange_writer_only(&s);
	if (r >= 0)
		r = session_invalidate(&s);
	if (r >= 0)
		log_warning("discarded a stale hibernation image on writer '%s': %s; "
			    "this boot has mounted the filesystems, resuming it later would lose data",
			    s.reg.active_writer->ops.name, why);
	else
		log_error("a stale hibernation image (%s) could not be discarded: "
			  "do not resume it; run 'torpor invalidate'", why);
	session_close(&s);
	return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
