#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# torpor bench on a small sim image: its JSON has every figure, each one
# finite and of the right sign, and its wrong arguments are refused.  No
# figure is compared with a speed: the machine running the test may be
# slow or busy.
# Usage: bench.sh CHAIN   ("lz4", or "lzo, checksum, crypt")
. "$(dirname "$0")/lib.sh"
chain="$1"

for p in ${chain//,/ } raw; do
	if [ ! -e "$TORPOR_PLUGINDIR/$p.so" ]; then
		echo "SKIP: plugin $p is not built"
		exit 77
	fi
done

bench() { "$TORPOR" --plugin-dir "$TORPOR_PLUGINDIR" bench "$@"; }

# check_json FILE CHAIN THREADS: every key, sane values.
check_json() {
	python3 - "$1" "$2" "$3" <<'PY'
import json, math, sys
path, chain, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
d = json.load(open(path))
bad = []
def need(cond, what):
    if not cond:
        bad.append(what)
def num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
need(d.get("size") == 16 << 20, "size is 16 MiB")
need(d.get("threads") == threads, "threads")
need(isinstance(d.get("cpus"), int) and 1 <= d["cpus"] <= threads + 1, "cpus")
need(d.get("target") == "file", "target")
# 16 MiB fits in memory: the sim's pages are made before the measurements.
need(d.get("sim_pages_premade") is True, "sim_pages_premade")
dev = d.get("device", {})
need(isinstance(dev.get("direct"), bool), "device.direct")
for k in ("write_mib_s", "read_mib_s"):
    need(num(dev.get(k)) and dev[k] > 0, "device." + k)
chains = d.get("chains", [])
need(len(chains) == 1, "one chain")
for c in chains:
    need(c.get("chain") == chain, "chain name")
    need(c.get("ok") is True, "chain ok")
    need(c.get("image_bytes") == 16 << 20, "image_bytes")
    need(isinstance(c.get("stored_bytes"), int) and c["stored_bytes"] > 0,
         "stored_bytes")
    r = c.get("stored_ratio")
    need(num(r) and 0 < r < 1.1, "stored_ratio")
    for side in ("hibernate", "resume"):
        s = c.get(side, {})
        for k in ("mib_s", "peak_rss_mib", "loop_1_mib_s", "loop_n_mib_s",
                  "scaling", "source_mib_s", "device_mib_s", "limit_mib_s",
                  "efficiency", "cpu_mib_s", "work_share", "cpu_limit_mib_s"):
            need(num(s.get(k)) and s[k] > 0, side + "." + k)
        if all(num(s.get(k)) for k in ("limit_mib_s", "loop_n_mib_s",
                                         "source_mib_s", "device_mib_s")):
            need(abs(s["limit_mib_s"] - min(s["loop_n_mib_s"], s["source_mib_s"],
                                             s["device_mib_s"])) < 0.01,
                 side + ".limit is the least of the three")
        # A 16 MiB image's pipeline fits well under 64 MiB: this checks that
        # the figure is the child's, not a stray value.
        need(num(s.get("peak_rss_mib")) and s["peak_rss_mib"] < 512,
             side + ".peak_rss_mib")
for b in bad:
    print("bad JSON figure:", b)
sys.exit(1 if bad else 0)
PY
}

t_run json bench --size 16M --chain "$chain" --threads 2 --json --dir "$WORK"
expect_rc 0 "bench --json"
cp "$OUT" "$WORK/bench.json"
check_json "$WORK/bench.json" "$chain" 2 || fail "bench --json: figures"
[ -z "$(find "$WORK" -mindepth 1 -name 'torpor-bench.*')" ] ||
	fail "bench left its temporary directory behind"

t_run table bench --size 16M --chain "$chain" --threads 1 --dir "$WORK"
expect_rc 0 "bench (table)"
expect_out "^torpor bench: sim 16 MiB, 1 thread, " "table heading"
expect_out "^sim pages made beforehand " "table: the sim's pages premade"
expect_out "^$chain +hibernate " "table: the hibernate row"
expect_out "^ +resume " "table: the resume row"

# Not root: the temporary files are the user's own.
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null &&
   setpriv --reuid=nobody --regid=nogroup --clear-groups \
	test -x "$TORPOR" 2>/dev/null; then
	mkdir -m 0777 "$WORK/nobody"
	chmod 0711 "$WORK"
	t_run nobody setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$TORPOR" --plugin-dir "$TORPOR_PLUGINDIR" bench --size 16M \
		--chain "$chain" --json --dir "$WORK/nobody"
	expect_rc 0 "bench as nobody"
	cp "$OUT" "$WORK/nobody.json"
	check_json "$WORK/nobody.json" "$chain" "$(nproc)" || fail "bench as nobody: figures"
	echo "checked a run as nobody"
fi

# On tmpfs (O_DIRECT refused by older kernels): the page cache instead,
# for the baseline and for the raw writer's reads.
if [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] && [ -w /dev/shm ]; then
	t_run tmpfs bench --size 16M --chain "$chain" --threads 2 --json --dir /dev/shm
	expect_rc 0 "bench on tmpfs"
	cp "$OUT" "$WORK/tmpfs.json"
	check_json "$WORK/tmpfs.json" "$chain" 2 || fail "bench on tmpfs: figures"
fi

# Wrong arguments, each refused with a message that names it.
t_run size bench --size 12345 --chain "$chain"
expect_rc 1 "bench --size 12345"
expect_err "--size '12345'" "--size refusal"
t_run threads bench --threads 0 --chain "$chain"
expect_rc 1 "bench --threads 0"
expect_err "--threads '0'" "--threads refusal"
t_run chain bench --chain 'lz4; rm' --size 16M
expect_rc 1 "bench --chain with a stray character"
expect_err "--chain 'lz4; rm'" "--chain refusal"
t_run both bench --dir "$WORK" --device /dev/null --chain "$chain"
expect_rc 1 "bench --dir and --device"
expect_err "exclude each other" "--dir/--device refusal"
t_run nodir bench --size 16M --chain "$chain" --dir "$WORK/missing"
expect_rc 1 "bench --dir missing"
expect_err "cannot create a directory in $WORK/missing" "--dir refusal"
t_run noplugin bench --size 16M --chain "nosuchfilter" --dir "$WORK"
expect_rc 1 "bench with a chain whose plugin is missing"
expect_err "chain 'nosuchfilter' failed" "missing plugin"
finish
