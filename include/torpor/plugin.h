/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * torpor plugin ABI.
 *
 * This header is the whole contract between the torpor core (torpord,
 * torpor, torpor-resume) and its plugins.  A plugin is a shared module
 * NAME.so of one kind, filter, writer or misc, each with a struct of its
 * own (struct torpor_filter, struct torpor_writer, struct torpor_misc)
 * that begins with what every kind has (struct torpor_plugin).  It exports
 * exactly one symbol, TORPOR_PLUGIN_ENTRY_NAME, a function returning a
 * pointer to that first member.  Use TORPOR_FILTER_REGISTER(),
 * TORPOR_WRITER_REGISTER() or TORPOR_MISC_REGISTER() to emit it: they fill
 * in the ABI version, the struct size and the kind.
 *
 * Compatibility rules:
 *  - fields are only ever appended to the kind structs below, and every
 *    struct that may grow says its size: the kind's struct
 *    (plugin.struct_size), its config keys (config_key_size), and what
 *    the core hands over (torpor_host, torpor_image_info,
 *    torpor_chunk_info: struct_size);
 *  - the core copies min(its size, the plugin's size) of the plugin's
 *    struct and of each config key into zeroed ones, so an older writer or
 *    misc plugin (of ABI 3 or later: ABI 3 split the methods by kind)
 *    keeps loading and a method it lacks reads as absent;
 *  - a plugin built for an older ABI is refused with a message that names
 *    its ABI and says to rebuild it against this SDK;
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

#define TORPOR_PLUGIN_ABI_VERSION 3

/* The oldest ABI a writer or misc plugin may speak: ABI 3 gave each kind
 * its own struct, so an ABI 2 struct cannot be read. */
#define TORPOR_PLUGIN_ABI_OLDEST 3

/* The torpor release this header comes from; a plugin records it
 * (torpor_plugin.built_for) and `torpor plugins` shows it.  The build
 * checks that it equals the project's version. */
#define TORPOR_VERSION_STRING "0.1.0"

/*
 * The image header's budget, part of the ABI: a plugin's saved
 * configuration (save_config) is at most TORPOR_IMAGE_MAX_BLOB bytes, and
 * the whole encoded header that a writer stores and reads back is at most
 * TORPOR_IMAGE_MAX_HEADER bytes.
 */
#define TORPOR_IMAGE_MAX_HEADER (1u << 20)
#define TORPOR_IMAGE_MAX_BLOB 65536u

/* Alignment of the buffers the core hands to a writer's write(), and the
 * unit of their lengths (all but the last call before commit). */
#define TORPOR_WRITE_ALIGN 4096u

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

/* What torpor_misc.sleep_event() is told. */
enum torpor_sleep_event {
	TORPOR_SLEEP_PRE = 1,	/* before user space is frozen */
	TORPOR_SLEEP_POST = 2,	/* after it was thawed again */
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
	TORPOR_CONFIG_SIZE = 3,		/* bytes, K/M/G/T suffix, in [min, max] */
	TORPOR_CONFIG_BOOL = 4,		/* yes/no/true/false/1/0/on/off */
	TORPOR_CONFIG_ENUM = 5,		/* one of choices[] */
	/* An absolute path, or UUID=, LABEL=, PARTUUID=, PARTLABEL=. */
	TORPOR_CONFIG_PATH = 6,
};

/* An array of these ends with an entry whose name is NULL.  Its element
 * size is torpor_plugin.config_key_size (set by the REGISTER macros), so
 * the struct may grow. */
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
	uint32_t struct_size;	/* sizeof as the core knows it */
	uint32_t reserved;
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
 * names, types and positions, and the root-filesystem guard when the
 * image has one); it is byte-identical on both sides for an
 * untampered image, so a filter that authenticates it detects a header
 * changed between hibernation and resume.
 */
struct torpor_image_info {
	uint32_t struct_size;	/* sizeof as the core knows it */
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
	 * declared default, or NULL when neither exists.  The core checks
	 * every value against its declaration once all plugins are loaded,
	 * before any initialise(): read configuration in initialise(), or
	 * through config_number(), which checks the value it returns. */
	const char *(*config_get)(const char *section, const char *key);

	/* Memory for keys and passphrases: zeroed, locked, excluded from core
	 * dumps.  secure_free() wipes before freeing and accepts NULL. */
	void *(*secure_alloc)(size_t size);
	void (*secure_free)(void *p, size_t size);

	/* Ask the user for a passphrase (tty without echo, the systemd
	 * password agent, or the --passphrase-file).  Writes a NUL-terminated
	 * string into buf, which should be secure memory.  Returns its length
	 * or -errno (-ENOKEY: no way to ask). */
	int (*ask_passphrase)(const char *prompt, char *buf, size_t size);

	/* What the cycle snapshots: TORPOR_SNAPSHOT_KERNEL, the running
	 * kernel (the machine really sleeps), or a stand-in for tests and
	 * demonstrations (any other value; TORPOR_SNAPSHOT_SIM, the
	 * simulator, is the one there is).  A plugin may hold back what
	 * only a real sleep should do or what only the kernel allows, and
	 * must not depend on which stand-in it is. */
	int (*snapshot_kind)(void);

	/* Swap services of the snapshot device, for writers.  With the kernel
	 * source these are SNAPSHOT_SET_SWAP_AREA (dev in the kernel's
	 * new_encode_dev form, offset of the swap header in bytes, a whole
	 * number of pages: the core hands the kernel pages; the kernel takes
	 * an active swap area only), SNAPSHOT_AVAIL_SWAP_SIZE,
	 * SNAPSHOT_ALLOC_SWAP_PAGE (returns the byte offset of a free swap
	 * page) and SNAPSHOT_FREE_SWAP_PAGES.  swap_set_area() returns
	 * -EOPNOTSUPP where the device leaves an area to the writer (the
	 * simulator does for a swap file): nobody hands out its pages, and
	 * the writer may take them itself from an area the running kernel
	 * does not use (swapoff).  Any thread may call them: the core makes
	 * one call at a time reach the device. */
	int (*swap_set_area)(uint32_t kernel_dev, uint64_t offset);
	int64_t (*swap_avail)(void);
	int64_t (*swap_alloc_page)(void);
	int (*swap_free_pages)(void);

	/* CRC32C (Castagnoli) of buf, continuing from crc (0 to start);
	 * hardware-accelerated where the CPU has it. */
	uint32_t (*crc32c)(uint32_t crc, const void *buf, size_t len);

	/* Turn a device specification (an absolute path, UUID=, LABEL=,
	 * PARTUUID=, PARTLABEL= or MAJ:MIN) into a /dev path in buf.
	 * -ENODEV when nothing matches. */
	int (*resolve_device)(const char *spec, char *buf, size_t size);

	/* The typed value of [section] key (its value, else its declared
	 * default), already checked against its declaration: INT and SIZE
	 * (bytes) as they are, BOOL as 0 or 1, ENUM as the index in
	 * choices[].  -ENOENT when the key has neither value nor default,
	 * -EINVAL when it is not declared as one of those types. */
	int (*config_number)(const char *section, const char *key,
			     int64_t *ret);

	/* The image location given on the kernel command line (resume= and
	 * resume_offset=), which overrides a writer's own location keys at
	 * resume: 1 with the device resolved into dev (size bytes) and the
	 * offset in bytes (0 when none was given), 0 when the command line
	 * names none, -errno when it names a device that cannot be found. */
	int (*resume_location)(char *dev, size_t size, uint64_t *ret_offset);
};

#define TORPOR_HOST_HAS(host, member) \
	((host)->struct_size >= offsetof(struct torpor_host, member) + \
	 sizeof((host)->member) && (host)->member)

/*
 * What every kind of plugin has: the first member of struct torpor_filter,
 * struct torpor_writer and struct torpor_misc, and what the entry point
 * returns.  abi_version and struct_size stay the first two fields in every
 * ABI, so that the core can read them from any plugin and refuse one built
 * for another ABI with a message that says so.  Within an ABI this part
 * never grows (a new common method is a new ABI version); the kind structs
 * grow at their tails.
 */
struct torpor_plugin {
	/* Filled by TORPOR_FILTER_REGISTER() and its siblings. */
	uint32_t abi_version;
	uint32_t struct_size;		/* sizeof the kind's whole struct */
	uint32_t config_key_size;	/* sizeof(struct torpor_config_key) */
	enum torpor_plugin_type type;	/* the kind the macro registered */
	const char *built_for;		/* TORPOR_VERSION_STRING of its SDK */

	const char *name;		/* [a-z0-9-]{1,31}, = file name */
	const char *description;	/* one line */

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
};

/*
 * A filter (TORPOR_FILTER_REGISTER) transforms whole chunks; all of its
 * per-chunk state lives in the per-thread state so the core can run encode
 * / decode on several threads at once, each with its own state.
 */
struct torpor_filter {
	struct torpor_plugin plugin;

	/* Required.  Upper bound on encode()'s output for in_len input bytes.
	 * The core sizes every buffer from it. */
	size_t (*max_encoded_size)(size_t in_len);

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

	/* Optional.  The stream of one image is about to start (see struct
	 * torpor_image_info); called after initialise(1) and load_config(),
	 * before any thread_init().  info and its binding stay valid until
	 * cleanup(). */
	int (*start_stream)(const struct torpor_image_info *info);

	/* Optional.  Create / free one thread's state (work memory,
	 * contexts).  Called after initialise() and before cleanup().
	 * At hibernation thread_init() runs after the snapshot (it follows
	 * start_stream()): the core has grown its heap beforehand by
	 * memory_needed() per state, so allocate the state with malloc()
	 * here, in one go, within what memory_needed() declared.  encode()
	 * and decode() run on worker threads with 512 KiB stacks: keep large
	 * work areas in the state, not on the stack. */
	int (*thread_init)(void **ret_state);
	void (*thread_free)(void *state);

	/* Optional.  Stored bytes per 1000 input bytes that this filter
	 * expects on typical memory (a compressor: about 400-600); the core
	 * multiplies the chain's ratios to estimate the image's stored size
	 * before it asks the writer to reserve room.  Absent: 1000. */
	uint32_t (*expected_ratio)(void);
};

/*
 * A writer (TORPOR_WRITER_REGISTER) stores the image: a header plus a data
 * stream of framed chunks; the writer decides where both go and how its
 * signature points at them.  Offsets given to read() are positions in the
 * data stream.
 */
struct torpor_writer {
	struct torpor_plugin plugin;

	/* Required.  Before anything is frozen: check that an image of
	 * expected_bytes (data stream) fits and prepare the storage.  On
	 * -ENOSPC log "need X MiB, Y MiB free on DEVICE". */
	int (*reserve)(uint64_t expected_bytes);

	/* Required.  Append len bytes to the data stream, in order.  buf is
	 * aligned to TORPOR_WRITE_ALIGN and len is a multiple of it, except
	 * on the last call before commit(), so a writer can hand the
	 * buffer to O_DIRECT I/O as it is and pad only the tail. */
	int (*write)(const void *buf, size_t len);

	/* Required.  After the data: write the header, sync, then write the
	 * signature last (and sync).  Only now is the image resumable. */
	int (*commit)(const void *header, size_t len);

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

	/* Optional.  As a filter's: the stream of one image is about to
	 * start, after the filters were told. */
	int (*start_stream)(const struct torpor_image_info *info);

	/* Optional.  After initialise(1): the most data-stream bytes that
	 * reserve() would accept now (its own overhead, the header and the
	 * signature, already taken off), found without changing anything on
	 * the storage; `torpor status` compares it with the expected stored
	 * size.  -errno when the writer cannot tell. */
	int (*free_space)(uint64_t *ret_bytes);

	/* Optional.  User space is frozen and the snapshot not yet taken:
	 * the last moment a writer may ask a filesystem anything.  After
	 * the snapshot the kernel keeps its own freezable threads and
	 * workqueues frozen until the power-off, so a filesystem call that
	 * needs one (btrfs reads its trees through such workqueues) never
	 * returns; and anything written through a filesystem then is lost to
	 * the resumed kernel.  A writer whose storage lies inside a
	 * filesystem checks here that it is still where reserve() found it.
	 * An error aborts the cycle, which thaws user space again. */
	int (*frozen)(void);

	/* Optional.  The cycle failed before commit: release what reserve()
	 * and write() took and leave the storage as it was. */
	void (*abort)(void);

	/* Optional.  The resume side's invalidate(), once every page of the
	 * image uuid is in the kernel: remove the signature exactly as
	 * invalidate() does (the image is never resumed again: find() must
	 * return 0 for what is left, and say what it is), but leave a small
	 * "consumed image" record, with its own magic and checksum, that
	 * names uuid and where the header lies, so that the resumed system
	 * can read back the statistics rewrite_header() is about to leave.
	 * The next reserve() and invalidate() clear the record.  Absent:
	 * the core calls invalidate(). */
	int (*consume)(const uint8_t uuid[16]);

	/* Optional.  Rewrite the header in place (same length), used by the
	 * resume side to leave its statistics for the resumed system. */
	int (*rewrite_header)(const void *header, size_t len);

	/* Optional.  After initialise(1), in the system resumed from the
	 * image uuid (its memory is the one from before the image was
	 * written: use only what initialise() and reserve() found): copy the
	 * header that consume() left findable into buf (size bytes) and set
	 * *ret_len.  -ENOENT when there is no record, -ESTALE when the
	 * record names another image, -EBADMSG when the record or what it
	 * points at is damaged (the core checks the header and its UUID
	 * again).  Read the device past its page cache: the resumed kernel's
	 * cache predates the image. */
	int (*read_consumed)(const uint8_t uuid[16], void *buf, size_t size,
			     size_t *ret_len);

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

/*
 * A misc plugin (TORPOR_MISC_REGISTER) is neither in the chain nor the
 * image's storage: it is told about the cycle (hooks).
 */
struct torpor_misc {
	struct torpor_plugin plugin;

	/* Optional.  The hibernation cycle is about to freeze user space
	 * (TORPOR_SLEEP_PRE: daemons still run), or has thawed it again
	 * (TORPOR_SLEEP_POST: back from a resume, from suspend to RAM, after
	 * --test, or after an aborted cycle).  action names the sleep as
	 * systemd does: "hibernate" or "hybrid-sleep"; or, for a step of
	 * `torpor suspend-then-hibernate`, "suspend-then-hibernate/STEP",
	 * where STEP is what systemd-sleep puts in SYSTEMD_SLEEP_ACTION:
	 * "suspend", "hibernate" or "suspend-after-failed-hibernate" (the
	 * suspend steps are told outside a cycle).  An error at PRE
	 * aborts the cycle before anything is frozen; at POST it is only
	 * logged. */
	int (*sleep_event)(int event, const char *action);
};

/* The entry point's type: it returns the plugin member of the kind's
 * struct. */
typedef const struct torpor_plugin *(*torpor_plugin_entry_fn)(void);

/*
 * Emit the entry point for a `static const struct KIND` named var, KIND
 * being torpor_filter, torpor_writer or torpor_misc.  The version, the
 * sizes and the kind are set here so that a plugin cannot get them wrong.
 */
#define TORPOR_PLUGIN_ENTRY_(kind, var, kind_type)			\
	__attribute__((visibility("default")))				\
	const struct torpor_plugin *torpor_plugin_entry(void);		\
	__attribute__((visibility("default")))				\
	const struct torpor_plugin *torpor_plugin_entry(void)		\
	{								\
		static struct kind p;					\
		p = (var);						\
		p.plugin.abi_version = TORPOR_PLUGIN_ABI_VERSION;	\
		p.plugin.struct_size = sizeof(struct kind);		\
		p.plugin.config_key_size =				\
			sizeof(struct torpor_config_key);		\
		p.plugin.type = (kind_type);				\
		p.plugin.built_for = TORPOR_VERSION_STRING;		\
		return &p.plugin;					\
	}

#define TORPOR_FILTER_REGISTER(var) \
	TORPOR_PLUGIN_ENTRY_(torpor_filter, var, TORPOR_PLUGIN_FILTER)
#define TORPOR_WRITER_REGISTER(var) \
	TORPOR_PLUGIN_ENTRY_(torpor_writer, var, TORPOR_PLUGIN_WRITER)
#define TORPOR_MISC_REGISTER(var) \
	TORPOR_PLUGIN_ENTRY_(torpor_misc, var, TORPOR_PLUGIN_MISC)

#ifdef __cplusplus
}
#endif

#endif /* TORPOR_PLUGIN_H */
