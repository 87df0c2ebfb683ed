#!/bin/bash
# VM test: a device whose engine never becomes ready fails probe cleanly.
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/../../scripts/vm-run" --guests 1 --timeout 240 --share "$here" \
    --device-opts pe-ready-delay-us=4294967295 --run 'bash guest-pe-timeout.sh'
