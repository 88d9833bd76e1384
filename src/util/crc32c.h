/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The one CRC32C of torpor: the core, the block-device library and (through
 * torpor_host.crc32c) every plugin use it. */
#ifndef TORPOR_CRC32C_H
#define TORPOR_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* CRC32C (Castagnoli), hardware-accelerated where the CPU has it. */
uint32_t crc32c(uint32_t crc, const void *buf, size_t len);

/* The two implementations behind crc32c(), on the raw register (no
 * inversion before or after), for the tests that compare them.
 * crc32c_raw_sse42 exists on x86-64 only and needs SSE4.2. */
uint32_t crc32c_raw_table(uint32_t crc, const uint8_t *p, size_t len);
#if defined(__x86_64__)
uint32_t crc32c_raw_sse42(uint32_t crc, const uint8_t *p, size_t len);
#endif

#endif
