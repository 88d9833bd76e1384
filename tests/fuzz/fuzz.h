/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What each fuzz target provides: the libFuzzer entry point, and valid
 * inputs that fuzz-driver.c (the GCC stand-in for libFuzzer) mutates.
 */
#ifndef TORPOR_FUZZ_H
#define TORPOR_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Write valid input number i into buf (size bytes); returns its length,
 * or 0 when there is no input i. */
size_t fuzz_seed(unsigned int i, uint8_t *buf, size_t size);

#endif
