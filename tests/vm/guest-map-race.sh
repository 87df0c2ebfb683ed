#!/bin/bash
# Run by test-map-race.sh: qrdma-map-race between the guest's two qrdma
# functions, each way round.
#
# The vCPU reading runs straight-line code with sixteen BAR0 reads per
# translation block; the other vCPU's writes to PCI_COMMAND rebuild QEMU's
# memory map. Turning off the function whose BAR0 lies lower renumbers the
# map's sections behind the one read, so that a TLB entry made before the
# change names another region after it: QEMU must neither abort nor send a
# read elsewhere, and each of the millions of reads must return the
# register's value. The other way round (the toggled BAR0 above the one
# read) leaves the numbers alone and checks the toggling itself.
. "$(dirname "$0")/guest-lib.sh"
functions=$(cd /sys/bus/pci/drivers/qrdma && ls -d 0000:* 2>/dev/null)
check "two qrdma functions bound ($(echo $functions))" test "$(echo "$functions" | wc -w)" -eq 2
check "two vCPUs online" test "$(nproc)" -ge 2
check "rmmod qrdma" rmmod qrdma
bar0() { printf '%d' "$(awk 'NR == 1 { print $1 }' "/sys/bus/pci/devices/$1/resource")"; }
set -- $functions
if [ "$(bar0 "$1")" -lt "$(bar0 "$2")" ]; then low=$1 high=$2; else low=$2 high=$1; fi
check "$high's BAR0 reads right while $low's decoding goes off and on" qrdma-map-race "$high" "$low" 10
check "$low's BAR0 reads right while $high's decoding goes off and on" qrdma-map-race "$low" "$high" 5
check "modprobe qrdma" modprobe qrdma
check "both functions registered again" wait_for 10 test -d /sys/class/infiniband/qrdma1
check "provider verbs on the first function" qrdma-verbs-smoke --expect-fw 0.1.0 --pds 4
finish guest-map-race
