/*
 * generic-fuzz-qrdma: an entry of QEMU's generic-fuzz table
 * (tests/qtest/fuzz/generic_fuzz_configs.h), inserted there by
 * scripts/build-qemu.sh for QRDMA_QEMU_VARIANT=fuzz.
 *
 * Two qrdma functions on one hub, so that what one sends the other
 * receives: the fuzzer's MMIO, config-space and DMA contents reach the
 * control path, the data path between two devices and the QOM glue
 * (config writes, FLR, bus-master changes, resets between inputs).
 * The pattern matches the device type and its memory regions
 * ("qrdma-regs", "qrdma-doorbells" and the MSI-X BAR).
 *
 * ACPI PCI hotplug is off (native PCIe hotplug, as many q35 guests run):
 * its reset walks every bus looking up properties that are not there,
 * a fifth of each input's time, and the fuzzer cannot reach it.
 */
    {
        .name = "qrdma",
        .args = "-machine q35 -nodefaults "
        "-netdev hubport,id=net0,hubid=0 -netdev hubport,id=net1,hubid=0 "
        "-device qrdma,netdev=net0,mac=02:00:00:00:00:0a "
        "-device qrdma,netdev=net1,mac=02:00:00:00:00:0b "
        "-global ICH9-LPC.acpi-pci-hotplug-with-bridge-support=off",
        .objects = "qrdma*",
    }
