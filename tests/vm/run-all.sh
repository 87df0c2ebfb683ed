#!/bin/bash
# Runs every VM test (tests/vm/test-*.sh) one after another, with timings,
# and ends with the "N passed, N failed" line. Suites with a target of
# their own stay out of make check: nested guests (make check-nested).
set -u
here=$(cd "$(dirname "$0")" && pwd)
own_target=" test-nested "
passed=0 failed=0 failed_names=()
for t in "$here"/test-*.sh; do
    name=$(basename "$t" .sh)
    [[ $own_target == *" $name "* ]] && continue
    t0=$(date +%s)
    echo "=== $name"
    if bash "$t"; then
        passed=$((passed + 1)); verdict=PASS
    else
        failed=$((failed + 1)); verdict=FAIL; failed_names+=("$name")
    fi
    echo "=== $name: $verdict in $(($(date +%s) - t0))s"
done
[ "$failed" -eq 0 ] || echo "failed: ${failed_names[*]}"
echo "vm-tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
