/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The services the core hands to plugins (struct torpor_host), backed by the
 * program's configuration, registry and snapshot source.  One per process.
 */
#ifndef TORPOR_HOST_H
#define TORPOR_HOST_H

#include <torpor/plugin.h>

#include "config.h"
#include "registry.h"
#include "snapshot.h"

/* Initialise libgcrypt (secure memory for keys) once per process. */
int host_init_crypto(void);

/* What the services read from; each may be NULL / 0 until known. */
void host_set_config(const struct torpor_config *c);
void host_set_registry(const struct registry *r);
void host_set_snapshot_kind(enum torpor_snapshot_kind kind);
void host_set_snapshot(struct snapshot *s);

/* The resume location from the kernel command line (NULL: none). */
void host_set_resume_location(const char *resume, const char *resume_offset);

const struct torpor_host *host_get(void);

/* The snapshot kind a spec names: "sim..." or a device path. */
enum torpor_snapshot_kind host_kind_of_spec(const char *spec);

#endif
