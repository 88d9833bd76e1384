#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# torpor-stale-image.service's logic on a swap partition (a loop device):
# an image the initramfs did not resume is discarded by
# `torpor invalidate --stale` in the booted system, with the reason the
# initramfs step (torpor-initrd-resume) left in /run; with no image it is
# silent; a device that is not there is waited for (bounded) and said.
# The initramfs step itself runs here with its /run moved under $WORK.
. "$(dirname "$0")/lib.sh"

SRC=$(cd "$(dirname "$0")/../../.." && pwd)
SYSROOT=$WORK/sysroot
RESULT=$SYSROOT/run/initramfs/torpor-resume.result
mkdir -p "$SYSROOT/run/initramfs" "$WORK/bin"
export TORPOR_TEST_SYSROOT=$SYSROOT
# The initramfs step's console, away from this machine's.
export TORPOR_CONSOLE=$WORK/console
: >"$TORPOR_CONSOLE"

make_loop swap 64 || { echo "FAIL: losetup"; exit 1; }
dev=$LOOP
mkswap "$dev" >/dev/null || { echo "FAIL: mkswap"; exit 1; }
SIM=sim:8M:4
write_config swap "device = $dev"

# The initramfs step as the hooks run it, its /run under $SYSROOT, with
# torpor-resume reading this test's configuration.
sed "s|/run/initramfs|$SYSROOT/run/initramfs|g" \
	"$SRC/initramfs/common/torpor-initrd-resume" >"$WORK/initrd-resume"
cat >"$WORK/bin/torpor-resume" <<EOF2
#!/bin/sh
exec "$RESUME_BIN" --config "\${STALE_CONF:-$CONF}" --plugin-dir "$PLUGINS" --cmdline "$CMDLINE" "\$@"
EOF2
chmod 755 "$WORK/initrd-resume" "$WORK/bin/torpor-resume"
initrd_step() { PATH="$WORK/bin:$PATH" TORPOR_WAIT_DEVICE=1 sh "$WORK/initrd-resume"; }

is_swap() { [ "$(blkid -p -o value -s TYPE "$dev")" = swap ]; }

hibernate() {	# hibernate WHAT: an image on the swap area
	t_run torpor hibernate --direct
	expect_rc 0 "$1: hibernate"
	! is_swap || fail "$1: hibernate left the swap signature"
}

stale() {	# stale WHAT REASON-REGEX: discarded, with that reason
	t_run torpor invalidate --stale
	expect_rc 0 "$1: invalidate --stale"
	expect_err "discarded a stale hibernation image on writer 'swap': $2" "$1"
	[ "$(grep -c . "$ERR")" = 1 ] || fail "$1: not one line"
	is_swap || fail "$1: the swap signature is not back"
	swapon "$dev" && swapoff "$dev" || fail "$1: swapon after the discard"
}

# No image: silent, nothing changed.
t_run torpor invalidate --stale
expect_rc 0 "no image"
[ ! -s "$OUT" ] && [ ! -s "$ERR" ] || fail "no image: not silent"
is_swap || fail "no image: the swap area changed"

# No word from the initramfs: it had no torpor.
hibernate "no initramfs step"
stale "no initramfs step" "the initramfs did not run torpor-resume \(is torpor in it\?"
t_run torpor invalidate --stale
[ ! -s "$OUT" ] && [ ! -s "$ERR" ] || fail "after the discard: not silent"

# The storage appeared too late: the initramfs step, with the device
# missing, waits its bounded time and says so; the booted system then
# finds the image on the device and discards it.
hibernate "too late"
sed "s|^device = .*|device = $WORK/no-such-device|" "$CONF" >"$WORK/missing.conf"
STALE_CONF=$WORK/missing.conf initrd_step >"$OUT" 2>"$ERR"
grep -q 'torpor: the storage of the hibernation image did not appear; booting normally' "$OUT" ||
	fail "too late: the initramfs step's console line"
[ "$(cat "$RESULT")" = no-device ] || fail "too late: the initramfs left '$(cat "$RESULT")'"
stale "too late" "its storage did not appear within the initramfs' wait"

# The initramfs looked and found nothing (the image came afterwards).
initrd_step >"$OUT" 2>&1
[ "$(cat "$RESULT")" = none ] || fail "none: the initramfs left '$(cat "$RESULT")'"
hibernate "none"
stale "none" "the initramfs found no image: its storage appeared too late"

# The other words the step leaves, and one it does not know.
for w in "refused:the initramfs refused it" \
	 "failed:torpor-resume failed in the initramfs" \
	 "noresume:noresume was given" "odd:the initramfs left 'odd'"; do
	echo "${w%%:*}" >"$RESULT"
	hibernate "${w%%:*}"
	stale "${w%%:*}" "${w#*:}"
done

# noresume in the initramfs: the image is discarded there already.
hibernate "noresume step"
echo noresume >"$CMDLINE"
initrd_step >"$OUT" 2>&1
: >"$CMDLINE"
[ "$(cat "$RESULT")" = noresume ] || fail "noresume: the initramfs left '$(cat "$RESULT")'"
t_run torpor invalidate --stale
[ ! -s "$ERR" ] || fail "noresume: an image was left for the booted system"

# The device is not there at all: a bounded wait, then one warning.
CONF=$WORK/missing.conf
t_run torpor invalidate --stale --wait-device 1
expect_rc 0 "no device"
expect_err 'the storage device did not appear within 1 s' "no device"
expect_err 'cannot look for a stale hibernation image: the storage is not there' "no device"

# Refused outside invalidate, and a wrong value.
t_run torpor status --stale
expect_rc 1 "--stale on status"
expect_err "status: --stale belongs to 'invalidate'" "--stale on status"
t_run torpor invalidate --wait-device 1
expect_rc 1 "--wait-device alone"
expect_err "--wait-device goes with --stale" "--wait-device alone"
t_run torpor invalidate --stale --wait-device 4000
expect_rc 1 "--wait-device 4000"
expect_err "--wait-device '4000': expected seconds, 0 to 3600" "--wait-device 4000"
finish
