#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# torpor-resume --wait-device: in an initramfs the storage may appear after
# the resume step starts.  A device that shows up within the bound is used
# (the image resumes); one that never does ends the wait at the bound with
# a message; a device that is there costs no wait at all.
. "$(dirname "$0")/lib.sh"

# A present device with no image (invalidated): no waiting.
write_config sim:8M lzo
truncate -s 16M "$IMAGE"
t_run "present, no image" torpor_resume --wait-device 60
expect_rc 0 "present device, no image"
expect_out 'no image found' "present device: nothing to resume"
if grep -q 'waiting' "$ERR"; then fail "a present device was waited for"; fi

# The image's storage appears while torpor-resume waits for it.
t_run "hibernate" torpor hibernate --direct
expect_rc 0 "hibernate"
mv "$IMAGE" "$IMAGE.away"
torpor_resume --wait-device 60 >"$OUT" 2>"$ERR" &
pid=$!
# Put it back once the waiting has begun (the message says so).
for _ in $(seq 600); do
	grep -q 'waiting up to 60 s' "$ERR" && break
	sleep 0.1
done
mv "$IMAGE.away" "$IMAGE"
wait "$pid"
rc=$?
expect_rc 0 "the device appeared during the wait"
expect_err 'not there yet; waiting up to 60 s' "the wait is announced"
expect_err 'storage device is there after [0-9]+ ms' "the end of the wait is said"
expect_out 'restored and verified' "the image resumed once the device was there"

# A device that never appears: the wait ends at the bound, exit 1.
rm -f "$IMAGE"
t_run "never appears" torpor_resume --wait-device 1
expect_rc 1 "device never appears"
expect_err 'did not appear within 1 s' "the bound is said"

# A bad bound is refused.
t_run "bad bound" torpor_resume --wait-device 5x
expect_rc 1 "--wait-device 5x"
expect_err "--wait-device '5x': expected seconds" "a bad bound is named"

finish
