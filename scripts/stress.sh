#!/usr/bin/env bash
# The stress suite (`make test-stress`): the packages whose tests run real sandboxes against deadlines
# (by default internal/sandbox, stages/gate, internal/bench, stages/rollout) run beside a CPU hog of
# twice the machine's cores, so that a test a loaded machine breaks fails here instead of on a user's
# laptop. The hog is STRESS_HOGS shell busy loops (default 2 × nproc), started before the tests and
# killed, each by its pid, when they end or the script is interrupted. Exit status: the tests'.
#
#   STRESS_PACKAGES  packages to test (default the four above)
#   STRESS_HOGS      busy loops to run beside them (default twice the cores)
#   GO, GOFLAGS_TAGS the go command and its build tags (the Makefile passes its own)
set -uo pipefail
go=${GO:-go}
packages=${STRESS_PACKAGES:-./internal/sandbox ./stages/gate ./internal/bench ./stages/rollout}
hogs=${STRESS_HOGS:-$((2 * $(nproc)))}
pids=()
stop_hogs() {
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null
	done
	wait "${pids[@]}" 2>/dev/null
	pids=()
}
trap stop_hogs EXIT
trap 'stop_hogs; exit 130' INT TERM
# (the test binaries are built first, so the hog slows the tests and not the compiler)
# shellcheck disable=SC2086
"$go" test ${GOFLAGS_TAGS:-} -count=1 -run '^$' $packages >/dev/null || exit
for ((i = 0; i < hogs; i++)); do
	(while :; do :; done) &
	pids+=($!)
done
echo "test-stress: $hogs busy loops beside the tests of $packages (load before: $(cut -d' ' -f1-3 /proc/loadavg))"
began=$(date +%s)
# shellcheck disable=SC2086
"$go" test ${GOFLAGS_TAGS:-} -count=1 -timeout 60m $packages
status=$?
echo "test-stress: $(( $(date +%s) - began )) s beside $hogs busy loops (load: $(cut -d' ' -f1-3 /proc/loadavg)), exit $status"
exit $status
