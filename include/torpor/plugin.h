/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * torpor plugin ABI.
 *
 * This header is the whole contract between the torpor core (torpord,
 * torpor, torpor-resume) and its plugins.  A plugin is a shared module
 * NAME.so that exports exactly one symbol, TORPOR_PLUGIN_ENTRY_NAME, a
 * function returning a pointer to a constant struct torpor_plugin.  Use
 * TORPOR_PLUGIN_REGISTER() to emit it: it fills in the ABI version and the
 * struct size.
 *
 * Compatibility rules:
 *  - fields are only ever appended to the structs below;
 *  - the core copies min(its size, the plugin's size) of a plugin's struct
 *    into a zeroed one, so an older writer or misc plugin keeps loading;
 *  - a filter must match the core's ABI version exactly: a method the
 *    filter does not know about could let data bypass it, which for an
 *    encryption filter would mean plaintext on disk.
 *
 * Return values: 0 (or a positive count where stated) on success, a
 * negative errno on failure.  Methods are called from one thread at a time
 * unless stated otherwise; filter encode / decode run concurrently on
 * different per-thread states.
 *
 * Plugins never call into the core through exported symbols: everything
 * they need reaches them through struct torpor_host, handed to load().
 */
#ifndef TORPOR_PLUGIN_H
#define TORPOR_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TORPOR_PLUGIN_ABI_VERSION 1

/* Name of the one exported symbol. */
#define TORPOR_PLUGIN_ENTRY_NAME "torpor_plugin_entry"

/* Longest plugin name; names are [a-z0-9-]{1,31} and equal the file name. */
#define TORPOR_PLUGIN_NAME_MAX 31

enum torpor_plugin_type {
	TORPOR_PLUGIN_FILTER = 1,	/* transforms chunks: compress, encrypt, check */
	TORPOR_PLUGIN_WRITER = 2,	/* stores the image: swap, file, raw */
	TORPOR_PLUGIN_MISC = 3,		/* anything else: hooks */
};

enum torpor_log_level {
	TORPOR_LOG_ERR = 3,
	TORPOR_LOG_WARNING = 4,
	TORPOR_LOG_NOTICE = 5,
	TORPOR_LOG_INFO = 6,
	TORPOR_LOG_DEBUG = 7,
};

/* Where the memory image comes from; see torpor_host.snapshot_kind. */
enum torpor_snapshot_kind {
	TORPOR_SNAPSHOT_KERNEL = 1,	/* /dev/snapshot */
	TORPOR_SNAPSHOT_SIM = 2,	/* the simulated snapshot device */
};

/*
 * Configuration keys a plugin accepts in its own section ([NAME]).  The core
 * refuses unknown keys and values that do not fit the declared type before
 * the plugin sees them, naming the file, line and key.
 */
enum torpor_config_type {
	TORPOR_CONFIG_STRING = 1,	/* any text */
	TORPOR_CONFIG_INT = 2,		/* integer in [min, max] */
	TORPOR_CONFIG_SIZE = 3,		/* bytes, with optional K/M/G/T suffix, in [min, max] */
	TORPOR_CONFIG_BOOL = 4,		/* yes/no/true/false/1/0/on/off */
	TORPOR_CONFIG_ENUM = 5,		/* one of choices[] */
	TORPOR_CONFIG_PATH = 6,		/* absolute path, or UUID=, LABEL=, PARTUUID= */
};

struct torpor_config_key {
	const char *name;
	enum torpor_config_type type;
	int64_t min, max;			/* INT and SIZE */
	const char *const *choices;		/* ENUM: NULL-terminated */
	const char *default_value;		/* NULL: no default */
	const char *help;			/* one line, for `torpor config` */
};

/* Per-chunk facts handed to filters; bound into authenticated data. */
#define TORPOR_CHUNK_LAST 0x1u

struct torpor_chunk_info {
	uint64_t sequence;	/* 0-based position of the chunk in the image */
	uint32_t flags;		/* TORPOR_CHUNK_* */
	uint32_t raw_len;	/* page bytes in the chunk before any filter */
};

/*
 * The image being written or read, handed to start_stream() once the facts
 * are known: at hibernation after the snapshot was taken, at resume after
 * the header was read and checked.  binding is a canonical encoding of
 * every header field the restore depends on (image UUID, kernel release and
 * version, page size, page count, chunk pages, chunk count, the chain's
 * names, types and positions); it is byte-identical on both sides for an
 * untampered image, so a filter that authenticates it detects a header
 * changed between hibernation and resume.
 */
struct torpor_image_info {
	uint8_t uuid[16];
	uint32_t page_size;
	uint32_t chunk_pages;
	uint64_t page_count;
	uint64_t chunk_count;
	const uint8_t *binding;
	size_t binding_len;
};

/*
 * Services the core offers to plugins.  Valid from load() until unload().
 * Functions that may be absent in an older core are checked against
 * struct_size by the plugin (TORPOR_HOST_HAS()).
 */
struct torpor_host {
	uint32_t struct_size;
	uint32_t abi_version;

	/* Log one line (no trailing newline needed), prefixed with the
	 * plugin's name.  Never pass secrets. */
	void (*log)(int level, const char *plugin, const char *fmt, ...)
		__attribute__((format(printf, 3, 4)));

	/* The value of [section] key from the configuration, or the key's
	 * declared default, or NULL when neither exists.  Values were
	 * validated against the declared type before the plugin loaded. */
	const char *(*config_get)(const char *section, const char *key);

	/* Memory for keys and passphrases: zeroed, locked, excluded from core
	 * dumps.  secure_free() wipes before freeing and accepts NULL. */
	void *(*secure_alloc)(size_t size);
	void (*secure_free)(void *p, size_t size);

	/* Report progress of a long step (what: "writing", "reading", ...). */
	void (*progress)(const char *plugin, const char *what, uint64_t done,
			 uint64_t total);

	/* Ask the user for a passphrase (tty without echo, the systemd
	 * password agent, or the --passphrase-file).  Writes a NUL-terminated
	 * string into buf, which should be secure memory.  Returns its length
	 * or -errno (-ENOKEY: no way to ask). */
	int (*ask_passphrase)(const char *prompt, char *buf, size_t size);

	/* The resume location given on the kernel command line reaches
	 * writers as config_get("torpor", "resume") and
	 * config_get("torpor", "resume_offset") (in pages); when set, it
	 * overrides the writer's own location keys at resume. */

	/* What the cycle snapshots: TORPOR_SNAPSHOT_KERNEL or _SIM. */
	int (*snapshot_kind)(void);

	/* Swap services of the snapshot device, for writers.  With the kernel
	 * source these are SNAPSHOT_SET_SWAP_AREA (dev in the kernel's
	 * new_encode_dev form, offset of the swap header in bytes),
	 * SNAPSHOT_AVAIL_SWAP_SIZE, SNAPSHOT_ALLOC_SWAP_PAGE (returns the
	 * byte offset of a free swap page) and SNAPSHOT_FREE_SWAP_PAGES.  With
	 * the sim source they return -EOPNOTSUPP and the writer allocates
	 * from the swap area itself. */
	int (*swap_set_area)(uint32_t kernel_dev, uint64_t offset);
	int64_t (*swap_avail)(void);
	int64_t (*swap_alloc_page)(void);
	int (*swap_free_pages)(void);
};

#define TORPOR_HOST_HAS(host, member) \
	((host)->struct_size >= offsetof(struct torpor_host, member) + \
	 sizeof((host)->member) && (host)->member)

/*
 * Filter methods.  A filter transforms whole chunks; all of its per-chunk
 * state lives in the per-thread state so the core can run encode / decode
 * on several threads at once, each with its own state.
 */
struct torpor_filter_ops {
	/* Required.  Upper bound on encode()'s output for in_len input bytes.
	 * The core sizes every buffer from it. */
	size_t (*max_encoded_size)(size_t in_len);

	/* Optional.  Create / free one thread's state (work memory,
	 * contexts).  Called after initialise() and before cleanup(). */
	int (*thread_init)(void **ret_state);
	void (*thread_free)(void *state);

	/* Required.  Transform in[0..in_len) into out (out_size bytes,
	 * at least max_encoded_size(in_len)) and set *ret_len.  May be
	 * called concurrently with different states. */
	int (*encode)(void *state, const struct torpor_chunk_info *info,
		      const uint8_t *in, size_t in_len,
		      uint8_t *out, size_t out_size, size_t *ret_len);

	/* Required.  The inverse of encode().  out_size is the bound the
	 * core used for this filter's input when encoding.  Returns -EBADMSG
	 * when the data is corrupt, tampered or does not authenticate, and
	 * must never write past out_size whatever the input. */
	int (*decode)(void *state, const struct torpor_chunk_info *info,
		      const uint8_t *in, size_t in_len,
		      uint8_t *out, size_t out_size, size_t *ret_len);
};

/*
 * Writer methods.  The image is a header plus a data stream of framed
 * chunks; the writer decides where both go and how its signature points at
 * them.  Offsets given to read() are positions in the data stream.
 */
struct torpor_writer_ops {
	/* Required.  Before anything is frozen: check that an image of
	 * expected_bytes (data stream) fits and prepare the storage.  On
	 * -ENOSPC log "need X MiB, Y MiB free on DEVICE". */
	int (*reserve)(uint64_t expected_bytes);

	/* Required.  Append len bytes to the data stream, in order. */
	int (*write)(const void *buf, size_t len);

	/* Required.  After the data: write the header, sync, then write the
	 * signature last (and sync).  Only now is the image resumable. */
	int (*commit)(const void *header, size_t len);

	/* Optional.  The cycle failed before commit: release what reserve()
	 * and write() took and leave the storage as it was. */
	void (*abort)(void);

	/* Required.  Look for an image: 1 when a signature is present, 0 when
	 * there is none, -errno when the storage cannot be read. */
	int (*find)(void);

	/* Required after find() returned 1.  Copy the header into buf (size
	 * bytes) and set *ret_len; -EMSGSIZE when it does not fit, -EBADMSG
	 * when the signature's pointers are out of range. */
	int (*read_header)(void *buf, size_t size, size_t *ret_len);

	/* Required.  Read len bytes at offset of the data stream.  -ENODATA
	 * past the end of what was written. */
	int (*read)(uint64_t offset, void *buf, size_t len);

	/* Required.  Remove the signature so the image can never be resumed
	 * again; restore whatever the storage held before (a swap
	 * signature).  Returns 0 also when there was no image. */
	int (*invalidate)(void);

	/* Optional.  Rewrite the header in place (same length), used by the
	 * resume side to leave its statistics for the resumed system. */
	int (*rewrite_header)(const void *header, size_t len);

	/* Optional.  torpor-resume refused the image (corrupt, tampered,
	 * foreign kernel, wrong key) before handing any page to the kernel.
	 * The core leaves a refused image as it was, so that the right
	 * kernel or key can still resume it; a writer whose storage the
	 * booting system needs back (swap) restores it here. */
	void (*refused)(void);

	/* Optional.  The words of the kernel command line that locate the
	 * image (resume=... resume_offset=...), NUL-terminated in buf. */
	int (*resume_args)(char *buf, size_t size);
};

struct torpor_plugin {
	/* Filled by TORPOR_PLUGIN_REGISTER(). */
	uint32_t abi_version;
	uint32_t struct_size;

	const char *name;		/* [a-z0-9-]{1,31}, = file name */
	const char *description;	/* one line */
	enum torpor_plugin_type type;

	/* Keys of this plugin's [NAME] section, ending with a {NULL} entry;
	 * NULL for none. */
	const struct torpor_config_key *config_keys;

	/* Optional.  Called once after the plugin is loaded, with the
	 * services it may use until unload(). */
	int (*load)(const struct torpor_host *host);
	void (*unload)(void);

	/* Optional.  Prepare for work; starting_cycle is 1 when a hibernation
	 * or resume cycle begins (read configuration, allocate, open
	 * devices), 0 for lighter uses (listing, status). */
	int (*initialise)(int starting_cycle);

	/* Optional.  Undo initialise(); finishing_cycle mirrors it. */
	void (*cleanup)(int finishing_cycle);

	/* Optional.  The stream of one image is about to start (see struct
	 * torpor_image_info); called after initialise(1) and load_config(),
	 * before any thread_init().  info and its binding stay valid until
	 * cleanup(). */
	int (*start_stream)(const struct torpor_image_info *info);

	/* Optional.  Bytes of memory the plugin needs during a cycle beyond
	 * what the core hands it (per-thread work memory counts once per
	 * thread state). */
	size_t (*memory_needed)(void);

	/* Optional.  Upper bound, in bytes, of what save_config() writes;
	 * asked again right before save_config() at commit, so a writer may
	 * grow it while the image is written (its block map). */
	size_t (*storage_needed)(void);

	/* Optional.  Write the configuration the resume side needs into buf
	 * (size bytes, at least storage_needed()); return the bytes written
	 * or -errno.  Called at commit, after the data stream is written. */
	int (*save_config)(uint8_t *buf, size_t size);

	/* Optional.  Restore the configuration save_config() wrote.  Called
	 * at resume: for a filter before its initialise(1), for the writer
	 * (already initialised to find the image) after read_header();
	 * -EBADMSG if it does not parse. */
	int (*load_config)(const uint8_t *buf, size_t len);

	/* Optional.  Append a short human-readable status into buf (size
	 * bytes, including the NUL); return the length written (never more
	 * than size - 1) or -errno. */
	int (*print_debug_info)(char *buf, size_t size);

	/* Exactly one of these matches the type; the other stays NULL. */
	const struct torpor_filter_ops *filter;
	const struct torpor_writer_ops *writer;
};

/* The entry point's type. */
typedef const struct torpor_plugin *(*torpor_plugin_entry_fn)(void);

/*
 * Emit the entry point for a `static const struct torpor_plugin` named
 * var.  The version and size are set here so that a plugin cannot get them
 * wrong.
 */
#define TORPOR_PLUGIN_REGISTER(var)					\
	__attribute__((visibility("default")))				\
	const struct torpor_plugin *torpor_plugin_entry(void);		\
	__attribute__((visibility("default")))				\
	const struct torpor_plugin *torpor_plugin_entry(void)		\
	{								\
		static struct torpor_plugin p;				\
		p = (var);						\
		p.abi_version = TORPOR_PLUGIN_ABI_VERSION;		\
		p.struct_size = sizeof(struct torpor_plugin);		\
		return &p;						\
	}

#ifdef __cplusplus
}
#endif

#endif /* TORPOR_PLUGIN_H */
