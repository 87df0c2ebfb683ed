#!/bin/bash
# VM test: memory windows (interface 0.7) in one guest, between two QPs of
# its qrdma device over the device's own GID (guest-mw.sh, qrdma-mw).
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/../../scripts/vm-run" --guests 1 --timeout 600 --share "$here" \
    --run 'bash guest-mw.sh'
