# SPDX-License-Identifier: BSD-2-Clause
# Sourced by test/run and its self-test: how results are counted.
#
# Every program is run under a timeout, and the runner knows how many
# results each one owes: a result that never came (a crash, an early
# return, a child that died, a hang) is a failure, never a missing line.
# Needs $out (a scratch directory) and the counters pass, fail and skip.

ok() { pass=$((pass + 1)); echo "PASS  $1"; }
# Each failure is also kept in $out/failures, which test/run prints again
# just before its count: a log cut in the middle still names them.
ko() {
	fail=$((fail + 1))
	echo "FAIL  $1${2:+: $2}" | tee -a "$out/failures"
}
sk() { skip=$((skip + 1)); echo "SKIP  $1${2:+: $2}"; }

# Seconds a program may take before it is killed (timeout signals its
# whole process group, so servers it started go too).
CHECK_TIMEOUT=${IW_CHECK_TIMEOUT:-600}

# A status from `timeout`: 124 (TERM) or 137 (KILL after -k) is a hang.
timed_out() { [ "$1" -eq 124 ] || [ "$1" -eq 137 ]; }

# A sanitizer or valgrind report in a log fails the program that wrote
# it, even when its exit status was lost (a child's report, say).
sanitizer_report() { # file
	grep -m1 -E "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|SUMMARY: UndefinedBehaviorSanitizer|^==[0-9]+== (Invalid|Conditional|Syscall param|Use of uninit)" \
		"$1" 2>/dev/null
}

check() { # name, then a command whose status decides
	local name=$1 rc
	shift
	# timeout runs programs: a shell function must go through bash -c
	if declare -F "$1" >/dev/null; then
		ko "$name" "the check names the shell function $1, which timeout cannot run"
		return
	fi
	timeout -k 10 "$CHECK_TIMEOUT" "$@" >"$out/check.log" 2>&1
	rc=$?
	if [ $rc -eq 0 ]; then
		ok "$name"
	elif timed_out $rc; then
		ko "$name" "timed out after ${CHECK_TIMEOUT}s: $(tail -2 "$out/check.log" | tr '\n' ' ')"
	else
		ko "$name" "$(tail -3 "$out/check.log" | tr '\n' ' ')"
	fi
}

# A TAP program owing `want` results: every ok/not ok line counts (an
# "ok ... # SKIP why" line as a skip); a crash, a hang, a non-zero status
# without a failing check, a sanitizer report, or a number of results
# other than `want` is one more failure, named.
tap() { # name want seconds command...
	local name=$1 want=$2 secs=$3 rc
	shift 3
	timeout -k 10 "$secs" "$@" >"$out/$name.tap" 2>"$out/$name.err"
	rc=$?
	tap_count "$name" "$want" "$secs" $rc
}

# The same counting for a suite make check already ran through
# test/unit-env: its TAP (stdout), stderr and exit status.
tap_ran() { # name want prog
	local name=$1 want=$2 prog=$3 rc
	if [ ! -f "$prog.out" ] || [ ! -f "$prog.rc" ]; then
		ko "$name" "make check left no output or exit status for $prog"
		return
	fi
	cp "$prog.out" "$out/$name.tap"
	cp "$prog.err" "$out/$name.err" 2>/dev/null || : >"$out/$name.err"
	rc=$(cat "$prog.rc")
	tap_count "$name" "$want" "${IW_TEST_SECONDS:-600}" "$rc"
}

tap_count() { # name want seconds status: reads $out/name.tap and .err
	local name=$1 want=$2 secs=$3 rc=$4 log=$out/$1.tap err=$out/$1.err
	local n_ok n_ko n_sk n plan san
	n_sk=$(grep -cE '^ok [0-9]+ .*# SKIP' "$log")
	n_ok=$(($(grep -c '^ok ' "$log") - n_sk))
	n_ko=$(grep -c '^not ok ' "$log")
	n=$((n_ok + n_ko + n_sk))
	plan=$(grep -E '^1\.\.[0-9]+$' "$log" | tail -1 | cut -c4-)
	pass=$((pass + n_ok))
	fail=$((fail + n_ko))
	skip=$((skip + n_sk))
	grep '^not ok ' "$log" | sed "s/^/FAIL  $name: /" |
		tee -a "$out/failures"
	grep -E '^ok [0-9]+ .*# SKIP' "$log" | sed "s/^/SKIP  $name: /"
	echo "TAP   $name: $n_ok ok, $n_ko not ok, $n_sk skipped (owes $want)"
	san=$(sanitizer_report "$err")
	if timed_out $rc; then
		ko "$name" "timed out after ${secs}s, killed after $n results"
	elif [ $rc -gt 128 ]; then
		ko "$name" "killed by signal $((rc - 128)) after $n results"
		tail -5 "$err"
	elif [ $rc -ne 0 ] && [ "$n_ko" -eq 0 ]; then
		ko "$name" "exit status $rc without a failing check"
		tail -5 "$err"
	fi
	[ -z "$san" ] || ko "$name" "sanitizer report: $san"
	if [ "$n" -ne "$want" ]; then
		ko "$name" "$n results, $want owed"
	elif [ -z "$plan" ] || [ "$plan" -ne "$n" ]; then
		ko "$name" "plan '${plan}' does not match $n results"
	fi
}

# A sub-runner printing "PLAN n" and then one "PASS what", "FAIL what: why"
# or "SKIP what: why" line per case. It owes `want` verdicts, must plan
# exactly that many, and exits non-zero only when a case failed.
verdicts() { # name want seconds command...
	local name=$1 want=$2 secs=$3 log=$out/$1.log rc n plan n_ko=0 san
	local verdict what
	shift 3
	timeout -k 10 "$secs" "$@" >"$log" 2>&1
	rc=$?
	n=0
	while read -r verdict what; do
		case $verdict in
		PASS) ok "$name: $what"; n=$((n + 1)) ;;
		FAIL) ko "$name: $what"; n=$((n + 1)); n_ko=$((n_ko + 1)) ;;
		SKIP) sk "$name: $what"; n=$((n + 1)) ;;
		esac
	done <"$log"
	plan=$(sed -n 's/^PLAN \([0-9][0-9]*\)$/\1/p' "$log" | head -1)
	san=$(sanitizer_report "$log")
	if timed_out $rc; then
		ko "$name" "timed out after ${secs}s, killed after $n verdicts"
	elif [ $rc -ne 0 ] && [ "$n_ko" -eq 0 ]; then
		ko "$name" "exit status $rc without a failing case; log tail: $(tail -3 "$log" | tr '\n' ' ')"
	elif [ $rc -eq 0 ] && [ "$n_ko" -ne 0 ]; then
		ko "$name" "exit status 0 with $n_ko failing cases"
	fi
	[ -z "$san" ] || ko "$name" "sanitizer report: $san"
	if [ -z "$plan" ]; then
		ko "$name" "no PLAN line; log tail: $(tail -3 "$log" | tr '\n' ' ')"
	elif [ "$plan" -ne "$want" ]; then
		ko "$name" "plans $plan verdicts, $want owed"
	fi
	[ "$n" -eq "$want" ] || ko "$name" "$n verdicts, $want owed"
}
