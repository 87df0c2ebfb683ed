#!/bin/bash
# VM test: two guests with -device qrdma; each runs guest-smoke.sh.
here=$(cd "$(dirname "$0")" && pwd)
# Each guest also gets a second qrdma function with no netdev (link down).
exec "$here/../../scripts/vm-run" --guests 2 --timeout 300 --share "$here" \
    --qemu-arg -device --qemu-arg qrdma,mac=52:54:00:72:00:01 \
    --run 'bash guest-smoke.sh' --run 'bash guest-smoke.sh'
