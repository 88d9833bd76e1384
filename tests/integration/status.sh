#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# torpor status on the sim source: exit 0 with a working configuration,
# exit 1 with the exact reason when hibernation would fail, what resume
# would do with the image stored, the last cycle's figures, and JSON that
# parses with its documented keys.  The kernel's files (lockdown,
# command line, power state, /proc) are faked under $TORPOR_TEST_SYSROOT,
# which only a -Dtests=enabled build honours.
# Usage: status.sh CASE
. "$(dirname "$0")/lib.sh"
case_name="$1"

STATE="$WORK/state"
write_config "sim:$((200 * 4096)):5" "checksum lzo" "state_dir = $STATE"

# A fake root of the kernel's files where hibernation is available.
SYSROOT="$WORK/sysroot"
fake_sysroot() {
	mkdir -p "$SYSROOT/sys/kernel/security" "$SYSROOT/sys/power" \
		"$SYSROOT/proc/1"
	echo "[none] integrity confidentiality" >"$SYSROOT/sys/kernel/security/lockdown"
	echo "BOOT_IMAGE=/vmlinuz root=/dev/vda quiet" >"$SYSROOT/proc/cmdline"
	echo "freeze mem disk" >"$SYSROOT/sys/power/state"
	echo "55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 12 /usr/bin/cat" >"$SYSROOT/proc/1/maps"
}

# status_fails REGEX WHAT: exit 1, the reason in the text and in the JSON.
status_fails() {
	t_run status torpor status
	expect_rc 1 "$2"
	expect_out "^hibernate: +not possible: .*$1" "$2"
	t_run status-json torpor status --json
	expect_rc 1 "$2 (json)"
	python3 - "$OUT" "$1" <<'PY' || fail "$2: JSON"
import json, re, sys
d = json.load(open(sys.argv[1]))
assert d["can_hibernate"] is False, d["can_hibernate"]
assert re.search(sys.argv[2], d["disabled_reason"]), d["disabled_reason"]
assert d["reasons"][0] == d["disabled_reason"]
PY
}

case "$case_name" in
works)
	# A zeroed device holds no image (an empty one is an error).
	dd if=/dev/zero of="$IMAGE" bs=4096 count=64 status=none
	fake_sysroot
	export TORPOR_TEST_SYSROOT="$SYSROOT"
	t_run status torpor status
	expect_rc 0 "status"
	expect_out "^configuration: .*\(valid\)" "config"
	expect_out "^daemon: +not running \($SYSROOT/run/torpor/torpord.sock\)" "daemon"
	expect_out "^chain: +checksum lzo -> raw" "chain"
	expect_out "^resume at: +resume=$IMAGE" "location"
	expect_out "^stored size: .*the filters' expected ratios" "estimate"
	expect_out "^free space: +[0-9.]+ MiB" "free space"
	expect_out "^hibernate: +possible" "verdict"
	expect_out "^stored image: +none" "no image"
	expect_out "^last cycle: +none recorded" "no last cycle"
	# A daemon that answers a connect() is "running".
	mkdir -p "$SYSROOT/run/torpor"
	python3 -c 'import socket,sys,time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1)
open(sys.argv[2], "w").close(); time.sleep(30)' \
		"$SYSROOT/run/torpor/torpord.sock" "$WORK/listening" &
	listener=$!
	for _ in $(seq 100); do [ -e "$WORK/listening" ] && break; sleep 0.1; done
	t_run status torpor status
	kill "$listener"; wait "$listener" 2>/dev/null
	expect_rc 0 "status with a daemon"
	expect_out "^daemon: +running" "daemon running"
	;;
lockdown)
	fake_sysroot
	echo "none [integrity] confidentiality" >"$SYSROOT/sys/kernel/security/lockdown"
	export TORPOR_TEST_SYSROOT="$SYSROOT"
	status_fails "hibernation is disabled by kernel lockdown \(integrity mode" "lockdown"
	;;
nohibernate)
	fake_sysroot
	echo "root=/dev/vda nohibernate quiet" >"$SYSROOT/proc/cmdline"
	export TORPOR_TEST_SYSROOT="$SYSROOT"
	status_fails "disabled by 'nohibernate' on the kernel command line" "nohibernate"
	;;
secretmem)
	fake_sysroot
	echo "freeze mem" >"$SYSROOT/sys/power/state"
	mkdir -p "$SYSROOT/proc/4242"
	echo "7f0000000000-7f0000001000 rw-s 00000000 00:01 77 /secretmem (deleted)" >"$SYSROOT/proc/4242/maps"
	export TORPOR_TEST_SYSROOT="$SYSROOT"
	status_fails "secretmem is in use \(process 4242" "secretmem"
	;;
no-space)
	# The raw writer on a 3 MiB loop device, an 8 MiB image through no
	# filter: it cannot fit.
	if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root (loop device)"; exit 77; fi
	truncate -s 3M "$WORK/small"
	loop=$(losetup -f --show "$WORK/small") || { echo "SKIP: no loop device"; exit 77; }
	trap 'losetup -d "$loop"; rm -rf "$WORK"' EXIT
	write_config "sim:$((2048 * 4096)):5" "" "state_dir = $STATE"
	sed -i "s|^device = .*|device = $loop|" "$CONF"
	status_fails "not enough space for the image: about 8\.[0-9] MiB to store, [0-9.]+ MiB free on writer 'raw'" "no space"
	;;
no-writer)
	sed -i '/^writer = /d' "$CONF"
	status_fails "no writer is configured" "no writer"
	;;
zram)
	# A device spec whose name is zram's (it does not need to exist:
	# the name alone rules it out).
	if [ ! -e /dev/zram0 ]; then
		mkdir -p "$WORK/dev"
		ln -s "$IMAGE" "$WORK/dev/zram0"
		sed -i "s|^device = .*|device = $WORK/dev/zram0|" "$CONF"
	else
		sed -i "s|^device = .*|device = /dev/zram0|" "$CONF"
	fi
	t_run status torpor status
	expect_rc 1 "zram"
	expect_out "zram is not a hibernation target" "zram"
	;;
random-key-swap)
	# The writer's device is swap that crypttab opens with a new random
	# key at each boot: refused, the file writer offered.
	fake_sysroot
	mkdir -p "$WORK/dev" "$SYSROOT/sys/block/dm-9/dm" "$SYSROOT/etc"
	ln -s "$IMAGE" "$WORK/dev/dm-9"
	echo cryptswap >"$SYSROOT/sys/block/dm-9/dm/name"
	echo "cryptswap /dev/sda2 /dev/urandom swap,cipher=aes-xts-plain64,size=256" >"$SYSROOT/etc/crypttab"
	sed -i "s|^device = .*|device = $WORK/dev/dm-9|" "$CONF"
	export TORPOR_TEST_SYSROOT="$SYSROOT"
	status_fails "$WORK/dev/dm-9 is encrypted with a new random key at each boot \\(/etc/crypttab: cryptswap /dev/sda2 /dev/urandom\\): an image there could not be read after the power-off; the file writer would work \\(torpor setup\\)" \
		"random-key swap"
	# A key that survives the power-off (LUKS) is not refused for it.
	echo "cryptswap UUID=77 none luks" >"$SYSROOT/etc/crypttab"
	t_run status torpor status
	grep -q 'random key' "$OUT" && fail "LUKS swap refused as random-key swap"
	;;
zram-swap)
	# Fedora's default: swap on zram only.  status names it and says the
	# image never goes there; the configured writer is unchanged.
	fake_sysroot
	printf 'Filename\tType\tSize\tUsed\tPriority\n/dev/zram0\tpartition\t8388604\t0\t100\n' \
		>"$SYSROOT/proc/swaps"
	export TORPOR_TEST_SYSROOT="$SYSROOT"
	t_run status torpor status
	expect_rc 0 "zram swap"
	expect_out "^zram: +/dev/zram0 \\(8192\\.0 MiB\\) active as swap: compressed RAM, which a power-off empties, so never the image's place$" \
		"zram swap named"
	t_run status-json torpor status --json
	python3 - "$OUT" <<'PY' || fail "zram swap: JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["zram_swap"] == "/dev/zram0 (8192.0 MiB)", d["zram_swap"]
PY
	printf 'Filename\tType\tSize\tUsed\tPriority\n' >"$SYSROOT/proc/swaps"
	t_run status torpor status
	grep -q '^zram:' "$OUT" && fail "a zram line without zram"
	;;
test-image)
	t_run hib torpor hibernate --direct
	expect_rc 0 "hibernate"
	"$IMAGE_TOOL" set "$IMAGE" flags 1
	t_run status torpor status
	expect_rc 0 "status"
	expect_out "^stored image: +stored, not resumable: test image" "test image"
	t_run status-json torpor status --json
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["image"]["state"] == "test", d["image"]' "$OUT" ||
		fail "test image: JSON"
	;;
damaged)
	t_run hib torpor hibernate --direct
	expect_rc 0 "hibernate"
	"$IMAGE_TOOL" flip "$IMAGE" $(( $("$IMAGE_TOOL" offset "$IMAGE" header) + 100 ))
	t_run status torpor status
	expect_rc 0 "status"
	expect_out "^stored image: +stored, damaged: image refused: header: .*(checksum|CRC)" "damaged"
	[ ! -s "$ERR" ] || fail "damaged: status wrote on stderr"
	;;
verified)
	# A verify's verdict on this very image is on record: status says
	# what it found, and when.
	t_run hib torpor hibernate --direct
	expect_rc 0 "hibernate"
	t_run verify torpor verify
	expect_rc 0 "verify"
	t_run status torpor status
	expect_rc 0 "status"
	expect_out "^stored image: +stored, resumable \(torpor verify read it intact at [0-9: -]+\): 200 pages" "verified intact"
	# Data damaged where only reading the stream finds it.
	"$IMAGE_TOOL" flip "$IMAGE" $(( $("$IMAGE_TOOL" offset "$IMAGE" data 3) + 17 ))
	t_run verify torpor verify
	expect_rc 2 "verify of damaged data"
	t_run status torpor status
	expect_out "^stored image: +stored, damaged: torpor verify refused its data" "verify refused"
	t_run status-json torpor status --json
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["image"]["state"] == "damaged", d["image"]' "$OUT" ||
		fail "verify refused: JSON"
	# A new image is not the one verified.
	t_run hib torpor hibernate --direct
	t_run status torpor status
	expect_out "^stored image: +stored \(header valid; run torpor verify to check the data\)" "new image"
	;;
foreign)
	t_run hib torpor hibernate --direct
	expect_rc 0 "hibernate"
	TORPOR_SIM_KERNEL_RELEASE="9.9.9-not-this-one" TORPOR_SIM_MACHINE=aarch64 \
		t_run status torpor status
	expect_out "^stored image: +stored, not resumable here: .*this is kernel 9.9.9-not-this-one" "foreign"
	;;
last-cycle)
	t_run hib torpor hibernate --direct
	expect_rc 0 "hibernate"
	[ "$(stat -c %a "$STATE/last-cycle")" = 600 ] || fail "last-cycle: mode"
	t_run status torpor status
	expect_rc 0 "status"
	expect_out "^stored size: .*from the last cycle's ratio" "ratio from the last cycle"
	expect_out "^stored image: +stored \(header valid; run torpor verify to check the data\): 200 pages" "stored"
	expect_out "^last cycle: .*completed" "last cycle"
	expect_out "^  phases: +start-up [0-9.]+ s; .*write [0-9.]+ s; sync [0-9.]+ s;" "phases"
	expect_out "^  image: +200 pages, [0-9.]+ MiB stored \([0-9]+%\)" "figures"
	t_run status-json torpor status --json
	python3 - "$OUT" <<'PY' || fail "last-cycle: JSON"
import json, sys
d = json.load(open(sys.argv[1]))
for k in ("config", "config_valid", "config_error", "daemon", "snapshot",
          "filters", "writer", "resume_location", "image_size_estimate",
          "image_size_pref", "used_memory", "stored_size_estimate",
          "stored_ratio_source", "free_space", "can_hibernate",
          "disabled_reason", "reasons", "image", "image_present",
          "last_cycle", "debug_info"):
    assert k in d, k
assert d["can_hibernate"] is True
assert d["stored_ratio_source"] == "last-cycle"
assert d["image"]["state"] == "stored" and d["image"]["pages"] == 200
lc = d["last_cycle"]
assert lc["pages"] == 200 and lc["error"] == 0 and lc["test"] is False
assert lc["phases"]["write"] > 0 and lc["phases"]["sync"] > 0
assert 0 < lc["ratio_permille"] < 1000
assert lc["resume"] is None
PY
	# The simulated restore returns: torpor-resume adds its figures.
	t_run resume torpor_resume
	expect_rc 0 "resume"
	t_run status torpor status
	expect_out "^stored image: +none" "resumed: no image"
	expect_out "^  resume: +200 pages in [0-9.]+ s \(recorded by torpor-resume\)" "resume figures"
	expect_out "^  image: +200 pages" "hibernate figures kept"
	t_run status-json torpor status --json
	python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["last_cycle"]["resume"]; assert r["pages"] == 200 and r["resumed_at"] > 0, r' "$OUT" ||
		fail "resume figures: JSON"
	;;
state-file)
	# The state file is read strictly: another owner's, a writable one,
	# a huge one, a bad line are each refused, and status still answers.
	mkdir -m 700 "$STATE"
	printf 'test=0\nerror=0\nstarted=1\npages=2\n' >"$STATE/last-cycle"
	chmod 600 "$STATE/last-cycle"
	t_run status torpor status
	expect_rc 0 "good file"
	expect_out "^  image: +2 pages" "good file"
	chmod 622 "$STATE/last-cycle"
	t_run status torpor status
	expect_out "^last cycle: +unreadable record: Operation not permitted" "writable by others"
	chmod 600 "$STATE/last-cycle"
	if [ "$(id -u)" -eq 0 ]; then
		# A user's file in root's state directory is not root's record.
		chown 65534 "$STATE/last-cycle"
		t_run status torpor status
		expect_out "^last cycle: +unreadable record: Operation not permitted" "another owner"
		chown 0 "$STATE/last-cycle"
	fi
	printf 'pages=-2\n' >"$STATE/last-cycle"
	t_run status torpor status
	expect_out "^last cycle: +unreadable record: Bad message" "bad number"
	printf 'pages=2\npages=3\n' >"$STATE/last-cycle"
	t_run status torpor status
	expect_out "^last cycle: +unreadable record: Bad message" "twice"
	printf 'verify_uuid=0123456789abcdef0123456789abcdeg\n' >"$STATE/last-cycle"
	t_run status torpor status
	expect_out "^last cycle: +unreadable record: Bad message" "bad uuid"
	printf 'pages=2' >"$STATE/last-cycle"
	t_run status torpor status
	expect_out "^last cycle: +unreadable record: Bad message" "torn line"
	printf 'owner=root\n' >"$STATE/last-cycle"
	t_run status torpor status
	expect_out "^last cycle: +unreadable record: Bad message" "unknown key"
	head -c 100000 /dev/zero | tr '\0' '#' >"$STATE/last-cycle"
	t_run status torpor status
	expect_out "^last cycle: +unreadable record: File too large" "huge"
	rm "$STATE/last-cycle"
	ln -s /etc/passwd "$STATE/last-cycle"
	t_run status torpor status
	expect_out "^last cycle: +unreadable record: Operation not permitted" "symlink"
	expect_rc 0 "status goes on"
	;;
logind)
	# What logind answers (a stand-in for busctl: its answer in a file)
	# and torpor's reading of systemd 255's rule.
	dd if=/dev/zero of="$IMAGE" bs=4096 count=64 status=none
	fake_sysroot
	export TORPOR_TEST_SYSROOT="$SYSROOT"
	t_run status torpor status
	expect_out "^logind: +not running: systemd is not the init system" "no systemd"
	mkdir -p "$SYSROOT/run/systemd/system"
	printf '#!/bin/sh\n[ "$*" = "--system --timeout=25 call org.freedesktop.login1 /org/freedesktop/login1 org.freedesktop.login1.Manager CanHibernate" ] || exit 1\necho "s \\"$(cat %s)\\""\n' \
		"$WORK/answer" >"$WORK/busctl"
	chmod 755 "$WORK/busctl"
	export TORPOR_TEST_BUSCTL="$WORK/busctl"
	echo na >"$WORK/answer"
	echo 0:0 >"$SYSROOT/sys/power/resume"
	t_run status torpor status
	expect_out '^logind: +na: not booted through EFI and the kernel has no resume device \(/sys/power/resume is 0:0\): systemd 255 and later then refuse hibernation; `torpor resume-args --kernel` sets it' "BIOS, no resume device"
	t_run status-json torpor status --json
	python3 - "$OUT" <<'PY' || fail "logind in the JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["logind"]["can_hibernate"] == "na", d["logind"]
assert d["logind"]["why"].startswith("not booted through EFI"), d["logind"]
PY
	echo yes >"$WORK/answer"
	mkdir -p "$SYSROOT/sys/firmware/efi"
	t_run status torpor status
	expect_out "^logind: +yes: booted through EFI, where systemd 255 and later need no resume device" "EFI"
	echo 254:2 >"$SYSROOT/sys/power/resume"
	t_run status torpor status
	expect_out "^logind: +yes: the kernel's resume device is 254:2$" "resume device"
	echo "freeze mem" >"$SYSROOT/sys/power/state"
	echo na >"$WORK/answer"
	t_run status torpor status
	expect_out '^logind: +na: the kernel cannot hibernate \(/sys/power/state has no "disk"\)' "no disk state"
	echo "freeze mem disk" >"$SYSROOT/sys/power/state"
	echo "root=/dev/vda noresume" >"$SYSROOT/proc/cmdline"
	echo na >"$WORK/answer"
	t_run status torpor status
	expect_out '^logind: +na: the kernel command line has "noresume"' "noresume"
	echo challenge >"$WORK/answer"
	echo "root=/dev/vda" >"$SYSROOT/proc/cmdline"
	t_run status torpor status
	expect_out "^logind: +challenge: polkit asks for authentication" "polkit"
	# busctl failing: said with its exit status, and the reading still
	# given.
	printf '#!/bin/sh\necho "Call failed: Access denied" >&2\nexit 3\n' >"$WORK/busctl"
	t_run status torpor status
	expect_out "^logind: +unknown: the kernel's resume device is 254:2; logind did not answer CanHibernate \(busctl exited with status 3\)\$" "no answer, busctl's status"
	# ... or that logind gave no answer in busctl's time (as busctl's
	# --timeout does: it fails when the time is up).
	printf '#!/bin/sh\nsleep 25\nexit 1\n' >"$WORK/busctl"
	t_run status torpor status
	expect_out "^logind: +unknown: the kernel's resume device is 254:2; logind did not answer CanHibernate \(no answer within 25 s\)\$" "no answer in time"
	;;
bad-config)
	echo "bogus_key = 1" >>"$CONF"
	t_run status torpor status
	expect_rc 1 "bad config"
	expect_out "^configuration: .*invalid" "bad config"
	expect_out "^hibernate: +not possible: the configuration is invalid" "bad config"
	;;
*)
	echo "unknown case $case_name"; exit 2 ;;
esac
finish
