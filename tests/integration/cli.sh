#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What the command line says, on the sim source, one case per run:
#   quiet        -q prints errors only: no phase line, bar or summary
#   help         every command has a --help of its own that explains its
#                options; a wrong option is said with the program's prefix
#   config-error status names a configuration error's reason and FILE:LINE
#   no-config    status says the file is missing and that setup writes it
#   json-keys    every key torpor(8) documents for status --json and
#                plugins --json is in their output, and every key of the
#                output is documented
#   keygen-paths keygen --output with a relative directory prints lines the
#                configuration takes: absolute key paths, the filter order
#                torpor.conf(5) gives
#   failed-cycle a hibernation that failed before writing prints no line of
#                a success, and status does not speak of an image written
#   enomem       the kernel (here the sim) cannot create the image for want
#                of memory: the error says why and what helps, and status
#                foresees it
. "$(dirname "$0")/lib.sh"
case_name="$1"

STATE="$WORK/state"
write_config "sim:$((200 * 4096)):5" "checksum lzo" "state_dir = $STATE"

case "$case_name" in
quiet)
	t_run quiet torpor --quiet hibernate --direct --test
	expect_rc 0 "hibernate -q"
	[ -s "$OUT" ] && fail "hibernate -q: something on stdout"
	[ -s "$ERR" ] && fail "hibernate -q: something on stderr"
	# Without -q the same command shows its phases and the summary: the
	# check above is not empty for want of a cycle.
	t_run loud torpor hibernate --direct --test
	expect_rc 0 "hibernate"
	expect_err "^torpor: write +[0-9.]+ s" "the phase lines without -q"
	expect_out "^hibernate \(test\): 200 pages" "the summary without -q"
	# Errors still come.
	t_run quiet-error torpor -q hibernate --direct --after=halt
	expect_rc 1 "hibernate -q --after=halt"
	expect_err "--after 'halt'" "an error with -q"
	;;
help)
	for c in hibernate status plugins config verify invalidate resume-args \
		 reload suspend-then-hibernate keygen file-setup bench setup; do
		# keygen, file-setup, bench and setup parse their own options,
		# and not all of them take --config.
		t_run help "$TORPOR" "$c" --help
		expect_rc 0 "$c --help"
		expect_out "^Usage: torpor .*$c" "$c --help: its usage"
		grep -q '^Commands:' "$OUT" && fail "$c --help: the general help"
		[ -s "$ERR" ] && fail "$c --help: stderr"
		# Before the word too.
		t_run help-before "$TORPOR" --help "$c"
		expect_rc 0 "--help $c"
		expect_out "^Usage: torpor .*$c" "--help $c: its usage"
	done
	t_run help torpor hibernate --help
	for o in --direct --test --force "--after WHAT"; do
		expect_out "^ +$o " "hibernate --help explains $o"
	done
	expect_out "poweroff, reboot, or suspend" "hibernate --help: the values of --after"
	expect_out "^Exit status: 0 " "hibernate --help: its exit status"
	t_run help torpor status --help
	expect_out "^ +--json " "status --help explains --json"
	grep -q -- "--test" "$OUT" && fail "status --help speaks of --test"
	t_run help torpor invalidate --help
	expect_out "^ +--stale " "invalidate --help: --stale"
	expect_out "^ +--wait-device SECONDS .*0 to 3600" "invalidate --help: --wait-device"
	t_run help torpor suspend-then-hibernate --help
	expect_out "^ +--delay SECONDS " "suspend-then-hibernate --help: --delay"
	t_run help torpor --help
	expect_out '^Commands:' "the general help"
	expect_out 'torpor COMMAND --help' "the general help points to each command's"
	# The commands' options fit 80 columns (the program's own keep their
	# default paths whole).
	for c in hibernate status invalidate resume-args suspend-then-hibernate; do
		# shellcheck disable=SC2086
		"$TORPOR" $c --help | awk -v c="$c" '/^  (-| {20})/ && length > 80 { print c ": " $0; bad = 1 } END { exit bad }' >"$WORK/wide" ||
			fail "help wider than 80 columns: $(cat "$WORK/wide")"
	done
	# One prefix for every wrong option, never getopt's argv[0].
	for args in "--bogus status" "status --after" "-x status" \
		    "bench --bogus" "setup --bogus" "file-setup --size" \
		    "keygen --bogus"; do
		# shellcheck disable=SC2086
		t_run wrong "$TORPOR" $args
		expect_rc 1 "torpor $args"
		grep -qv '^torpor: ' "$ERR" && fail "torpor $args: a line without the prefix"
		expect_err "^torpor: .*'-" "torpor $args: names the option"
	done
	t_run wrong torpor status --test
	expect_err_line "torpor: status: --test belongs to 'hibernate'" "--test elsewhere"
	t_run wrong torpor status --force
	expect_err_line "torpor: status: --force belongs to 'hibernate' and 'suspend-then-hibernate'" "--force elsewhere"
	;;
config-error)
	# A typo on line 3: the report names it, its line and the reason.
	sed -i 's/^filters =/fliters =/' "$CONF"
	grep -qn '^fliters' "$CONF" || fail "no typo made"
	line=$(grep -n '^fliters' "$CONF" | cut -d: -f1)
	t_run status torpor status
	expect_rc 1 "status of a bad configuration"
	expect_out "^configuration: +$CONF \(invalid: $CONF:$line: \[torpor\] key 'fliters': unknown key" "the reason and FILE:LINE"
	expect_out "^hibernate: +not possible: the configuration is invalid: $CONF:$line: " "the verdict's reason"
	grep -q "see the messages above" "$OUT" && fail "status points to messages instead of saying them"
	[ -s "$ERR" ] && fail "status of a bad configuration: stderr (the report says it)"
	t_run status-json torpor status --json
	expect_rc 1 "status --json of a bad configuration"
	python3 - "$OUT" "$CONF" "$line" <<'PY' || fail "config-error: JSON"
import json, sys
d = json.load(open(sys.argv[1]))
conf, line = sys.argv[2], sys.argv[3]
assert d["config"] == conf, d["config"]
assert d["config_valid"] is False and d["config_missing"] is False
want = "%s:%s: [torpor] key 'fliters': unknown key" % (conf, line)
assert d["config_error"].startswith(want), d["config_error"]
assert d["can_hibernate"] is False
PY
	;;
no-config)
	# The build's default file, which the tests never install.
	if [ -e "$TORPOR_DEFAULT_CONFIG" ]; then
		echo "SKIP: $TORPOR_DEFAULT_CONFIG exists"; exit 77
	fi
	t_run status "$TORPOR" --socket "$WORK/no.sock" status
	expect_rc 1 "status without a configuration"
	expect_out "^configuration: +$TORPOR_DEFAULT_CONFIG is missing: the defaults apply \\(no writer\\); .torpor setup. writes it" "missing, and who writes it"
	expect_out "^ *(hibernate: +not possible|also): no writer is configured" "the verdict"
	t_run status "$TORPOR" --socket "$WORK/no.sock" status --json
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["config_missing"] is True and d["config"] is None, d' "$OUT" ||
		fail "no-config: JSON"
	;;
failed-cycle)
	# The raw writer's device does not exist: the cycle fails in its
	# start-up phase, before anything is written.
	IMAGE=$WORK/missing/image
	write_config "sim:$((200 * 4096)):5" "checksum lzo" "state_dir = $STATE"
	t_run hib torpor hibernate --direct
	expect_rc 1 "hibernate to a missing device"
	expect_err "device $IMAGE does not exist" "the reason"
	grep -E '^torpor: [a-z-]+ +[0-9]+\.[0-9]+ s' "$ERR" &&
		fail "a failed start-up printed phase lines"
	[ -s "$OUT" ] && fail "a failed hibernation printed a summary"
	t_run status torpor status
	expect_out "^last cycle: .*failed: No such file or directory" "status: the failure"
	expect_out "^  image: +none written \(the cycle failed before it\)" "status: no image written"
	grep -q "written after the snapshot" "$OUT" && fail "status speaks of an image written after the snapshot"
	;;
enomem)
	# A fake root of the kernel's files where hibernation is available,
	# and a /proc/meminfo with 200 KiB free or reclaimable and no swap:
	# the sim's image of 800 KiB has no room for its copy.
	SYSROOT="$WORK/sysroot"
	mkdir -p "$SYSROOT/sys/kernel/security" "$SYSROOT/sys/power" "$SYSROOT/proc"
	echo "[none] integrity confidentiality" >"$SYSROOT/sys/kernel/security/lockdown"
	echo "BOOT_IMAGE=/vmlinuz root=/dev/vda quiet" >"$SYSROOT/proc/cmdline"
	echo "freeze mem disk" >"$SYSROOT/sys/power/state"
	meminfo() {	# meminfo AVAILABLE_KB SWAPFREE_KB
		printf 'MemTotal: 524288 kB\nMemFree: 100 kB\nMemAvailable: %s kB\nSwapTotal: %s kB\nSwapFree: %s kB\n' \
			"$1" "$2" "$2" >"$SYSROOT/proc/meminfo"
	}
	export TORPOR_TEST_SYSROOT="$SYSROOT"
	dd if=/dev/zero of="$IMAGE" bs=4096 count=64 status=none
	meminfo 200 0
	t_run status torpor status
	expect_out "^memory: +warning: too little for the snapshot, which would fail: the snapshot needs a free copy of every page it saves: the image is about 0.8 MiB, and 0.2 MiB is free or could be freed for it" "status foresees it"
	expect_out "^memory: .*what helps: swap space with room.*closing programs.*image_size" "status: what helps"
	t_run status torpor status --json
	python3 -c 'import json,sys; w=json.load(open(sys.argv[1]))["memory_warning"]; assert w.startswith("the snapshot needs a free copy"), w' "$OUT" ||
		fail "enomem: JSON memory_warning"
	t_run hib torpor hibernate --direct
	expect_rc 1 "hibernate without the memory for the copy"
	expect_err "^torpor: the kernel could not create the image: Cannot allocate memory: the snapshot needs a free copy of every page it saves: the image is about 0.8 MiB, and 0.2 MiB is free or could be freed for it \(MemAvailable 0.2 MiB \+ SwapFree 0.0 MiB; MemFree 0.1 MiB of MemTotal 512.0 MiB\); what helps: swap space" "what ENOMEM means, its figures, what helps"
	# The phases that ran are said, the failed one and after are not.
	expect_err "^torpor: freeze +[0-9.]+ s" "the freeze phase line"
	grep -Eq '^torpor: (snapshot|resumed) +[0-9.]+ s' "$ERR" && fail "a phase line after the failure"
	# With swap to move memory to, the copy fits: no warning, and the
	# cycle goes through.
	meminfo 200 4096
	t_run status torpor status
	expect_out "^memory: +0.2 MiB free or reclaimable and 4.0 MiB swap free: room for the snapshot's copy" "status: room"
	t_run status torpor status --json
	python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["memory_warning"] == ""' "$OUT" ||
		fail "enomem: JSON memory_warning with room"
	t_run hib torpor hibernate --direct --test
	expect_rc 0 "hibernate with room for the copy"
	;;
json-keys)
	# Every key at least once: an image stored (its uuid and figures), a
	# last cycle, then its resume figures.
	t_run hib torpor hibernate --direct
	expect_rc 0 "hibernate"
	torpor status --json >"$WORK/status1.json" 2>/dev/null
	t_run resume torpor_resume
	expect_rc 0 "resume"
	torpor status --json >"$WORK/status2.json" 2>/dev/null
	torpor plugins --json >"$WORK/plugins.json" 2>/dev/null
	python3 - "$TORPOR_MANDIR/torpor.8" "$WORK/status1.json" "$WORK/status2.json" "$WORK/plugins.json" <<'PY' || fail "json-keys: the documented keys and the output differ"
import json, re, sys

man = open(sys.argv[1]).read().split("\n")

def documented(command, start, end):
    """The italic key names of the paragraph of COMMAND's --json, from the
    line with START to the one with END."""
    at = next(i for i, l in enumerate(man) if l.startswith(".BR " + command + ' " ['))
    at = next(i for i in range(at, len(man)) if start in man[i])
    keys = set()
    for l in man[at + 1:]:
        if end in l or l.startswith(".TP"):
            break
        m = re.match(r"\.(I|IR) (.*)", l)
        if not m:
            continue
        words = m.group(2).split() if m.group(1) == "IR" else [m.group(2)]
        for w in words[::2]:
            if re.fullmatch(r"[a-z_]+", w):
                keys.add(w)
    return keys

def output_keys(paths):
    keys = set()
    def walk(v, parent):
        if isinstance(v, dict):
            for k, x in v.items():
                # The phases' names are values of the cycle, not keys.
                if parent != "phases":
                    keys.add(k)
                walk(x, k)
        elif isinstance(v, list):
            for x in v:
                walk(x, parent)
    for p in paths:
        walk(json.load(open(p)), None)
    return keys

bad = False
for command, start, end, paths in (
        ("status", "Its keys are stable:", "Exit status 0 when", sys.argv[2:4]),
        ("plugins", "Its keys are stable:", "(the plugins' own lines)", sys.argv[4:5])):
    doc = documented(command, start, end)
    out = output_keys(paths)
    assert len(doc) > 5, (command, doc)
    if doc - out:
        print("%s --json: documented, not in the output: %s" % (command, sorted(doc - out)))
        bad = True
    if out - doc:
        print("%s --json: in the output, not documented: %s" % (command, sorted(out - doc)))
        bad = True
sys.exit(1 if bad else 0)
PY
	;;
keygen-paths)
	[ -e "$TORPOR_PLUGINDIR/crypt.so" ] || { echo "SKIP: no crypt plugin"; exit 77; }
	t_run keygen sh -c 'cd "$1" && "$2" keygen --keyfile --output keys' sh "$WORK" "$TORPOR"
	expect_rc 0 "keygen --keyfile --output keys"
	expect_out "^  key_file = $WORK/keys/crypt.keyfile\$" "an absolute key_file"
	expect_out "^  filters = checksum, lzo, crypt\$" "checksum first, crypt last"
	# The printed lines, as they are, in a configuration that loads.
	{
		sed -n 's/^  \(filters = .*\)$/\1/p' "$OUT" | sed '1i [torpor]\nsnapshot = sim:819200:5\nwriter = raw'
		echo "[crypt]"
		sed -n 's/^  \(mode = .*\|key_file = .*\)$/\1/p' "$OUT"
		echo "[raw]"
		echo "device = $IMAGE"
	} >"$CONF"
	t_run config torpor config
	expect_rc 0 "the printed lines load"
	expect_out "^key_file = $WORK/keys/crypt.keyfile" "torpor config: the key file"
	;;
*)
	echo "unknown case $case_name"; exit 2 ;;
esac
finish
