#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Cost of the crypt filter: the lzo filter alone and lzo + crypt over the
# same simulated memory image (the sim source's page generator), in one
# run, through the built plugins; then AES-256-GCM against
# ChaCha20-Poly1305 in libgcrypt, and the default Argon2id unlock time.
#
# Usage: tests/bench/crypt-bench.sh BUILD_DIR [SIZE_MIB]   (default 512)
# Compiles itself with cc and pkg-config; exits 77 when it cannot.
set -eu

build=${1:?usage: $0 BUILD_DIR [SIZE_MIB]}
size=${2:-512}
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$build" && pwd)
plugins="$build/plugins"

for f in "$plugins/lzo.so" "$plugins/crypt.so"; do
	[ -e "$f" ] || { echo "crypt-bench: $f is not built" >&2; exit 77; }
done
command -v cc >/dev/null && pkg-config --exists libgcrypt ||
	{ echo "crypt-bench: needs cc and libgcrypt's pkg-config" >&2; exit 77; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The sim generator comes from the core; the bench links only it (and the
# log it may use), dropping the snapshot device code it does not call, and
# the key-format library.
# shellcheck disable=SC2046
cc -O2 -D_GNU_SOURCE -std=c11 -ffunction-sections -fdata-sections \
	-I"$src/include" -I"$src/src/core/log" -I"$src/src/core/snapshot" -I"$src/src/core/snapshot/internal" -I"$src/src/core/config" -I"$src/src/core/plugin" -I"$src/src/crypt-key" -I"$build" \
	-o "$work/bench" "$src/tests/bench/crypt-bench.c" \
	"$src/src/core/snapshot/snapshot-sim.c" "$src/src/core/log/log.c" \
	"$src/src/crypt-key/crypt-key.c" \
	-Wl,--gc-sections \
	$(pkg-config --cflags --libs libgcrypt) -ldl -lpthread

head -c 32 /dev/urandom >"$work/keyfile"
chmod 600 "$work/keyfile"
"$work/bench" "$plugins" "$work/keyfile" "$size"
