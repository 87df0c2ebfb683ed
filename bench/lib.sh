# Sourced by the VM benchmarks (run-bench.sh, tails.sh): how a run's share
# is laid out for bench/guest-perftest.sh.

# bench_share DIR: DIR made the guests' share: guest-perftest.sh and its
# library, an empty raw (the result lines), and bench/host-load.py writing
# the host's load to DIR/hostload for the guests to read around each run
# (the bench's own processes: those whose command line names DIR, the
# guests' QEMUs). The sampler's PID goes to $sampler.
bench_share() {
    cp bench/guest-perftest.sh tests/vm/guest-lib.sh "$1/"
    : > "$1/raw"
    python3 bench/host-load.py "$1/hostload" "path=$1" &
    sampler=$!
}

# bench_guest_env SETUPS MTUS REPS MATRIX: guest-perftest.sh's environment,
# its outputs on the share.
bench_guest_env() {
    echo "BENCH_SETUPS='$1' BENCH_MTUS='$2' BENCH_REPS=$3 BENCH_MATRIX=$4" \
        "BENCH_OUT=/mnt/host/raw BENCH_LOGS=/mnt/host/logs BENCH_HOSTLOAD=/mnt/host/hostload"
}
