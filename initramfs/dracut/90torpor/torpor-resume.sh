#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# dracut pre-mount hook: resume from a torpor image if there is one; the boot
# continues whatever torpor-resume returns.
command -v torpor-resume >/dev/null || exit 0
torpor-resume || echo "torpor: no image restored (torpor-resume exited $?); booting normally"
