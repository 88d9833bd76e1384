/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A fake root of a boot loader's files, made afresh for each test (a
 * checked fixture: fake_boot_setup, fake_boot_teardown) and shared by
 * the tests of the boot loader's files (test-bootloader.c) and of the
 * one-shot boot (tests/unit/core/hibernate/test-boot-once.c).
 */
#ifndef TORPOR_TEST_FAKE_BOOT_H
#define TORPOR_TEST_FAKE_BOOT_H

#include <stddef.h>

#define FAKE_BOOT_GUID "4a67b082-0a4c-41cf-b6c7-440b29bb8c4f"

/* The fake root, a new folder under /tmp for each test. */
extern char root[64];

void fake_boot_setup(void);
void fake_boot_teardown(void);

/* A file of tests/unit/core/inspect/bootloader/ (NUL terminated, to
 * free) and its length. */
char *fixture(const char *name, size_t *len);
/* root/rel made with these bytes (its folders too), mode 0644. */
void put(const char *rel, const void *data, size_t len);
void put_text(const char *rel, const char *text);
void put_fixture(const char *rel, const char *name);
/* A grubenv block of the given lines, padded with '#'; and it as
 * root/boot/grub/grubenv. */
void grubenv(char *block, const char *lines);
void put_grubenv(const char *lines);
/* An efivarfs file of systemd's loader GUID: attributes, then the
 * UTF-16LE string and its NUL. */
void put_efivar(const char *name, const char *value);

#endif
