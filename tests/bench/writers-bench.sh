#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Throughput of the swap and file writers on loop devices next to plain
# O_DIRECT 1 MiB writes and reads to the same devices, measured in one run.
# Prints MiB/s and ratios; never fails on time.  Needs root.
#   tests/bench/writers-bench.sh BUILD_DIR [MIB [ROUNDS]]
# Prints each round and the medians; raw is measured before and after each
# writer in every round, on the same loop device.
set -eu
build=$(cd "${1:?usage: $0 BUILD_DIR [MIB]}" && pwd)
export TORPOR_BUILD_PLUGINDIR="$build/plugins"
export TORPOR_WRITERS_BENCH_MIB="${2:-256}"
export TORPOR_WRITERS_BENCH_ROUNDS="${3:-5}"
exec "$build/tests/unit/test-writers" bench
