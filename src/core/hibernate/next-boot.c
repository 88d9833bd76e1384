/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The next boot judged against the running kernel (next-boot.h): which
 * verdict, and the words status, setup and the cycle say it with.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "next-boot.h"
#include "sysroot.h"
#include "text.h"

static const char *const verdict_names[] = {
	[NEXT_BOOT_UNKNOWN] = "unknown",
	[NEXT_BOOT_RUNNING] = "running",
	[NEXT_BOOT_REDIRECT] = "redirect",
	[NEXT_BOOT_REFUSE] = "refuse",
};

const char *
next_boot_verdict_name(enum next_boot_verdict v)
{
	return verdict_names[v];
}

const char *
next_boot_root(enum torpor_snapshot_kind kind)
{
	const char *root = sysroot();

	if (root[0] || kind == TORPOR_SNAPSHOT_KERNEL)
		return root;
	return NULL;
}

/*
 * What GRUB's next_entry names the entry i by: its ids through its
 * submenus ("SUBMENU-ID>ENTRY-ID", what grub-reboot is given), else its
 * menu path ("1>2"); checked to lead back to i.  0, or -ENOENT.
 */
static int
grub_once_id(const struct boot_menu *m, int i, char *out, size_t size)
{
	char ids[BOOT_NAME_SIZE] = "", tmp[BOOT_NAME_SIZE];
	bool have_ids = true;

	for (int at = i; at >= 0 && have_ids; at = m->e[at].parent) {
		have_ids = m->e[at].id[0] != '\0';
		if ((size_t)snprintf(tmp, sizeof(tmp), "%s%s%s", m->e[at].id,
				     ids[0] ? ">" : "", ids) >= sizeof(tmp))
			have_ids = false;
		else
			memcpy(ids, tmp, sizeof(ids));
	}
	if (have_ids && grub_menu_find(m, ids) == i) {
		snprintf(out, size, "%s", ids);
		return 0;
	}
	if (grub_menu_find(m, m->e[i].path) == i) {
		snprintf(out, size, "%s", m->e[i].path);
		return 0;
	}
	return -ENOENT;
}

/* The loader's name as a user knows it. */
static const char *
loader_title(enum boot_loader l)
{
	return l == BOOT_LOADER_GRUB ? "GRUB" : "systemd-boot";
}

static void
say_refuse(struct next_boot *p, const char *why)
{
	const struct boot_next *b = &p->b;

	p->verdict = NEXT_BOOT_REFUSE;
	snprintf(p->line, sizeof(p->line),
		 "%s (%s); the running kernel is %s: an image written now would be refused, and torpor cannot set a one-shot boot of the running kernel: %s",
		 p->release, b->next_by, p->running, why);
	if (b->running >= 0)
		snprintf(p->fix, sizeof(p->fix),
			 "pick \"%s\" in the %s menu at the next boot; or let torpor set a one-shot (%s); or reboot into %s before hibernating; or hibernate with --force",
			 b->menu.e[b->running].title, loader_title(b->loader),
			 b->loader == BOOT_LOADER_GRUB ?
			 "a grub.cfg of update-grub, which reads grubenv's next_entry, and a /boot/grub/grubenv of grub-editenv create, root's alone, on a filesystem GRUB writes: not btrfs, LVM, LUKS or RAID" :
			 "efivarfs mounted read-write at /sys/firmware/efi/efivars",
			 p->release);
	else
		snprintf(p->fix, sizeof(p->fix),
			 "no entry of the boot menu starts %s (was it removed?): reboot into %s before hibernating, or hibernate with --force",
			 p->running, p->release);
}

/* The verdict on an answer of the boot loader. */
static void
judge(struct next_boot *p)
{
	const struct boot_next *b = &p->b;
	const struct boot_entry *next = &b->menu.e[b->next];
	char why[BOOT_NAME_SIZE];
	int r = -ENOENT;

	snprintf(p->release, sizeof(p->release), "%s", next->release);
	if (p->release[0] && !strcmp(p->release, p->running)) {
		p->verdict = NEXT_BOOT_RUNNING;
		snprintf(p->line, sizeof(p->line),
			 "%s (%s), the running kernel: an image written now resumes",
			 p->release, b->next_by);
		return;
	}
	snprintf(why, sizeof(why), "%s", b->cannot_redirect);
	if (b->can_redirect && b->running < 0)
		snprintf(why, sizeof(why), "no entry starts %s", p->running);
	else if (b->can_redirect && b->loader == BOOT_LOADER_GRUB) {
		r = grub_once_id(&b->menu, b->running, p->once_id,
				 sizeof(p->once_id));
		if (r < 0)
			snprintf(why, sizeof(why),
				 "the entry of %s cannot be named to GRUB",
				 p->running);
		else if (!b->have_grubenv)
			r = text_fail(-ENOENT, why, sizeof(why),
				      "%s/boot/grub/grubenv was not read", p->root);
	} else if (b->can_redirect) {
		snprintf(p->once_id, sizeof(p->once_id), "%s",
			 b->menu.e[b->running].id);
		r = 0;
	}
	if (r != 0)
		p->once_id[0] = '\0';	/* named, but not to be set */
	if (r == 0) {
		p->verdict = NEXT_BOOT_REDIRECT;
		snprintf(p->line, sizeof(p->line),
			 "%s (%s); the running kernel is %s: torpor hibernate sets a one-shot boot of \"%s\" (%s), so the image resumes",
			 p->release[0] ? p->release : next->title, b->next_by,
			 p->running, b->menu.e[b->running].title,
			 b->loader == BOOT_LOADER_GRUB ? "grubenv next_entry" :
			 "LoaderEntryOneShot");
	} else if (p->release[0]) {
		say_refuse(p, why);
	} else {
		p->verdict = NEXT_BOOT_UNKNOWN;
		snprintf(p->line, sizeof(p->line),
			 "cannot tell: \"%s\" (%s) starts a kernel torpor cannot name, and no one-shot can be set (%s)",
			 next->title, b->next_by, why);
	}
}

void
next_boot_plan(const char *root, const char *running, struct next_boot *ret)
{
	char why[512] = "";
	int r;

	memset(ret, 0, sizeof(*ret));
	snprintf(ret->root, sizeof(ret->root), "%s", root);
	snprintf(ret->running, sizeof(ret->running), "%s", running);
	ret->verdict = NEXT_BOOT_UNKNOWN;
	r = boot_next_inspect(root, running, &ret->b, why, sizeof(why));
	if (r < 0) {
		snprintf(ret->line, sizeof(ret->line), "cannot tell: %s: %s",
			 loader_title(ret->b.loader), why);
		return;
	}
	if (ret->b.loader == BOOT_LOADER_UNKNOWN || ret->b.next < 0) {
		snprintf(ret->line, sizeof(ret->line), "cannot tell: %s",
			 ret->b.cannot_redirect[0] ? ret->b.cannot_redirect :
			 "no boot loader torpor knows");
		return;
	}
	ret->inspected = true;
	judge(ret);
}
