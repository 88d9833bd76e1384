#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Memory images are root's and private.  An unprivileged user (uid 65534,
# through setpriv) pre-creates the image file in a world-writable
# directory, or plants a symbolic link there: `torpor file-setup` refuses
# both and changes nothing.  The file root's file-setup creates is 0600 and
# root's, and after a hibernation the user cannot read it.  The file
# writer refuses an image file of mode 0644 or owned by the user, and
# file-setup refuses to take over such a file; the swap writer refuses a
# swap file of mode 0644 or owned by the user.
. "$(dirname "$0")/lib.sh"
command -v setpriv >/dev/null 2>&1 || { echo "SKIP: setpriv is missing"; exit 77; }

as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
state() { stat -c '%u %g %a %s %h' "$1" && sha256sum <"$1"; }

make_loop fs 512 || { echo "FAIL: losetup"; exit 1; }
dev=$LOOP
mnt="$WORK/mnt"
make_ext4 "$dev" "$mnt" || { echo "FAIL: mkfs/mount"; exit 1; }
# The user may reach the mount, and write only in pub/ (sticky, as /tmp).
chmod 0711 "$WORK" "$mnt"
pub="$mnt/pub"
mkdir -m 1777 "$pub"

# 1. An image file the user created first.
as_nobody sh -c "umask 022; echo 'the user was here' >'$pub/image'" || fail "the user cannot create a file"
before=$(state "$pub/image")
write_config file "path = $pub/image" "size = 128M"
t_run "$TORPOR_BIN" file-setup --config "$CONF"
[ "$rc" -ne 0 ] || fail "file-setup took over a file the user created"
expect_err "refusing $pub/image: it is owned by uid 65534" "user's file: message"
expect_err "rm $pub/image" "user's file: the message says how to fix it"
[ "$(state "$pub/image")" = "$before" ] || fail "file-setup changed the user's file"
t_run torpor hibernate --direct
[ "$rc" -ne 0 ] || fail "the file writer accepted a file the user owns"
expect_err "is owned by uid 65534" "file writer, user's file: message"

# 2. A symbolic link the user planted: not followed, nothing created.
as_nobody ln -s "$mnt/target" "$pub/link" || fail "the user cannot make a link"
t_run "$TORPOR_BIN" file-setup --config "$CONF" --path "$pub/link"
[ "$rc" -ne 0 ] || fail "file-setup followed a symbolic link"
expect_err "symbolic link" "symbolic link: message"
[ ! -e "$mnt/target" ] || fail "file-setup created the link's target"

# 3. Root's own file: 0600, root's; the user cannot read the image.
img="$mnt/torpor/image"
write_config file "path = $img" "size = 128M"
t_run "$TORPOR_BIN" file-setup --config "$CONF"
expect_rc 0 "file-setup"
[ "$(stat -c '%u %a' "$img")" = "0 600" ] || fail "file-setup made $(stat -c '%u %a' "$img"), not root's 0600"
t_run torpor hibernate --direct
expect_rc 0 "hibernate to root's private file"
as_nobody cat "$img" >/dev/null 2>&1 && fail "the user read the image"
as_nobody dd if="$dev" of=/dev/null bs=4096 count=1 status=none 2>/dev/null && fail "the user read the device"
t_run torpor invalidate
expect_rc 0 "invalidate"
# Running file-setup again over its own file is fine.
t_run "$TORPOR_BIN" file-setup --config "$CONF"
expect_rc 0 "file-setup over root's private file"

# 4. The same file, readable by others, or handed to the user.
chmod 0644 "$img"
before=$(state "$img")
t_run torpor hibernate --direct
[ "$rc" -ne 0 ] || fail "the file writer accepted a 0644 image file"
expect_err "image file $img has mode 0644" "0644 image file: message"
expect_err "torpor file-setup" "0644 image file: the message says how to fix it"
t_run "$TORPOR_BIN" file-setup --config "$CONF"
[ "$rc" -ne 0 ] || fail "file-setup accepted a 0644 image file"
[ "$(state "$img")" = "$before" ] || fail "file-setup changed a 0644 image file"
chmod 0600 "$img" && chown 65534 "$img"
t_run torpor hibernate --direct
[ "$rc" -ne 0 ] || fail "the file writer accepted an image file the user owns"
chown 0 "$img"
t_run torpor hibernate --direct
expect_rc 0 "hibernate after chown/chmod back"
t_run torpor invalidate

# 5. Swap files: 0644, or the user's, are refused; root's 0600 works.
sw="$mnt/swapfile"
dd if=/dev/zero of="$sw" bs=1M count=128 status=none conv=fsync && chmod 0644 "$sw" &&
	mkswap "$sw" >/dev/null 2>&1 || { echo "FAIL: mkswap on a file"; exit 1; }
before=$(state "$sw")
write_config swap "device = $sw"
t_run torpor hibernate --direct
[ "$rc" -ne 0 ] || fail "the swap writer accepted a 0644 swap file"
expect_err "swap file $sw has mode 0644" "0644 swap file: message"
expect_err "chmod 0600" "0644 swap file: the message says how to fix it"
[ "$(state "$sw")" = "$before" ] || fail "the refused swap file changed"
chmod 0600 "$sw" && chown 65534 "$sw"
t_run torpor hibernate --direct
[ "$rc" -ne 0 ] || fail "the swap writer accepted a swap file the user owns"
expect_err "is owned by uid 65534" "user's swap file: message"
chown 0 "$sw"
t_run torpor hibernate --direct
expect_rc 0 "hibernate to root's 0600 swap file"
as_nobody cat "$sw" >/dev/null 2>&1 && fail "the user read the swap file"
t_run torpor invalidate
expect_rc 0 "invalidate the swap file's image"
swapon "$sw" && swapoff "$sw" || fail "swapon after invalidate"
finish
