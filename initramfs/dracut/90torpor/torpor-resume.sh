#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# dracut pre-mount hook (sourced by dracut's init: no exit here): resume
# from a torpor image if there is one; the boot continues whatever happens,
# with one line saying what.
if [ -x @libexecdir@/torpor/torpor-initrd-resume ]; then
	@libexecdir@/torpor/torpor-initrd-resume
fi
