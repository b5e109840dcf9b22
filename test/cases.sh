# SPDX-License-Identifier: BSD-2-Clause
# Sourced by the sub-runners (test/mpi/run-mpi, test/netns/run-netns,
# test/siw/run-siw) after they declared their cases with add_case into
# CASE_IDS and CASE_NAME: prints "PLAN n", then run_case gives each case
# exactly one line, whatever happens in it (it dies, hangs, prints two
# verdicts), and finish (the EXIT/INT/TERM trap) prints a FAIL for every
# case never reached and exits non-zero iff a case failed. A script's own
# cleanup goes in a function at_exit; $logs, when set, is named at the end.
failed=0
current=
tmp=
t_start=$(date +%s)
echo "PLAN ${#CASE_IDS[@]}"

# one line, and none of the phrases a runner takes for a sanitizer report
flat() {
	local s=${1//$'\n'/ }
	s=${s//ERROR: /ERROR }
	s=${s//runtime error:/runtime error}
	s=${s//SUMMARY: /SUMMARY }
	printf '%s' "$s"
}

# emit ID VERDICT [TEXT]: the one line of case ID (TEXT " (figures)" or
# ": reason"); a second verdict for a case is a bug of this script
emit() {
	local id=$1 v=$2 text=${3:-}
	if [ -n "${seen[$id]:-}" ]; then
		echo "# BUG: case $id had its verdict already; dropped: $v$(flat "$text")"
		failed=$((failed + 1))
		return
	fi
	seen[$id]=$v
	[ "$v" = FAIL ] && failed=$((failed + 1))
	echo "$v ${CASE_NAME[$id]}$(flat "$text")"
}

# rest VERDICT REASON: every case without a verdict yet gets this one
rest() {
	local id
	for id in "${CASE_IDS[@]}"; do
		[ -n "${seen[$id]:-}" ] || emit "$id" "$1" ": $2"
	done
}

# descendants PID: PID and every process below it, parents first
descendants() {
	ps -e -o pid=,ppid= | awk -v root="$1" '
		{ kids[$2] = kids[$2] " " $1 }
		END {
			n = 1; q[1] = root
			for (i = 1; i <= n; i++) {
				m = split(kids[q[i]], c, " ")
				for (j = 1; j <= m; j++) q[++n] = c[j]
			}
			for (i = 1; i <= n; i++) print q[i]
		}'
}

# start time of a live process (field 22 of /proc/PID/stat), to know it
# again; nothing for a zombie, which only waits to be reaped
started() {
	local s
	s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	s=${s##*) }
	# shellcheck disable=SC2086
	set -- $s
	[ "$1" != Z ] || return 1
	echo "${20}"
}

# kill_tree PID: TERM to PID and all below it, KILL 5 s later to those
# still there (the same processes: PID and start time both match)
kill_tree() {
	local p st i alive
	local -a list=()
	for p in $(descendants "$1"); do
		st=$(started "$p") && list+=("$p:$st")
	done
	for p in "${list[@]}"; do
		kill -TERM "${p%%:*}" 2>/dev/null
	done
	for ((i = 0; i < 50; i++)); do
		alive=0
		for p in "${list[@]}"; do
			[ "$(started "${p%%:*}")" = "${p#*:}" ] && alive=1
		done
		[ $alive -eq 0 ] && return 0
		sleep 0.1
	done
	for p in "${list[@]}"; do
		[ "$(started "${p%%:*}")" = "${p#*:}" ] &&
			kill -KILL "${p%%:*}" 2>/dev/null
	done
	return 0
}

# In a case's body (a subshell): its verdict, read by run_case (one
# line, whatever the text: a reason quoting a log stays one verdict)
pass() { printf 'PASS\t%s\n' "${1:+ $(flat "$1")}" >>"$tmp/verdict"; }
fail() { printf 'FAIL\t%s\n' ": $(flat "$1")" >>"$tmp/verdict"; }
skip() { printf 'SKIP\t%s\n' ": $(flat "$1")" >>"$tmp/verdict"; }

# run_case ID SECONDS FUNCTION [args]: runs FUNCTION in a subshell, killed
# with everything it started after SECONDS; prints the case's one line
run_case() {
	local id=$1 limit=$2 pid wd rc n v text t0 out st
	shift 2
	[ -n "${seen[$id]:-}" ] && return 0
	current=$id
	: >"$tmp/verdict"
	rm -f "$tmp/expired"
	t0=$(date +%s)
	("$@"; exit 0) >"$tmp/body.out" 2>&1 &
	pid=$!
	current_pid=$pid
	st=$(started "$pid")
	(
		sleep "$limit"
		[ "$(started "$pid")" = "$st" ] || exit 0
		: >"$tmp/expired"
		kill_tree "$pid"
	) </dev/null >/dev/null 2>&1 &
	wd=$!
	current_wd=$wd
	wait "$pid"
	rc=$?
	if [ -e "$tmp/expired" ]; then
		wait "$wd"
	else
		kill_tree "$wd" 2>/dev/null
		wait "$wd" 2>/dev/null
	fi
	current_pid=
	current_wd=
	# what the body printed besides its verdict, never taken for one
	if [ -s "$tmp/body.out" ]; then
		while IFS= read -r out; do
			case $out in
			PASS* | FAIL* | SKIP* | PLAN*) out="# $out" ;;
			esac
			flat "$out"
			echo
		done <"$tmp/body.out"
	fi
	n=$(grep -c . "$tmp/verdict")
	IFS=$'\t' read -r v text <"$tmp/verdict"
	if [ -e "$tmp/expired" ]; then
		emit "$id" FAIL ": hung: the case was killed after $limit s${v:+ (it had reported $v)}"
	elif [ "$n" -eq 0 ]; then
		emit "$id" FAIL ": no verdict: the case's body ended with status $rc; $(tail -2 "$tmp/body.out" | tr '\n' ' ')"
	elif [ "$n" -gt 1 ]; then
		emit "$id" FAIL ": $n verdicts from one case: $(cut -f1 "$tmp/verdict" | tr '\n' ' ')"
	elif [ "$rc" -ne 0 ] && [ "$v" = PASS ]; then
		emit "$id" FAIL ": the case's body ended with status $rc after its PASS$text"
	else
		emit "$id" "$v" "$text"
	fi
	echo "# $id: $(($(date +%s) - t0)) s"
	current=
}

# run_fg OUT ERR COMMAND...: COMMAND outside a case, its output to the
# files OUT and ERR (ERR "-": to OUT too), in the background so that a
# signal to the runner is handled at once (bash runs a trap only after a
# foreground command ends); $? is COMMAND's. Never redirect run_fg itself:
# the trap would write the verdicts there.
run_fg() {
	local rc out=$1 err=$2
	shift 2
	if [ "$err" = - ]; then
		"$@" >"$out" 2>&1 &
	else
		"$@" >"$out" 2>"$err" &
	fi
	current_pid=$!
	wait "$current_pid"
	rc=$?
	current_pid=
	return $rc
}

# at exit, also on a signal: a verdict for every case not reached
current_pid=
current_wd=
finish() {
	local rc=$?
	trap - EXIT INT TERM
	if [ -n "$current" ] && [ -z "${seen[$current]:-}" ]; then
		emit "$current" FAIL ": the runner was stopped (status $rc) while this case ran"
	fi
	rest FAIL "no verdict: the runner ended (status $rc) before this case"
	[ -n "$current_wd" ] && kill_tree "$current_wd" 2>/dev/null
	[ -n "$current_pid" ] && kill_tree "$current_pid" 2>/dev/null
	# the script's own cleanup, if it has one
	declare -F at_exit >/dev/null && at_exit
	[ -n "$tmp" ] && rm -rf "$tmp"
	echo "# ${0##*/} took $(($(date +%s) - t_start)) s${logs:+; logs in $logs}"
	[ $failed -eq 0 ] && exit 0
	exit 1
}
