/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The core's passphrase service, behind torpor_host.ask_passphrase and
 * `torpor keygen`.  Sources, first that applies:
 *  1. the file given with passphrase_set_file() (--passphrase-file): its
 *     first line, without the newline.  The file must be a regular file
 *     owned by the reader, with no permission for group or others, of at
 *     most PASSPHRASE_MAX_FILE bytes (-EPERM, -EFBIG, -EINVAL otherwise,
 *     logged with its name), or a pipe; it is never read past the size
 *     of the caller's buffer;
 *  2. systemd-ask-password, when running in a systemd initrd
 *     (/etc/initrd-release exists and the program is on PATH);
 *  3. the controlling terminal (/dev/tty) with echo off;
 *  4. none: -ENOKEY.
 * buf should be secure memory (gcry_malloc_secure / host secure_alloc).
 */
#ifndef TORPOR_PASSPHRASE_H
#define TORPOR_PASSPHRASE_H

#include <stdbool.h>
#include <stddef.h>

/* The largest passphrase file accepted, checked before it is read. */
#define PASSPHRASE_MAX_FILE (64 * 1024)

/* Read passphrases from path from now on (NULL: ask interactively). */
void passphrase_set_file(const char *path);

/* Whether a passphrase file is set. */
bool passphrase_from_file(void);

/*
 * Ask once with prompt.  Writes a NUL-terminated passphrase into buf
 * (size bytes) and returns its length; -ENOKEY when there is no way to
 * ask, -ECANCELED when the user gave up (end of input, agent cancelled),
 * -EMSGSIZE when the answer does not fit in buf, other -errno on I/O
 * errors.  On failure buf holds no part of an answer.
 */
int passphrase_ask(const char *prompt, char *buf, size_t size);

/*
 * Ask for a new passphrase: twice interactively (-ENOTUNIQ when the two
 * answers differ), once from a file.  An empty passphrase is refused
 * (-EINVAL).  Same buffer rules and errors as passphrase_ask().
 */
int passphrase_ask_new(const char *prompt, char *buf, size_t size);

/* For tests: the file whose presence means "in a systemd initrd"
 * (default /etc/initrd-release; NULL restores the default). */
void passphrase_set_initrd_marker(const char *path);

#endif
