#!/bin/bash
# VM test: two guests with -device qrdma; each runs guest-smoke.sh.
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/../../scripts/vm-run" --guests 2 --timeout 300 --share "$here" \
    --run 'bash guest-smoke.sh' --run 'bash guest-smoke.sh'
