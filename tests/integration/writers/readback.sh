#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The resume figures read back by the resumed system (plugin.h consume()
# and read_consumed()), for each writer on the sim source.
#
# TORPOR_SIM_NEXT_BOOT makes the simulated power-off run torpor-resume, as
# the next boot would, before the cycle returns as resumed: the cycle then
# finds the header through the writer's consumed-image record, checks that
# it is its own image's, and keeps the slot's figures in the last-cycle
# file (hibernate prints them; status shows them).  A consumed image is
# never resumed again (resume and verify say what it is); the storage
# stays what it was (blkid, swapon, e2fsck); invalidate and the next
# hibernation clear the record; a damaged, stale or tampered record or
# slot is ignored with a note, never trusted.
. "$(dirname "$0")/lib.sh"

STATE="$WORK/state"
TORPOR_EXTRA="state_dir = $STATE"
PAGES=16384	# sim:64M

# flip FILE OFFSET (a script: the hooks run in a shell of their own): one
# byte inverted, so that it surely changes (a byte written over it could
# already be that byte: 1 in 256 of the slot's figures or of a UUID).
cat >"$WORK/flip" <<'EOF'
#!/bin/sh
b=$(od -A n -t u1 -j "$2" -N 1 "$1" | tr -d ' ')
printf "$(printf '\\%03o' $((b ^ 255)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
EOF
chmod 755 "$WORK/flip"

# hibernate_with_boot HOOK: hibernate while the "next boot" runs torpor-
# resume and then HOOK (a shell command, may be empty).
hibernate_with_boot() {
	local boot="'$RESUME_BIN' --config '$CONF' --plugin-dir '$PLUGINS' --cmdline '$CMDLINE'"
	[ -z "$1" ] || boot="$boot && $1"
	TORPOR_SIM_NEXT_BOOT=$boot t_run torpor hibernate --direct
}

# resume_json: the last cycle's "resume" object of status --json.
resume_json() {
	torpor status --json 2>/dev/null | python3 -c '
import json, sys
print(json.dumps(json.load(sys.stdin)["last_cycle"]["resume"]))'
}

# readback WHAT: a cycle whose figures come back, and a consumed image
# that is never resumed again.
readback() {
	local what="$1" r
	hibernate_with_boot ""
	expect_rc 0 "$what: hibernate"
	expect_out "resume: $PAGES pages restored and verified" "$what: the next boot resumed"
	expect_out "^resume \(recorded by torpor-resume\): $PAGES pages in [0-9.]+ s" "$what: read back"
	r=$(resume_json)
	python3 -c 'import json,sys; r=json.loads(sys.argv[1]); assert r["pages"] == int(sys.argv[2]) and r["seconds"] > 0 and r["resumed_at"] > 0, r' \
		"$r" "$PAGES" || fail "$what: status --json resume figures: $r"
	t_run torpor status
	expect_out "^  resume: +$PAGES pages in [0-9.]+ s \(recorded by torpor-resume\)" "$what: status"
	expect_out "^stored image: +none" "$what: status: no image"
	t_run torpor_resume
	expect_rc 0 "$what: resume of a consumed image"
	expect_out 'no image found' "$what: a consumed image is not resumed"
	expect_err 'already resumed \(consumed\): it is never resumed again' "$what: resume says what it is"
	t_run torpor verify
	expect_rc 0 "$what: verify of a consumed image"
	expect_err 'already resumed \(consumed\)' "$what: verify says what it is"
}

# ignored WHAT HOOK NOTE: the hook damages what the next boot left; the
# figures are not taken, with NOTE on stderr.
ignored() {
	hibernate_with_boot "$2"
	expect_rc 0 "$1: hibernate"
	expect_out "resume: $PAGES pages restored and verified" "$1: the next boot resumed"
	grep -q 'recorded by torpor-resume' "$OUT" && fail "$1: figures trusted"
	expect_err "$3" "$1: the note"
	[ "$(resume_json)" = null ] || fail "$1: status shows figures: $(resume_json)"
}

# --- raw, on a private regular file ----------------------------------------
raw="$WORK/raw.img"
(umask 077 && truncate -s 200M "$raw")
write_config raw "device = $raw"
readback "raw"
[ "$(head -c 16 "$raw")" = TORPOR-RAW-USED1 ] || fail "raw: no consumed block"
# A damaged record: one byte of its UUID.
ignored "raw: damaged record" \
	"'$WORK/flip' '$raw' 60" \
	'record was ignored: Bad message'
# A stale record: the last cycle's block 0 put back over this one's.
hibernate_with_boot "cp '$raw' '$WORK/old.img'"
expect_rc 0 "raw: hibernate (keeping its record)"
ignored "raw: another image's record" \
	"dd if='$WORK/old.img' of='$raw' bs=4096 count=1 conv=notrunc status=none" \
	'record names another image'
rm -f "$WORK/old.img"
# The header's slot damaged after torpor-resume filled it.
slot_hook="off=\$(od -A n -t u8 -j 40 -N 8 '$raw' | tr -d ' ');"
slot_hook="$slot_hook '$WORK/flip' '$raw' \$((off + 215))"
ignored "raw: damaged slot" "$slot_hook" 'statistics slot was ignored: stats \(offset 206\): slot checksum mismatch'
# Without a next boot the image is still there: nothing to read back.
t_run torpor hibernate --direct
expect_rc 0 "raw: hibernate without a next boot"
grep -q 'recorded by torpor-resume' "$OUT" && fail "raw: figures without a resume"
t_run torpor invalidate
expect_rc 0 "raw: invalidate"
[ -z "$(head -c 4096 "$raw" | tr -d '\0')" ] || fail "raw: invalidate left block 0"
# invalidate clears a record too.
readback "raw (again)"
t_run torpor invalidate
[ -z "$(head -c 4096 "$raw" | tr -d '\0')" ] || fail "raw: invalidate left the record"
rm -f "$raw"

# --- swap file on ext4 ------------------------------------------------------
make_swap_file_fs rbfile
fsdev=$FSDEV mnt=$MNT sw=$SW
uuid=$(blkid -p -o value -s UUID "$sw")
write_config swap "device = $sw"
readback "swap file"
[ "$(tail -c +$((4096 - 63)) "$sw" | head -c 8)" = TORPORCR ] ||
	fail "swap file: no record before SWAPSPACE2"
[ "$(blkid -p -o value -s TYPE "$sw")" = swap ] || fail "swap file: blkid TYPE with a record"
[ "$(blkid -p -o value -s UUID "$sw")" = "$uuid" ] || fail "swap file: UUID changed"
[ "$(blkid -p -o value -s LABEL "$sw")" = rbfile ] || fail "swap file: label changed"
swapon "$sw" && swapoff "$sw" || fail "swap file: swapon with a record"
# One byte of the record's UUID, on the device under the file.
phys=$(filefrag -v "$sw" | awk '$1 == "0:" { sub(/\.\..*/, "", $4); print $4 }')
ignored "swap file: damaged record" \
	"'$WORK/flip' '$fsdev' $((phys * 4096 + 4096 - 64 + 30))" \
	'record was ignored: Bad message'
t_run torpor invalidate
expect_rc 0 "swap file: invalidate"
[ -z "$(tail -c +$((4096 - 63)) "$sw" | head -c 54 | tr -d '\0')" ] ||
	fail "swap file: invalidate left the record"
swapon "$sw" && swapoff "$sw" || fail "swap file: swapon after invalidate"
umount "$mnt" || fail "umount"
e2fsck -fn "$fsdev" >"$OUT" 2>&1 || fail "swap file: e2fsck -fn"
mount "$fsdev" "$mnt" || fail "mount"

# --- file writer on the same ext4 --------------------------------------------
img="$mnt/torpor/image"
write_config file "path = $img" "size = 200M"
t_run "$TORPOR_BIN" file-setup --config "$CONF"
expect_rc 0 "file-setup"
readback "file"
[ "$(head -c 8 "$img")" = TORPORFC ] || fail "file: no consumed block"
t_run torpor invalidate
expect_rc 0 "file: invalidate"
[ -z "$(head -c 4096 "$img" | tr -d '\0')" ] || fail "file: invalidate left the record"
umount "$mnt" || fail "umount"
e2fsck -fn "$fsdev" >"$OUT" 2>&1 || fail "file: e2fsck -fn"
mount "$fsdev" "$mnt" || fail "mount"

# --- swap partition: the record beside SWAPSPACE2 ------------------------------
# (No next boot here: the hibernating process holds the inactive partition
# exclusively; the VM suite reads back from a swap partition.)
make_loop part 256 || { echo "FAIL: losetup"; exit 1; }
part=$LOOP
mkswap -L rbpart "$part" >/dev/null || { echo "FAIL: mkswap"; exit 1; }
puuid=$(blkid -p -o value -s UUID "$part")
write_config swap "device = $part"
t_run torpor hibernate --direct
expect_rc 0 "swap partition: hibernate"
t_run torpor_resume
expect_rc 0 "swap partition: resume"
tail_of() { dd if="$part" bs=1 skip=$((4096 - 64)) count="$1" status=none; }
[ "$(tail_of 8)" = TORPORCR ] || fail "swap partition: no record"
[ "$(blkid -p -o value -s TYPE "$part")" = swap ] || fail "swap partition: blkid TYPE"
[ "$(blkid -p -o value -s UUID "$part")" = "$puuid" ] || fail "swap partition: UUID"
[ "$(blkid -p -o value -s LABEL "$part")" = rbpart ] || fail "swap partition: label"
swapon "$part" && swapoff "$part" || fail "swap partition: swapon with a record"
t_run torpor_resume
expect_out 'no image found' "swap partition: a consumed image is not resumed"
expect_err 'already resumed \(consumed\)' "swap partition: resume says what it is"
# The next hibernation takes the record off for good: its own invalidate
# (--test) puts back the tail without it.
t_run torpor hibernate --direct --test
expect_rc 0 "swap partition: hibernate --test"
[ -z "$(tail_of 54 | tr -d '\0')" ] || fail "swap partition: the next hibernation kept the record"
[ "$(dd if="$part" bs=1 skip=4086 count=10 status=none)" = SWAPSPACE2 ] ||
	fail "swap partition: signature after --test"

# No record where the bytes before SWAPSPACE2 are not free: another tool's
# data there (the kernel's own swsusp leaves its pointer), or a bad-page
# list (nr_badpages at 1032, the list from 1536).  The tail comes back
# byte for byte, and the readback finds nothing.
no_room() {
	local what="$1" before
	before=$(dd if="$part" bs=4096 count=1 status=none | sha256sum)
	t_run torpor hibernate --direct
	expect_rc 0 "$what: hibernate"
	t_run torpor_resume
	expect_rc 0 "$what: resume"
	expect_out "resume: [0-9]+ pages restored" "$what: resumed"
	[ "$(dd if="$part" bs=4096 count=1 status=none | sha256sum)" = "$before" ] ||
		fail "$what: the header page is not as it was"
	[ "$(blkid -p -o value -s UUID "$part")" = "$puuid" ] || fail "$what: UUID"
}
printf 'not ours' | dd of="$part" bs=1 seek=4040 conv=notrunc status=none
no_room "swap partition, other data before the signature"
swapon "$part" && swapoff "$part" || fail "swapon with other data before the signature"
mkswap -L rbpart -U "$puuid" "$part" >/dev/null || fail "mkswap again"
# One bad page (page 7).
printf '\001\000\000\000' | dd of="$part" bs=1 seek=1032 conv=notrunc status=none
printf '\007\000\000\000' | dd of="$part" bs=1 seek=1536 conv=notrunc status=none
no_room "swap partition with a bad page"
finish
