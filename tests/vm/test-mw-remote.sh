#!/bin/bash
# VM test: a memory window across two qrdma guests (guest-mw.sh remote):
# bound in guest 0, READ and WRITTEN through its rkey from guest 1 with the
# bytes compared where they live, then invalidated in guest 0, after which
# guest 1's WRITE fails with REM_ACCESS_ERR and writes nothing.
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/../../scripts/vm-run" --guests 2 --timeout 600 --share "$here" \
    --run 'bash guest-mw.sh remote' --run 'bash guest-mw.sh remote'
