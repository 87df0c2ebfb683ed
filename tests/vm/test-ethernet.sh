#!/bin/bash
# VM test: the qrdma Ethernet function between two guests.
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/../../scripts/vm-run" --guests 2 --timeout 900 --share "$here" \
    --run 'bash guest-ethernet.sh' --run 'bash guest-ethernet.sh'
