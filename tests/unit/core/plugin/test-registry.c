/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The plugin registry on in-memory entries (no dlopen).  Every fake plugin
 * records its calls into one trace so that the tests can check the order.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "log.h"
#include "registry.h"

#define N_FAKES 6

struct fake {
	const char *name;
	int init_result;
	size_t memory;
	size_t storage;
	const char *debug;	/* NULL: print_debug_info fails */
	int debug_overclaim;	/* returns this much more than it wrote */
	bool debug_fill;	/* fills the whole buffer, without a NUL */
};

static struct fake fakes[N_FAKES];
static char trace[1024];

static void
record(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
record(const char *fmt, ...)
{
	size_t len = strlen(trace);
	va_list ap;

	if (len)
		len += (size_t)snprintf(trace + len, sizeof(trace) - len, ",");
	va_start(ap, fmt);
	vsnprintf(trace + len, sizeof(trace) - len, fmt, ap);
	va_end(ap);
}

static int
fake_debug(int i, char *buf, size_t size)
{
	int n;

	if (!fakes[i].debug)
		return -EIO;
	if (fakes[i].debug_fill) {
		memset(buf, 'x', size);
		return (int)size + fakes[i].debug_overclaim;
	}
	n = snprintf(buf, size, "%s", fakes[i].debug);
	if ((size_t)n >= size)
		n = (int)size - 1;
	return n + fakes[i].debug_overclaim;
}

#define FAKE(i)								\
	static int fake_init_##i(int c)					\
	{								\
		record("init %s(%d)", fakes[i].name, c);		\
		return fakes[i].init_result;				\
	}								\
	static void fake_cleanup_##i(int c)				\
	{								\
		record("cleanup %s(%d)", fakes[i].name, c);		\
	}								\
	static size_t fake_memory_##i(void)				\
	{								\
		return fakes[i].memory;					\
	}								\
	static size_t fake_storage_##i(void)				\
	{								\
		return fakes[i].storage;				\
	}								\
	static int fake_debug_##i(char *buf, size_t size)		\
	{								\
		return fake_debug(i, buf, size);			\
	}

FAKE(0)
FAKE(1)
FAKE(2)
FAKE(3)
FAKE(4)
FAKE(5)

static int (*const fake_init[N_FAKES])(int) = {
	fake_init_0, fake_init_1, fake_init_2, fake_init_3, fake_init_4,
	fake_init_5,
};
static void (*const fake_cleanup[N_FAKES])(int) = {
	fake_cleanup_0, fake_cleanup_1, fake_cleanup_2, fake_cleanup_3,
	fake_cleanup_4, fake_cleanup_5,
};
static size_t (*const fake_memory[N_FAKES])(void) = {
	fake_memory_0, fake_memory_1, fake_memory_2, fake_memory_3,
	fake_memory_4, fake_memory_5,
};
static size_t (*const fake_storage[N_FAKES])(void) = {
	fake_storage_0, fake_storage_1, fake_storage_2, fake_storage_3,
	fake_storage_4, fake_storage_5,
};
static int (*const fake_debug_fn[N_FAKES])(char *, size_t) = {
	fake_debug_0, fake_debug_1, fake_debug_2, fake_debug_3, fake_debug_4,
	fake_debug_5,
};

static struct registry reg;
static struct plugin_entry entries[N_FAKES];

/* Entry i named name, of type type, with every optional method. */
static struct plugin_entry *
fake_entry(int i, const char *name, int type)
{
	struct plugin_entry *e = &entries[i];

	memset(e, 0, sizeof(*e));
	memset(&fakes[i], 0, sizeof(fakes[i]));
	fakes[i].name = name;
	fakes[i].debug = name;
	e->ops.abi_version = TORPOR_PLUGIN_ABI_VERSION;
	e->ops.struct_size = sizeof(e->ops);
	e->ops.name = name;
	e->ops.type = (enum torpor_plugin_type)type;
	e->ops.initialise = fake_init[i];
	e->ops.cleanup = fake_cleanup[i];
	e->ops.memory_needed = fake_memory[i];
	e->ops.storage_needed = fake_storage[i];
	e->ops.print_debug_info = fake_debug_fn[i];
	return e;
}

static struct plugin_entry *
add(int i, const char *name, int type)
{
	struct plugin_entry *e = fake_entry(i, name, type);

	ck_assert_int_eq(registry_register(&reg, e), 0);
	return e;
}

static void
setup(void)
{
	registry_init(&reg);
	trace[0] = '\0';
}

/* "a,b,c" from walking a list forwards, and the same backwards. */
static void
walk(struct plugin_entry *head, struct plugin_entry *tail, bool typed,
     char *fwd, char *back, size_t size)
{
	struct plugin_entry *e;

	fwd[0] = back[0] = '\0';
	for (e = head; e; e = typed ? e->next_typed : e->next_plugin) {
		if (fwd[0])
			strncat(fwd, ",", size - strlen(fwd) - 1);
		strncat(fwd, e->ops.name, size - strlen(fwd) - 1);
	}
	for (e = tail; e; e = typed ? e->prev_typed : e->prev_plugin) {
		if (back[0])
			strncat(back, ",", size - strlen(back) - 1);
		strncat(back, e->ops.name, size - strlen(back) - 1);
	}
}

/* Check a list's order both ways (expected_back is it reversed). */
static void
check_list(struct plugin_entry *head, struct plugin_entry *tail, bool typed,
	   const char *expected, const char *expected_back)
{
	char fwd[256], back[256];

	walk(head, tail, typed, fwd, back, sizeof(fwd));
	ck_assert_str_eq(fwd, expected);
	ck_assert_str_eq(back, expected_back);
}

START_TEST(test_register_lists)
{
	add(0, "f1", TORPOR_PLUGIN_FILTER);
	add(1, "w1", TORPOR_PLUGIN_WRITER);
	add(2, "m1", TORPOR_PLUGIN_MISC);
	add(3, "f2", TORPOR_PLUGIN_FILTER);
	add(4, "w2", TORPOR_PLUGIN_WRITER);

	check_list(reg.plugins_head, reg.plugins_tail, false,
		   "f1,w1,m1,f2,w2", "w2,f2,m1,w1,f1");
	check_list(reg.filters_head, reg.filters_tail, true, "f1,f2", "f2,f1");
	check_list(reg.writers_head, reg.writers_tail, true, "w1,w2", "w2,w1");
	ck_assert_uint_eq(reg.n_plugins, 5);
	ck_assert_uint_eq(reg.n_filters, 2);
	ck_assert_uint_eq(reg.n_writers, 2);
	ck_assert_ptr_null(entries[2].next_typed);
	ck_assert_ptr_null(entries[2].prev_typed);
}
END_TEST

START_TEST(test_register_duplicate)
{
	struct plugin_entry *dup;

	add(0, "same", TORPOR_PLUGIN_FILTER);
	add(1, "other", TORPOR_PLUGIN_WRITER);
	dup = fake_entry(2, "same", TORPOR_PLUGIN_WRITER);
	ck_assert_int_eq(registry_register(&reg, dup), -EBUSY);
	ck_assert_uint_eq(reg.n_plugins, 2);
	ck_assert_uint_eq(reg.n_writers, 1);
	check_list(reg.plugins_head, reg.plugins_tail, false, "same,other",
		   "other,same");
	check_list(reg.writers_head, reg.writers_tail, true, "other", "other");
	ck_assert_ptr_eq(registry_find(&reg, "same"), &entries[0]);
}
END_TEST

START_TEST(test_register_invalid_type)
{
	struct plugin_entry *bad;
	char log[1024];
	int r;

	add(0, "f1", TORPOR_PLUGIN_FILTER);
	bad = fake_entry(1, "strange", 9);
	capture_start();
	r = registry_register(&reg, bad);
	capture_end(log, sizeof(log));
	ck_assert_int_eq(r, -EINVAL);
	ck_assert_msg(strstr(log, "strange") != NULL,
		      "the message does not name the plugin: '%s'", log);
	ck_assert_uint_eq(reg.n_plugins, 1);
	ck_assert_ptr_null(registry_find(&reg, "strange"));
	check_list(reg.plugins_head, reg.plugins_tail, false, "f1", "f1");

	bad = fake_entry(2, "zero", 0);
	ck_assert_int_eq(registry_register(&reg, bad), -EINVAL);
	ck_assert_uint_eq(reg.n_plugins, 1);
}
END_TEST

START_TEST(test_unregister)
{
	add(0, "f1", TORPOR_PLUGIN_FILTER);
	add(1, "f2", TORPOR_PLUGIN_FILTER);
	add(2, "m1", TORPOR_PLUGIN_MISC);
	add(3, "f3", TORPOR_PLUGIN_FILTER);
	add(4, "w1", TORPOR_PLUGIN_WRITER);

	/* middle */
	registry_unregister(&reg, &entries[1]);
	check_list(reg.plugins_head, reg.plugins_tail, false, "f1,m1,f3,w1",
		   "w1,f3,m1,f1");
	check_list(reg.filters_head, reg.filters_tail, true, "f1,f3", "f3,f1");
	ck_assert_ptr_null(registry_find(&reg, "f2"));
	/* head */
	registry_unregister(&reg, &entries[0]);
	check_list(reg.filters_head, reg.filters_tail, true, "f3", "f3");
	/* misc */
	registry_unregister(&reg, &entries[2]);
	/* tail */
	registry_unregister(&reg, &entries[4]);
	check_list(reg.plugins_head, reg.plugins_tail, false, "f3", "f3");
	check_list(reg.writers_head, reg.writers_tail, true, "", "");
	ck_assert_uint_eq(reg.n_plugins, 1);
	ck_assert_uint_eq(reg.n_filters, 1);
	ck_assert_uint_eq(reg.n_writers, 0);

	/* Twice is harmless. */
	registry_unregister(&reg, &entries[0]);
	ck_assert_uint_eq(reg.n_plugins, 1);
	registry_unregister(&reg, &entries[3]);
	ck_assert_ptr_null(reg.plugins_head);
	ck_assert_ptr_null(reg.plugins_tail);
	ck_assert_ptr_null(reg.filters_head);
	ck_assert_uint_eq(reg.n_plugins, 0);

	/* A removed name can register again. */
	add(0, "f1", TORPOR_PLUGIN_FILTER);
	ck_assert_ptr_eq(registry_find(&reg, "f1"), &entries[0]);
}
END_TEST

START_TEST(test_unregister_active_writer)
{
	struct plugin_entry *w1, *w2;

	ck_assert(!registry_can_hibernate(&reg));
	w1 = add(0, "raw", TORPOR_PLUGIN_WRITER);
	w2 = add(1, "swap", TORPOR_PLUGIN_WRITER);
	registry_set_active_writer(&reg, w1);
	ck_assert(registry_can_hibernate(&reg));
	ck_assert_str_eq(reg.disabled_reason, "");

	/* Another writer going away changes nothing. */
	registry_unregister(&reg, w2);
	ck_assert_ptr_eq(reg.active_writer, w1);
	ck_assert(registry_can_hibernate(&reg));

	registry_unregister(&reg, w1);
	ck_assert_ptr_null(reg.active_writer);
	ck_assert(!registry_can_hibernate(&reg));
	ck_assert_msg(strstr(reg.disabled_reason, "'raw'") &&
		      strstr(reg.disabled_reason, "unloaded"),
		      "reason: '%s'", reg.disabled_reason);

	/* Choosing a writer again clears the reason. */
	w2 = add(1, "swap", TORPOR_PLUGIN_WRITER);
	registry_set_active_writer(&reg, w2);
	ck_assert_str_eq(reg.disabled_reason, "");
	ck_assert(registry_can_hibernate(&reg));
	registry_set_active_writer(&reg, NULL);
	ck_assert(!registry_can_hibernate(&reg));

	/* A recorded reason stops hibernation even with a writer. */
	reg.active_writer = w2;
	snprintf(reg.disabled_reason, sizeof(reg.disabled_reason),
		 "testing");
	ck_assert(!registry_can_hibernate(&reg));
}
END_TEST

START_TEST(test_move_tail)
{
	add(0, "f1", TORPOR_PLUGIN_FILTER);
	add(1, "w1", TORPOR_PLUGIN_WRITER);
	add(2, "f2", TORPOR_PLUGIN_FILTER);
	add(3, "m1", TORPOR_PLUGIN_MISC);
	add(4, "f3", TORPOR_PLUGIN_FILTER);
	add(5, "w2", TORPOR_PLUGIN_WRITER);

	registry_move_tail(&reg, &entries[0]);
	check_list(reg.filters_head, reg.filters_tail, true, "f2,f3,f1",
		   "f1,f3,f2");
	check_list(reg.plugins_head, reg.plugins_tail, false,
		   "w1,f2,m1,f3,w2,f1", "f1,w2,f3,m1,f2,w1");
	check_list(reg.writers_head, reg.writers_tail, true, "w1,w2", "w2,w1");

	/* Already at the tail: nothing moves. */
	registry_move_tail(&reg, &entries[0]);
	check_list(reg.filters_head, reg.filters_tail, true, "f2,f3,f1",
		   "f1,f3,f2");

	/* The resume side rebuilds a recorded order f3, f2, f1. */
	registry_move_tail(&reg, &entries[4]);
	registry_move_tail(&reg, &entries[2]);
	registry_move_tail(&reg, &entries[0]);
	check_list(reg.filters_head, reg.filters_tail, true, "f3,f2,f1",
		   "f1,f2,f3");

	registry_move_tail(&reg, &entries[1]);
	check_list(reg.writers_head, reg.writers_tail, true, "w2,w1", "w1,w2");
	registry_move_tail(&reg, &entries[3]);
	check_list(reg.plugins_head, reg.plugins_tail, false,
		   "w2,f3,f2,f1,w1,m1", "m1,w1,f1,f2,f3,w2");
	ck_assert_uint_eq(reg.n_plugins, 6);
	ck_assert_uint_eq(reg.n_filters, 3);
	ck_assert_uint_eq(reg.n_writers, 2);
}
END_TEST

START_TEST(test_initialise_cleanup_order)
{
	int i;

	add(0, "a", TORPOR_PLUGIN_FILTER);
	add(1, "b", TORPOR_PLUGIN_WRITER);
	add(2, "c", TORPOR_PLUGIN_MISC);
	ck_assert_int_eq(registry_initialise(&reg, 1), 0);
	ck_assert_str_eq(trace, "init a(1),init b(1),init c(1)");
	for (i = 0; i < 3; i++)
		ck_assert(entries[i].initialised);

	/* Initialising again does not initialise twice. */
	trace[0] = '\0';
	ck_assert_int_eq(registry_initialise(&reg, 1), 0);
	ck_assert_str_eq(trace, "");

	/* Torn down newest first. */
	registry_cleanup(&reg, 1);
	ck_assert_str_eq(trace, "cleanup c(1),cleanup b(1),cleanup a(1)");
	for (i = 0; i < 3; i++)
		ck_assert(!entries[i].initialised);

	/* Cleanup without initialise calls nothing. */
	trace[0] = '\0';
	registry_cleanup(&reg, 1);
	ck_assert_str_eq(trace, "");

	/* The flag reaches the plugins as given. */
	ck_assert_int_eq(registry_initialise(&reg, 0), 0);
	registry_cleanup(&reg, 0);
	ck_assert_str_eq(trace, "init a(0),init b(0),init c(0),"
			 "cleanup c(0),cleanup b(0),cleanup a(0)");
}
END_TEST

START_TEST(test_initialise_skips_disabled)
{
	add(0, "a", TORPOR_PLUGIN_FILTER);
	add(1, "b", TORPOR_PLUGIN_FILTER)->disabled = true;
	add(2, "c", TORPOR_PLUGIN_WRITER);
	ck_assert_int_eq(registry_initialise(&reg, 1), 0);
	ck_assert_str_eq(trace, "init a(1),init c(1)");
	ck_assert(!entries[1].initialised);
	registry_cleanup(&reg, 1);
	ck_assert_str_eq(trace, "init a(1),init c(1),cleanup c(1),cleanup a(1)");

	/* Disabled after initialise: cleanup skips it, but it stays marked
	 * initialised, so its cleanup() is still owed once it is enabled. */
	entries[1].disabled = false;
	ck_assert_int_eq(registry_initialise(&reg, 1), 0);
	entries[1].disabled = true;
	trace[0] = '\0';
	registry_cleanup(&reg, 1);
	ck_assert_str_eq(trace, "cleanup c(1),cleanup a(1)");
	ck_assert(entries[1].initialised);
	entries[1].disabled = false;
	registry_cleanup(&reg, 1);
	ck_assert_str_eq(trace, "cleanup c(1),cleanup a(1),cleanup b(1)");
	ck_assert(!entries[1].initialised);
}
END_TEST

START_TEST(test_initialise_failure_rolls_back)
{
	char log[1024];
	int r, i;

	add(0, "a", TORPOR_PLUGIN_FILTER);
	add(1, "b", TORPOR_PLUGIN_MISC)->disabled = true;
	add(2, "c", TORPOR_PLUGIN_FILTER);
	add(3, "d", TORPOR_PLUGIN_WRITER);
	add(4, "e", TORPOR_PLUGIN_MISC);
	fakes[3].init_result = -EIO;

	capture_start();
	r = registry_initialise(&reg, 1);
	capture_end(log, sizeof(log));
	ck_assert_int_eq(r, -EIO);
	/* d failed: e is never asked, c then a are cleaned up with the same
	 * flag, the disabled b is never touched. */
	ck_assert_str_eq(trace, "init a(1),init c(1),init d(1),"
			 "cleanup c(1),cleanup a(1)");
	for (i = 0; i < 5; i++)
		ck_assert_msg(!entries[i].initialised, "%d still initialised", i);
	ck_assert_msg(strstr(log, "'d'") != NULL,
		      "the failure does not name the plugin: '%s'", log);

	/* Nothing left to clean up. */
	trace[0] = '\0';
	registry_cleanup(&reg, 1);
	ck_assert_str_eq(trace, "");

	/* starting_cycle 0 rolls back with cleanup(0). */
	capture_start();
	r = registry_initialise(&reg, 0);
	capture_end(log, sizeof(log));
	ck_assert_int_eq(r, -EIO);
	ck_assert_str_eq(trace, "init a(0),init c(0),init d(0),"
			 "cleanup c(0),cleanup a(0)");

	/* The first plugin failing leaves nothing to undo. */
	trace[0] = '\0';
	fakes[3].init_result = 0;
	fakes[0].init_result = -ENODEV;
	capture_start();
	r = registry_initialise(&reg, 1);
	capture_end(log, sizeof(log));
	ck_assert_int_eq(r, -ENODEV);
	ck_assert_str_eq(trace, "init a(1)");
}
END_TEST

START_TEST(test_initialise_without_method)
{
	struct plugin_entry *b;

	add(0, "a", TORPOR_PLUGIN_FILTER);
	b = add(1, "b", TORPOR_PLUGIN_WRITER);
	b->ops.initialise = NULL;
	add(2, "c", TORPOR_PLUGIN_MISC)->ops.cleanup = NULL;
	ck_assert_int_eq(registry_initialise(&reg, 1), 0);
	ck_assert(b->initialised);
	/* b needs no set-up but its cleanup() is still owed. */
	registry_cleanup(&reg, 1);
	ck_assert_str_eq(trace, "init a(1),init c(1),cleanup b(1),cleanup a(1)");
}
END_TEST

START_TEST(test_next_filter)
{
	struct plugin_entry *f1, *f2, *f3, *w, *m;

	/* Nothing registered. */
	ck_assert_ptr_null(registry_next_filter(&reg, NULL));

	f1 = add(0, "f1", TORPOR_PLUGIN_FILTER);
	m = add(1, "m", TORPOR_PLUGIN_MISC);
	f2 = add(2, "f2", TORPOR_PLUGIN_FILTER);
	w = add(3, "w", TORPOR_PLUGIN_WRITER);
	f3 = add(4, "f3", TORPOR_PLUGIN_FILTER);

	/* No active writer: the walk ends after the last filter. */
	ck_assert_ptr_eq(registry_next_filter(&reg, NULL), f1);
	ck_assert_ptr_eq(registry_next_filter(&reg, f1), f2);
	ck_assert_ptr_eq(registry_next_filter(&reg, f2), f3);
	ck_assert_ptr_null(registry_next_filter(&reg, f3));

	registry_set_active_writer(&reg, w);
	ck_assert_ptr_eq(registry_next_filter(&reg, f3), w);
	/* The writer ends the chain. */
	ck_assert_ptr_null(registry_next_filter(&reg, w));
	ck_assert_ptr_null(registry_next_filter(&reg, m));

	/* Disabled filters are skipped, wherever they are. */
	f2->disabled = true;
	ck_assert_ptr_eq(registry_next_filter(&reg, f1), f3);
	/* A disabled current filter still leads to the next enabled one. */
	ck_assert_ptr_eq(registry_next_filter(&reg, f2), f3);
	f1->disabled = true;
	ck_assert_ptr_eq(registry_next_filter(&reg, NULL), f3);
	f3->disabled = true;
	ck_assert_ptr_eq(registry_next_filter(&reg, NULL), w);

	/* The chain follows the filter list's order. */
	f1->disabled = f2->disabled = f3->disabled = false;
	registry_move_tail(&reg, f1);
	ck_assert_ptr_eq(registry_next_filter(&reg, NULL), f2);
	ck_assert_ptr_eq(registry_next_filter(&reg, f2), f3);
	ck_assert_ptr_eq(registry_next_filter(&reg, f3), f1);
	ck_assert_ptr_eq(registry_next_filter(&reg, f1), w);
}
END_TEST

START_TEST(test_next_filter_no_filters)
{
	struct plugin_entry *w;

	add(0, "m", TORPOR_PLUGIN_MISC);
	w = add(1, "w", TORPOR_PLUGIN_WRITER);
	registry_set_active_writer(&reg, w);
	ck_assert_ptr_eq(registry_next_filter(&reg, NULL), w);
}
END_TEST

START_TEST(test_get_put)
{
	int i;

	for (i = 0; i < 4; i++)
		add(i, (const char *[]){ "a", "b", "c", "d" }[i],
		    i == 3 ? TORPOR_PLUGIN_WRITER : TORPOR_PLUGIN_FILTER);
	entries[1].disabled = true;

	ck_assert_int_eq(registry_get(&reg), 0);
	for (i = 0; i < 4; i++)
		ck_assert_uint_eq(entries[i].refs, 1);
	ck_assert_int_eq(registry_get(&reg), 0);
	for (i = 0; i < 4; i++)
		ck_assert_uint_eq(entries[i].refs, 2);
	registry_put(&reg);
	registry_put(&reg);
	for (i = 0; i < 4; i++)
		ck_assert_uint_eq(entries[i].refs, 0);

	/* A dying plugin refuses: the references taken before it in the
	 * same call are dropped again. */
	entries[2].dying = true;
	ck_assert_int_eq(registry_get(&reg), -EBUSY);
	for (i = 0; i < 4; i++)
		ck_assert_uint_eq(entries[i].refs, 0);

	/* Dying at the head or the tail alike. */
	entries[2].dying = false;
	entries[3].dying = true;
	ck_assert_int_eq(registry_get(&reg), -EBUSY);
	for (i = 0; i < 4; i++)
		ck_assert_uint_eq(entries[i].refs, 0);
	entries[3].dying = false;
	entries[0].dying = true;
	ck_assert_int_eq(registry_get(&reg), -EBUSY);
	for (i = 0; i < 4; i++)
		ck_assert_uint_eq(entries[i].refs, 0);

	/* References held from before a failed get are kept. */
	entries[0].dying = false;
	ck_assert_int_eq(registry_get(&reg), 0);
	entries[3].dying = true;
	ck_assert_int_eq(registry_get(&reg), -EBUSY);
	for (i = 0; i < 4; i++)
		ck_assert_uint_eq(entries[i].refs, 1);
	registry_put(&reg);
	for (i = 0; i < 4; i++)
		ck_assert_uint_eq(entries[i].refs, 0);
	/* put never wraps below zero. */
	registry_put(&reg);
	for (i = 0; i < 4; i++)
		ck_assert_uint_eq(entries[i].refs, 0);
}
END_TEST

START_TEST(test_header_storage)
{
	ck_assert_uint_eq(registry_header_storage(&reg), 0);
	add(0, "a", TORPOR_PLUGIN_FILTER);
	add(1, "b", TORPOR_PLUGIN_FILTER);
	add(2, "c", TORPOR_PLUGIN_WRITER);
	add(3, "d", TORPOR_PLUGIN_MISC)->ops.storage_needed = NULL;
	fakes[0].storage = 100;
	fakes[1].storage = 20;
	fakes[2].storage = 3;
	ck_assert_uint_eq(registry_header_storage(&reg), 123);
	entries[1].disabled = true;
	ck_assert_uint_eq(registry_header_storage(&reg), 103);
}
END_TEST

START_TEST(test_find)
{
	add(0, "lzo", TORPOR_PLUGIN_FILTER);
	add(1, "crypt", TORPOR_PLUGIN_FILTER);
	add(2, "swap", TORPOR_PLUGIN_WRITER);
	ck_assert_ptr_eq(registry_find(&reg, "crypt"), &entries[1]);
	ck_assert_ptr_eq(registry_find(&reg, "swap"), &entries[2]);
	ck_assert_ptr_eq(registry_find(&reg, "lzo"), &entries[0]);
	ck_assert_ptr_null(registry_find(&reg, "lz"));
	ck_assert_ptr_null(registry_find(&reg, "lzo4"));
	ck_assert_ptr_null(registry_find(&reg, NULL));
	/* Disabled plugins are still found (resume enables them by name). */
	entries[1].disabled = true;
	ck_assert_ptr_eq(registry_find(&reg, "crypt"), &entries[1]);
	registry_unregister(&reg, &entries[1]);
	ck_assert_ptr_null(registry_find(&reg, "crypt"));
}
END_TEST

START_TEST(test_debug_info)
{
	char buf[256];
	size_t n;

	add(0, "lzo", TORPOR_PLUGIN_FILTER);
	add(1, "crypt", TORPOR_PLUGIN_FILTER);
	add(2, "swap", TORPOR_PLUGIN_WRITER);
	add(3, "quiet", TORPOR_PLUGIN_MISC)->ops.print_debug_info = NULL;
	fakes[0].debug = "ratio 2.5";
	fakes[1].debug = "aes256-gcm\n";
	fakes[2].debug = "/dev/sda2";

	n = registry_debug_info(&reg, buf, sizeof(buf));
	ck_assert_str_eq(buf, "lzo: ratio 2.5\ncrypt: aes256-gcm\n"
			 "swap: /dev/sda2\n");
	ck_assert_uint_eq(n, strlen(buf));

	entries[1].disabled = true;
	n = registry_debug_info(&reg, buf, sizeof(buf));
	ck_assert_str_eq(buf, "lzo: ratio 2.5\nswap: /dev/sda2\n");
	ck_assert_uint_eq(n, strlen(buf));

	/* A plugin's failure is shown, not hidden. */
	fakes[2].debug = NULL;
	registry_debug_info(&reg, buf, sizeof(buf));
	ck_assert_msg(strncmp(buf, "lzo: ratio 2.5\nswap: ", 21) == 0 &&
		      strstr(buf, "Input/output error"), "got '%s'", buf);
}
END_TEST

#define CANARY 0x5a

START_TEST(test_debug_info_truncation)
{
	static const char full[] = "aa: 0123456789\nbb: abcdefghijklmnopqrstuvwxyz\n";
	static const char mark[] = "...[truncated]";
	char buf[sizeof(full) + 16];
	size_t size, n, i;

	add(0, "aa", TORPOR_PLUGIN_FILTER);
	add(1, "bb", TORPOR_PLUGIN_WRITER);
	fakes[0].debug = "0123456789";
	fakes[1].debug = "abcdefghijklmnopqrstuvwxyz";

	for (size = 0; size < sizeof(buf) - 1; size++) {
		memset(buf, CANARY, sizeof(buf));
		n = registry_debug_info(&reg, buf, size);
		for (i = size; i < sizeof(buf); i++)
			ck_assert_msg((unsigned char)buf[i] == CANARY,
				      "size %zu: byte %zu written", size, i);
		if (size == 0) {
			ck_assert_uint_eq(n, 0);
			continue;
		}
		ck_assert_uint_eq(strnlen(buf, size), n);
		ck_assert_uint_lt(n, size);
		if (size >= sizeof(full)) {
			ck_assert_str_eq(buf, full);
		} else if (size > sizeof(mark)) {
			/* Uses the whole buffer and ends with the mark. */
			ck_assert_uint_eq(n, size - 1);
			ck_assert_msg(strcmp(buf + n - strlen(mark), mark) == 0,
				      "size %zu: '%s' has no mark", size, buf);
			ck_assert_msg(strncmp(buf, full, n - strlen(mark)) == 0,
				      "size %zu: '%s'", size, buf);
		} else {
			/* Too small for the whole mark: as much of it as fits. */
			ck_assert_uint_eq(n, size - 1);
			ck_assert(strncmp(buf, mark, n) == 0);
		}
	}
}
END_TEST

START_TEST(test_debug_info_lying_plugin)
{
	char buf[64];
	size_t n;

	/* Claims far more than it wrote: never trusted past the buffer. */
	add(0, "liar", TORPOR_PLUGIN_FILTER);
	fakes[0].debug = "short";
	fakes[0].debug_overclaim = 1000;
	memset(buf, CANARY, sizeof(buf));
	n = registry_debug_info(&reg, buf, 32);
	ck_assert_uint_lt(n, 32);
	ck_assert_uint_eq(strlen(buf), n);
	ck_assert(strncmp(buf, "liar: short", 11) == 0);
	for (size_t i = 32; i < sizeof(buf); i++)
		ck_assert_int_eq((unsigned char)buf[i], CANARY);

	/* Fills what it got, no NUL, claims more: read only within its
	 * buffer (valgrind and ASan watch the reads), cut with the mark. */
	fakes[0].debug_fill = true;
	memset(buf, CANARY, sizeof(buf));
	n = registry_debug_info(&reg, buf, 32);
	ck_assert_uint_eq(n, 31);
	ck_assert_str_eq(buf, "liar: xxxxxxxxxxx...[truncated]");
	for (size_t i = 32; i < sizeof(buf); i++)
		ck_assert_int_eq((unsigned char)buf[i], CANARY);
}
END_TEST

START_TEST(test_memory_needed)
{
	ck_assert_uint_eq(registry_memory_needed(&reg, 4096), 0);
	add(0, "a", TORPOR_PLUGIN_FILTER);
	add(1, "b", TORPOR_PLUGIN_WRITER);
	add(2, "c", TORPOR_PLUGIN_MISC)->ops.memory_needed = NULL;

	fakes[0].memory = 0;
	ck_assert_uint_eq(registry_memory_needed(&reg, 4096), 0);
	fakes[0].memory = 1;
	ck_assert_uint_eq(registry_memory_needed(&reg, 4096), 1);
	fakes[0].memory = 4096;
	ck_assert_uint_eq(registry_memory_needed(&reg, 4096), 1);
	fakes[0].memory = 4097;
	ck_assert_uint_eq(registry_memory_needed(&reg, 4096), 2);

	/* Summed before rounding: 2048 + 2048 is one page, not two. */
	fakes[0].memory = 2048;
	fakes[1].memory = 2048;
	ck_assert_uint_eq(registry_memory_needed(&reg, 4096), 1);
	fakes[1].memory = 2049;
	ck_assert_uint_eq(registry_memory_needed(&reg, 4096), 2);
	ck_assert_uint_eq(registry_memory_needed(&reg, 16384), 1);

	entries[1].disabled = true;
	ck_assert_uint_eq(registry_memory_needed(&reg, 1024), 2);
}
END_TEST

Suite *registry_suite(void);

Suite *
registry_suite(void)
{
	Suite *s = suite_create("registry");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_register_lists);
	tcase_add_test(tc, test_register_duplicate);
	tcase_add_test(tc, test_register_invalid_type);
	tcase_add_test(tc, test_unregister);
	tcase_add_test(tc, test_unregister_active_writer);
	tcase_add_test(tc, test_move_tail);
	tcase_add_test(tc, test_initialise_cleanup_order);
	tcase_add_test(tc, test_initialise_skips_disabled);
	tcase_add_test(tc, test_initialise_failure_rolls_back);
	tcase_add_test(tc, test_initialise_without_method);
	tcase_add_test(tc, test_next_filter);
	tcase_add_test(tc, test_next_filter_no_filters);
	tcase_add_test(tc, test_get_put);
	tcase_add_test(tc, test_header_storage);
	tcase_add_test(tc, test_find);
	tcase_add_test(tc, test_debug_info);
	tcase_add_test(tc, test_debug_info_truncation);
	tcase_add_test(tc, test_debug_info_lying_plugin);
	tcase_add_test(tc, test_memory_needed);
	suite_add_tcase(s, tc);
	return s;
}
