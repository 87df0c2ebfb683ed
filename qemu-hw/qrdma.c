/*
 * QEMU glue of the qrdma virtual RDMA NIC: QOM type, properties, PCI BARs,
 * MSI-X, reset, the netdev, the timers, the VM's run state and migration.
 * The device itself lives in core/ and knows nothing of QEMU; this file
 * only forwards to it.
 *
 * Threading: the core has one lock of its own (QrdmaState.lock), which every
 * entry into it holds. Without iothread=, everything runs with the BQL held as
 * well: MMIO, timers, bottom halves, the netdev, the backend's fd. With
 * iothread= (either backend), the data path (QRDMA_WORK_DP, the frames
 * received, the transport's timer, the verbs backend's fd, and the SQ doorbells
 * of the first pages as eventfds: "SQ doorbells as eventfds" below) runs in the
 * IOThread's AioContext without the BQL, off the vCPUs and the main loop; what
 * needs the BQL is handed to the main loop (qrdma_main_bh): interrupts, the
 * frames to send, and the netdev's receive restart. Frames cross between the
 * two in queues of their own ("frames" below). There the device touches guest
 * memory only where it is RAM, in one translation (qrdma_dma_ram), so no access
 * of its dispatches to MMIO and takes the BQL under the device's lock: the lock
 * order is BQL, then the device's, then frames_lock.
 *
 * Lifetime: the core guards itself against re-entry (struct
 * qrdma_core_guard): an interrupt it raises is delivered when its outermost
 * call returns, and a reset or teardown asked for from inside one of its
 * callbacks (an MSI-X message aimed at DEV_CTRL, at our config space for an
 * FLR, at a bridge's Secondary Bus Reset or a slot's power control) waits
 * until then. What this file adds: entry points that are not MMIO (bottom
 * halves, timers, netdev receive) hold a reference on the device so that
 * an unplug from inside them cannot free it under the core, and once the
 * device is unrealized (gone) the callbacks the core still makes on the way
 * out do nothing.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "qemu/cutils.h"
#include "qemu/iov.h"
#include "qemu/error-report.h"
#include "qemu/log.h"
#include "qemu/module.h"
#include "qemu/timer.h"
#include "qemu/lockable.h"
#include "qemu/queue.h"
#include "qemu/main-loop.h"
#include "qemu/event_notifier.h"
#include "block/aio.h"
#include "block/aio-wait.h"
#include "system/iothread.h"
#include "hw/pci/msix.h"
#include "hw/pci/pci_device.h"
#include "hw/pci/pcie.h"
#include "system/dma.h"
#include "hw/qdev-properties.h"
#include "migration/blocker.h"
#include "migration/vmstate.h"
#include "net/net.h"
#include "qom/object.h"
#include "system/runstate.h"

#include "core/qrdma_core.h"
#include "trace.h"

#ifdef QRDMA_HAVE_VERBS
#include "exec/memory.h"
#include "exec/ramblock.h"
#include "qemu/rcu.h"
#include "qrdma_backend_verbs.h"
#endif

#define TYPE_QRDMA "qrdma"
OBJECT_DECLARE_SIMPLE_TYPE(QrdmaState, QRDMA)

/* One frame on its way between the data path's thread and the main loop. */
struct qrdma_frame {
    QSIMPLEQ_ENTRY(qrdma_frame) next;
    size_t len;
    uint8_t data[];
};

struct qrdma_frames {
    QSIMPLEQ_HEAD(, qrdma_frame) head;
    unsigned count;
};

/*
 * Depths of the two queues, in frames. Transmit: from QRDMA_TX_FRAMES_PAUSE
 * the core is told its frames are queued (QRDMA_TX_QUEUED) and stops, as at
 * a netdev that cannot take more; beyond QRDMA_TX_FRAMES_MAX a frame is
 * dropped as a full wire drops it (the transport's retransmission covers
 * it), so that what the core sends regardless (ACKs) cannot grow the queue
 * without bound. Receive: the netdev is told the device cannot receive
 * from QRDMA_RX_FRAMES_MAX, and QEMU's net layer queues for it.
 */
#define QRDMA_TX_FRAMES_PAUSE   64
#define QRDMA_TX_FRAMES_MAX     256
#define QRDMA_RX_FRAMES_MAX     64
/*
 * The longest frame the core sends: a LAN frame of the largest MTU (RoCE
 * frames are shorter). What the netdev delivers is bounded by QEMU's net
 * layer (NET_BUFSIZE).
 */
#define QRDMA_FRAME_LEN_MAX     (QRDMA_LAN_MTU_MAX + QRDMA_LAN_FRAME_OVERHEAD)

/*
 * Doorbell pages whose SQ doorbell is an eventfd with iothread=: the
 * kernel's (page 0) and the first user contexts'. Each costs an fd and one
 * of KVM's ioeventfd slots (about 1000 a VM, shared with every device);
 * the pages beyond keep the MMIO doorbell.
 */
#define QRDMA_SQ_NOTIFY_PAGES   64

struct qrdma_sq_notifier {
    EventNotifier e;
    struct QrdmaState *s;
    uint32_t page;
};

struct QrdmaState {
    PCIDevice parent_obj;

    MemoryRegion regs;
    MemoryRegion doorbells;
    NICConf conf;
    NICState *nic;
    QEMUTimer *pe_ready_timer;
    /* the transport's retransmit/ACK/RNR deadline */
    QEMUTimer *dp_timer;
    QEMUBH *work_bh;
    unsigned pending_work;      /* QRDMA_WORK_* kicked and not yet run */
    /* held by every entry into the core, in any thread (see the top) */
    QemuRecMutex lock;
    /*
     * iothread=: the data path's context (dp_ctx, NULL without one), where
     * dp_bh runs QRDMA_WORK_DP and dp_timer and the backend's fd fire.
     * main_bh, in the main loop, sends the interrupts raised there
     * (irq_raised: one bit a vector, at most 64) and restarts the
     * netdev's receive (rx_ready_due).
     */
    IOThread *iothread;
    AioContext *dp_ctx;
    /*
     * iothread= with ioeventfd= (on unless off): the SQ doorbells of the
     * first nsq_notifiers pages are eventfds QEMU signals (KVM itself,
     * without leaving the guest) instead of MMIO writes dispatched under
     * the BQL; each page's is handled in dp_ctx (qrdma_sq_notified). An
     * eventfd carries no value: each says only "an SQ doorbell of this
     * page" (docs/backends.md, "Doorbells without the BQL").
     */
    OnOffAuto ioeventfd;
    struct qrdma_sq_notifier *sq_notifiers;
    uint32_t nsq_notifiers;
    QEMUBH *dp_bh;
    QEMUBH *main_bh;
    uint64_t irq_raised;
    bool rx_ready_due;
    /*
     * iothread=: the frames between the core, in the data path's thread,
     * and QEMU's net layer, in the main loop (see "frames" below). The
     * lock guards these fields only and is taken last, after the BQL and
     * the device's lock, for a few instructions at a time.
     */
    QemuMutex frames_lock;
    struct qrdma_frames tx_frames;  /* core -> netdev, sent by main_bh */
    struct qrdma_frames rx_frames;  /* netdev -> core, taken by dp_bh */
    unsigned tx_owed;           /* QRDMA_TX_QUEUED answers not yet undone */
    bool tx_room;               /* dp_bh owes the core its tx_ready calls */
    bool tx_netdev_full;        /* the netdev holds one: wait for tx_sent */
    bool rx_refused;            /* can_receive said no: flush once room */
    /*
     * The VM is not running (stopped, paused, or a destination waiting for
     * its guest to start): the device does no work. Kicks wait in
     * pending_work, a timer that fires is marked due, frames wait in
     * QEMU's queue; qrdma_vm_state_change() runs them once the VM runs.
     */
    bool held;
    bool dp_timer_due, pe_ready_due;
    VMChangeStateEntry *vm_state;
    /* unrealized; the core may still be on its way out */
    bool gone;
    char *board_id;
    char *backend;              /* backend=: sw (default) or verbs */
    /*
     * backend=verbs: the host device, its port, and the host GIDs the guest
     * may use: ibgid-indexes ("3:5"), or ibgid-index alone
     */
    char *ibdev;
    uint8_t ibport;
    uint8_t ibgid_index;
    char *ibgid_indexes;
    /*
     * backend=verbs: rdma_cm for the guest, cm=proxy or cm=off; unset,
     * the proxy if it can start, else off with a warning saying why
     * (cm_off_why); and the ports the proxy listens on for peers
     * (cm-listen=7174:4420)
     */
    char *cm;
    char *cm_listen;
    char cm_off_why[160];
#ifdef QRDMA_HAVE_VERBS
    struct qrdma_be_verbs_config vcfg;
    Error *migration_blocker;
    bool discard_disabled;
    int wait_fd;                /* the backend's fd, or -1 */
    /* its handler is off: it was readable while the VM was stopped */
    bool wait_fd_parked;
#endif

    /*
     * Live migration (docs/migration.md): the blocker of a backend that
     * cannot save. The core's saved state travels as one buffer.
     */
    Error *mig_blocker;
    uint8_t *mig_buf;
    uint32_t mig_len;

    struct qrdma_core_config cfg;
    struct qrdma_core core;
};

/* ---- services the core asks of its embedding ----------------------------- */

/*
 * The core's lock, taken by every entry into it. Recursive: in the main
 * loop a callback of the core's may come back in (a frame looped back
 * through the netdev), which the core's own guard then handles.
 */
static void qrdma_lock(QrdmaState *s)
{
    qemu_rec_mutex_lock(&s->lock);
}

static void qrdma_unlock(QrdmaState *s)
{
    qemu_rec_mutex_unlock(&s->lock);
}

static void qrdma_env_guest_error(void *opaque, const char *msg)
{
    trace_qrdma_guest_error(msg);
    qemu_log_mask(LOG_GUEST_ERROR, "qrdma: %s\n", msg);
}

/*
 * The core's events (struct qrdma_trace_ev) as this directory's trace points.
 */
static void qrdma_env_trace(void *opaque, const struct qrdma_trace_ev *ev)
{
    switch (ev->kind) {
    case QRDMA_TRACE_CQP_CMD:
        trace_qrdma_cqp_cmd(ev->a, ev->b, ev->name, ev->c, (uint32_t)ev->d);
        break;
    case QRDMA_TRACE_QP_STATE:
        trace_qrdma_qp_state(ev->a, ev->name, ev->name2,
                             ev->b ? "transport" : "MODIFY_QP");
        break;
    case QRDMA_TRACE_CEQ_POST:
        trace_qrdma_ceq_post(ev->a, ev->d);
        break;
    case QRDMA_TRACE_AEQ_POST:
        trace_qrdma_aeq_post(ev->a, ev->b, ev->c, ev->d);
        break;
    case QRDMA_TRACE_CQ_OVERFLOW:
        trace_qrdma_cq_overflow(ev->a, ev->b);
        break;
    case QRDMA_TRACE_BAD_DOORBELL:
        trace_qrdma_bad_doorbell(ev->a, ev->b, ev->c, ev->name);
        break;
    case QRDMA_TRACE_SQ_NOTIFY_IDLE:
        trace_qrdma_sq_notify_idle(ev->a);
        break;
    case QRDMA_TRACE_TP_RETRANSMIT:
        trace_qrdma_tp_retransmit(ev->a, ev->b, ev->name);
        break;
    case QRDMA_TRACE_TP_NAK:
        trace_qrdma_tp_nak(ev->a, ev->name, ev->c, ev->b, ev->name2);
        break;
    }
}

static void qrdma_env_schedule_pe_ready(void *opaque, uint64_t delay_ns)
{
    QrdmaState *s = opaque;

    if (s->gone) {
        return;
    }
    timer_mod(s->pe_ready_timer,
              qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) + delay_ns);
}

static bool qrdma_env_link_up(void *opaque)
{
    QrdmaState *s = opaque;
    NetClientState *nc;

    if (s->gone || !s->nic) {
        return false;
    }
    nc = qemu_get_queue(s->nic);
    return nc->peer && !nc->link_down;
}

/*
 * The piece of guest memory at addr, at most *plen bytes (shortened to
 * what one translation covers), when a read may copy it directly: RAM, or
 * a ROM device reading as memory; NULL for anything else (MMIO, a RAM
 * device, unassigned space, bus mastering off). Under the caller's RCU
 * read lock.
 */
static MemoryRegion *qrdma_direct_piece(AddressSpace *as, uint64_t addr,
                                        hwaddr *xlat, hwaddr *plen)
{
    MemoryRegion *mr = address_space_translate(as, addr, xlat, plen, false,
                                               MEMTXATTRS_UNSPECIFIED);

    if (!*plen ||
        !memory_access_is_direct(mr, false, MEMTXATTRS_UNSPECIFIED)) {
        return NULL;
    }
    return mr;
}

/*
 * Guest memory for the core: only RAM, whole range, with bus mastering on
 * (the bus-master address space is disabled otherwise). Anything else
 * (MMIO, unassigned space) is refused, so a guest cannot aim the device at
 * another device's registers, nor make an access of the data path's thread
 * dispatch to MMIO, which takes the BQL (see the top). Each piece is
 * translated once and copied from what that translation found, so a
 * memory map changing meanwhile cannot turn it into MMIO between the check
 * and the copy: a read under one RCU read lock, as QEMU's own accessors
 * do; a write through a mapping, whose unmap marks the pages dirty for
 * migration and drops translated code there (TCG), and which is a bounce
 * buffer, never written back, where the piece is not RAM.
 */
static bool qrdma_dma_ram(QrdmaState *s, uint64_t addr, void *buf, size_t len,
                          bool is_write)
{
    AddressSpace *as = pci_get_address_space(PCI_DEVICE(s));
    uint8_t *p = buf;

    if (s->gone || addr + len < addr) {
        return false;
    }
    /* ordered after the device's earlier accesses, as pci_dma_rw orders */
    smp_mb();
    RCU_READ_LOCK_GUARD();
    while (len) {
        hwaddr xlat, plen = len;
        MemoryRegion *mr;
        ram_addr_t offset;
        void *ram;

        if (is_write) {
            ram = address_space_map(as, addr, &plen, true,
                                    MEMTXATTRS_UNSPECIFIED);
            if (!ram) {
                return false;
            }
            if (!memory_region_from_host(ram, &offset)) {
                /* a bounce buffer: unmapped as a read writes nothing back */
                address_space_unmap(as, ram, plen, false, 0);
                return false;
            }
            memcpy(ram, p, plen);
            address_space_unmap(as, ram, plen, true, plen);
        } else {
            mr = qrdma_direct_piece(as, addr, &xlat, &plen);
            if (!mr) {
                return false;
            }
            ram = (uint8_t *)memory_region_get_ram_ptr(mr) + xlat;
            fuzz_dma_read_cb(addr, plen, mr);
            memcpy(p, ram, plen);
        }
        addr += plen;
        p += plen;
        len -= plen;
    }
    return true;
}

static int qrdma_env_dma_read(void *opaque, uint64_t addr, void *buf,
                              size_t len)
{
    return qrdma_dma_ram(opaque, addr, buf, len, false) ? 0 : -1;
}

static int qrdma_env_dma_write(void *opaque, uint64_t addr, const void *buf,
                               size_t len)
{
    return qrdma_dma_ram(opaque, addr, (void *)buf, len, true) ? 0 : -1;
}

/*
 * The range is guest memory a read may copy directly, now (the main loop's
 * check before a mapping, which is then never a bounce buffer).
 */
static bool qrdma_range_is_direct(QrdmaState *s, uint64_t addr, size_t len)
{
    AddressSpace *as = pci_get_address_space(PCI_DEVICE(s));

    if (s->gone || addr + len < addr) {
        return false;
    }
    RCU_READ_LOCK_GUARD();
    while (len) {
        hwaddr xlat, plen = len;

        if (!qrdma_direct_piece(as, addr, &xlat, &plen)) {
            return false;
        }
        addr += plen;
        len -= plen;
    }
    return true;
}

/*
 * Zero-copy transmit: a payload is mapped where it lies in guest RAM and
 * handed to the net layer in place. Only RAM is mapped (no bounce buffer:
 * the core copies what is not); the direction is a read, so unmapping
 * marks nothing dirty for migration.
 */
static const void *qrdma_env_dma_map_read(void *opaque, uint64_t addr,
                                          size_t len)
{
    QrdmaState *s = opaque;
    dma_addr_t plen = len;
    void *p;

    /*
     * Off the BQL (the data path's thread) the memory map may change
     * between the check and the mapping: map nothing there, the core
     * copies instead (qrdma_dma_ram).
     */
    if (!bql_locked() || !qrdma_range_is_direct(s, addr, len)) {
        return NULL;
    }
    p = pci_dma_map(PCI_DEVICE(s), addr, &plen, DMA_DIRECTION_TO_DEVICE);
    if (p && plen < len) {
        pci_dma_unmap(PCI_DEVICE(s), p, plen, DMA_DIRECTION_TO_DEVICE, 0);
        p = NULL;
    }
    return p;
}

static void qrdma_env_dma_unmap_read(void *opaque, const void *p, size_t len)
{
    QrdmaState *s = opaque;

    pci_dma_unmap(PCI_DEVICE(s), (void *)p, len, DMA_DIRECTION_TO_DEVICE, 0);
}

/*
 * With a data path's thread, every interrupt goes through the main loop
 * (qrdma_main_bh), sent outside the device's lock: an MSI-X message can
 * reach anything (an FLR, a bus reset, an unplug, which waits for that
 * thread), and none of those may run under a lock the thread waits for.
 */
static void qrdma_env_msix_notify(void *opaque, unsigned vector)
{
    QrdmaState *s = opaque;

    if (s->gone) {
        return;
    }
    if (s->dp_ctx) {
        qatomic_or(&s->irq_raised, 1ull << vector);
        qemu_bh_schedule(s->main_bh);
        return;
    }
    trace_qrdma_irq(vector);
    msix_notify(PCI_DEVICE(s), vector);
}

/* ---- frames: the data path's thread and the net layer -------------------- */

/*
 * With iothread=, the core runs its data path in the IOThread, but QEMU's
 * net layer is the main loop's: a netdev is only called with the BQL held,
 * and the data path's thread may not take the BQL under the device's lock
 * (the lock order is BQL, then the device's). So frames cross in two
 * queues of copies, each guarded by frames_lock:
 *
 *   transmit: the core's send_frame, in whichever thread, appends a copy
 *   to tx_frames; main_bh sends them in order through the netdev
 *   (qrdma_tx_drain). The core stops at QRDMA_TX_FRAMES_PAUSE frames
 *   (QRDMA_TX_QUEUED), and when the main loop has sent them dp_bh calls
 *   qrdma_core_tx_ready once for each such answer, under the device's lock.
 *
 *   receive: the netdev's frames are appended to rx_frames in the main
 *   loop, without the device's lock; dp_bh hands them to the core in
 *   order (qrdma_rx_drain). A full queue makes can_receive false and QEMU
 *   queues the frames; once dp_bh has made room, main_bh flushes them.
 *
 * A frame in either queue is one the wire has in flight: a reset drops
 * both (a reset NIC sends nothing it held), an incoming migration's load
 * replaces the device's state and drops them too, and a VM that stops
 * keeps them until it runs again.
 */
static struct qrdma_frame *qrdma_frame_new(const struct iovec *iov, unsigned n,
                                           size_t len)
{
    struct qrdma_frame *f = g_malloc(sizeof(*f) + len);

    f->len = len;
    iov_to_buf(iov, n, 0, f->data, len);
    return f;
}

static void qrdma_frames_drop(struct qrdma_frames *q)
{
    struct qrdma_frame *f;

    while ((f = QSIMPLEQ_FIRST(&q->head))) {
        QSIMPLEQ_REMOVE_HEAD(&q->head, next);
        g_free(f);
    }
    q->count = 0;
}

static void qrdma_frames_push(struct qrdma_frames *q, struct qrdma_frame *f)
{
    QSIMPLEQ_INSERT_TAIL(&q->head, f, next);
    q->count++;
}

static struct qrdma_frame *qrdma_frames_pop(struct qrdma_frames *q)
{
    struct qrdma_frame *f = QSIMPLEQ_FIRST(&q->head);

    if (f) {
        QSIMPLEQ_REMOVE_HEAD(&q->head, next);
        q->count--;
    }
    return f;
}

/*
 * Both queues emptied; returns the core's QRDMA_TX_QUEUED answers that
 * were owed, which a caller with a live core undoes (qrdma_core_tx_ready),
 * as a purged netdev's callbacks undo theirs.
 */
static unsigned qrdma_frames_reset(QrdmaState *s)
{
    unsigned owed;

    QEMU_LOCK_GUARD(&s->frames_lock);
    qrdma_frames_drop(&s->tx_frames);
    qrdma_frames_drop(&s->rx_frames);
    owed = s->tx_owed;
    s->tx_owed = 0;
    s->tx_room = false;
    s->tx_netdev_full = false;
    return owed;
}

/*
 * Device's lock held: undo owed QRDMA_TX_QUEUED answers, one tx_ready each,
 * as a netdev's completion callback undoes its own.
 */
static void qrdma_tx_resume(QrdmaState *s, unsigned owed)
{
    while (owed--) {
        qrdma_core_tx_ready(&s->core);
    }
}

/* At a reset and a load, device's lock held: nothing queued, nothing owed. */
static void qrdma_frames_restart(QrdmaState *s)
{
    qrdma_tx_resume(s, qrdma_frames_reset(s));
}

/*
 * The core's frame, from any thread with the device's lock held: queued
 * for main_bh in the order the core sent it (frames of the main loop's own
 * work, LAN transmit, queue behind the thread's, never ahead of them).
 */
static int qrdma_tx_enqueue(QrdmaState *s, const struct iovec *iov,
                            unsigned n)
{
    size_t len = iov_size(iov, n);
    struct qrdma_frame *f;
    int ret = QRDMA_TX_SENT;

    if (len > QRDMA_FRAME_LEN_MAX) {
        return QRDMA_TX_SENT;   /* the core builds none this long */
    }
    f = qrdma_frame_new(iov, n, len);
    WITH_QEMU_LOCK_GUARD(&s->frames_lock) {
        if (s->tx_frames.count >= QRDMA_TX_FRAMES_MAX) {
            trace_qrdma_tx_frame_dropped(s->tx_frames.count);
            g_free(f);
            break;
        }
        qrdma_frames_push(&s->tx_frames, f);
        if (s->tx_frames.count >= QRDMA_TX_FRAMES_PAUSE) {
            s->tx_owed++;
            ret = QRDMA_TX_QUEUED;
        }
    }
    qemu_bh_schedule(s->main_bh);
    return ret;
}

static void qrdma_tx_sent(NetClientState *nc, ssize_t len);

/*
 * Main loop: send what the core queued, in order, until the netdev holds
 * one (it calls qrdma_tx_sent once it has sent it) or the VM stops. Once
 * the queue is empty, the core's QRDMA_TX_QUEUED answers are undone from
 * the data path's thread (dp_bh), which holds the device's lock.
 */
static void qrdma_tx_drain(QrdmaState *s)
{
    NetClientState *nc = qemu_get_queue(s->nic);
    bool room = false;

    while (!s->held && !s->gone) {
        struct qrdma_frame *f;
        ssize_t ret;

        WITH_QEMU_LOCK_GUARD(&s->frames_lock) {
            f = s->tx_netdev_full ? NULL : qrdma_frames_pop(&s->tx_frames);
            if (!f && !s->tx_netdev_full && s->tx_owed && !s->tx_room) {
                s->tx_room = room = true;
            }
        }
        if (!f) {
            break;
        }
        ret = qemu_send_packet_async(nc, f->data, f->len, qrdma_tx_sent);
        g_free(f);      /* a frame the net layer queues, it copied */
        if (ret == 0) {
            QEMU_LOCK_GUARD(&s->frames_lock);
            s->tx_netdev_full = true;
        }
    }
    if (room) {
        qemu_bh_schedule(s->dp_bh);
    }
}

/*
 * The netdev sent (or purged) a frame it had queued: the device's transmit
 * goes on once none is left (qrdma_core_tx_ready); with iothread=, the
 * queue of the thread's frames drains on.
 */
static void qrdma_tx_sent(NetClientState *nc, ssize_t len)
{
    QrdmaState *s = qemu_get_nic_opaque(nc);

    if (s->gone) {
        return;
    }
    if (s->dp_ctx) {
        WITH_QEMU_LOCK_GUARD(&s->frames_lock) {
            s->tx_netdev_full = false;
        }
        qrdma_tx_drain(s);
        return;
    }
    qrdma_lock(s);
    qrdma_core_tx_ready(&s->core);
    qrdma_unlock(s);
}

/*
 * The data path's thread: the core's QRDMA_TX_QUEUED answers to undo,
 * once the main loop has sent the transmit queue out (tx_room), else 0.
 */
static unsigned qrdma_tx_owed_take(QrdmaState *s)
{
    unsigned owed = 0;

    QEMU_LOCK_GUARD(&s->frames_lock);
    if (s->tx_room) {
        owed = s->tx_owed;
        s->tx_owed = 0;
        s->tx_room = false;
    }
    return owed;
}

/*
 * The data path's thread, device's lock held: hand the core the frames
 * received, in order. A frame the core cannot take now (its LAN backlog
 * is full) stays first; the core's rx_ready brings this back. Room made
 * in a queue that refused frames is flushed into it from the main loop.
 */
static void qrdma_rx_drain(QrdmaState *s)
{
    unsigned budget;
    bool flush = false;

    for (budget = QRDMA_RX_FRAMES_MAX; budget && !s->held && !s->gone;
         budget--) {
        struct qrdma_frame *f;

        if (!qrdma_core_lan_can_receive(&s->core)) {
            break;
        }
        WITH_QEMU_LOCK_GUARD(&s->frames_lock) {
            f = qrdma_frames_pop(&s->rx_frames);
        }
        if (!f) {
            break;
        }
        qrdma_core_lan_receive(&s->core, f->data, f->len);
        g_free(f);
    }
    WITH_QEMU_LOCK_GUARD(&s->frames_lock) {
        if (s->rx_refused && s->rx_frames.count < QRDMA_RX_FRAMES_MAX) {
            s->rx_refused = false;
            flush = true;
        }
        if (s->rx_frames.count && !budget) {
            /* the budget ran out, not the frames: go on in a new pass */
            qemu_bh_schedule(s->dp_bh);
        }
    }
    if (flush) {
        qatomic_set(&s->rx_ready_due, true);
        qemu_bh_schedule(s->main_bh);
    }
}

/*
 * Frames go out with a completion callback: a netdev that cannot take a
 * frame now (a full socket) queues it and says so by returning 0, and the
 * device then stops transmitting until qrdma_tx_sent, as a NIC stops at a
 * full TX ring. Without it the frames would pile up in the net queue.
 */
static int qrdma_tx_status(ssize_t ret)
{
    return ret == 0 ? QRDMA_TX_QUEUED : QRDMA_TX_SENT;
}

static int qrdma_env_send_frame(void *opaque, const uint8_t *frame, size_t len)
{
    QrdmaState *s = opaque;

    if (s->gone) {
        return QRDMA_TX_SENT;
    }
    if (s->dp_ctx) {
        struct iovec iov = { .iov_base = (void *)frame, .iov_len = len };

        return qrdma_tx_enqueue(s, &iov, 1);
    }
    return qrdma_tx_status(qemu_send_packet_async(qemu_get_queue(s->nic), frame,
                                                  len, qrdma_tx_sent));
}

/*
 * A frame in pieces, its payload still in guest RAM. A netdev that takes
 * pieces (receive_iov: tap's writev) gets them as they are; for one that
 * does not (dgram, socket), the net layer would join them into a buffer
 * it allocates per frame, so they are joined here, on the stack, instead.
 */
static int qrdma_env_send_frame_iov(void *opaque, const struct iovec *iov,
                                    unsigned n)
{
    QrdmaState *s = opaque;
    NetClientState *nc;
    uint8_t frame[QRDMA_DP_FRAME_MAX];
    size_t len;

    if (s->gone) {
        return QRDMA_TX_SENT;
    }
    if (s->dp_ctx) {
        return qrdma_tx_enqueue(s, iov, n);
    }
    nc = qemu_get_queue(s->nic);
    if (nc->peer && nc->peer->info->receive_iov) {
        /* a queued frame is copied: the pieces may be unmapped at return */
        return qrdma_tx_status(qemu_sendv_packet_async(nc, iov, n,
                                                       qrdma_tx_sent));
    }
    len = iov_size(iov, n);
    if (len > sizeof(frame)) {
        return QRDMA_TX_SENT;   /* the core builds none this long */
    }
    iov_to_buf(iov, n, 0, frame, len);
    return qrdma_tx_status(qemu_send_packet_async(nc, frame, len,
                                                  qrdma_tx_sent));
}

/*
 * Work the core asked for runs in a bottom half, not in the MMIO handler:
 * the data path's in its thread when it has one (dp_bh), the rest in the
 * main loop (work_bh). Called with the device's lock held, as all of the
 * core's callbacks are, which also guards pending_work.
 */
static void qrdma_env_kick(void *opaque, unsigned what)
{
    QrdmaState *s = opaque;

    if (s->gone) {
        return;
    }
    s->pending_work |= what;
    if (s->held) {
        return;
    }
    if (s->dp_ctx && (what & QRDMA_WORK_DP)) {
        qemu_bh_schedule(s->dp_bh);
        what &= ~QRDMA_WORK_DP;
    }
    if (what) {
        qemu_bh_schedule(s->work_bh);
    }
}

/*
 * A non-MMIO entry into the core holds the device: an unplug from inside
 * it (an interrupt aimed at the slot's power control) must not free the
 * core under its own call. MMIO needs none: the memory map holds the
 * device while a vCPU is inside one of its regions.
 */
static void qrdma_hold(QrdmaState *s)
{
    object_ref(OBJECT(s));
}

static void qrdma_release(QrdmaState *s)
{
    object_unref(OBJECT(s));
}

/*
 * Device's lock held: run the kicked work of mask (QRDMA_WORK_*) unless
 * the VM is stopped.
 */
static void qrdma_run_pending_locked(QrdmaState *s, unsigned mask)
{
    unsigned what = s->pending_work & mask;

    if (!s->held && what) {     /* held: scheduled before the VM stopped */
        s->pending_work &= ~what;
        qrdma_core_run(&s->core, what);
    }
}

static void qrdma_run_pending(QrdmaState *s, unsigned mask)
{
    qrdma_hold(s);
    qrdma_lock(s);
    qrdma_run_pending_locked(s, mask);
    qrdma_unlock(s);
    qrdma_release(s);
}

static void qrdma_work_bh(void *opaque)
{
    QrdmaState *s = opaque;

    qrdma_run_pending(s, s->dp_ctx ? ~QRDMA_WORK_DP : ~0u);
}

static void qrdma_dp_bh(void *opaque)
{
    QrdmaState *s = opaque;

    /* one pass under the device's lock: transmit undone, receive, work */
    qrdma_hold(s);
    qrdma_lock(s);
    qrdma_tx_resume(s, qrdma_tx_owed_take(s));
    qrdma_rx_drain(s);
    qrdma_run_pending_locked(s, QRDMA_WORK_DP);
    qrdma_unlock(s);
    qrdma_release(s);
}

static void qrdma_env_rx_ready(void *opaque)
{
    QrdmaState *s = opaque;

    if (s->gone || s->held || !s->nic) {
        return;
    }
    if (s->dp_ctx) {
        /* the frames wait in rx_frames, which dp_bh hands over */
        qemu_bh_schedule(s->dp_bh);
        return;
    }
    /* the main loop's own core, the BQL held: the net layer is ours */
    qemu_flush_queued_packets(qemu_get_queue(s->nic));
}

/*
 * Main loop, without the device's lock: what the data path's thread
 * raised and only the BQL may do. Interrupts raised while the VM is
 * stopped wait for it to run again (qrdma_vm_state_change).
 */
static void qrdma_main_bh(void *opaque)
{
    QrdmaState *s = opaque;
    uint64_t raised;

    if (s->held) {
        return;
    }
    qrdma_hold(s);
    raised = qatomic_xchg(&s->irq_raised, 0);
    while (raised && !s->gone) {
        unsigned vector = ctz64(raised);

        raised &= raised - 1;
        trace_qrdma_irq(vector);
        msix_notify(PCI_DEVICE(s), vector);
    }
    if (qatomic_xchg(&s->rx_ready_due, false) && !s->gone && s->nic) {
        qemu_flush_queued_packets(qemu_get_queue(s->nic));
    }
    if (!s->gone && s->nic) {
        qrdma_tx_drain(s);
    }
    qrdma_release(s);
}

/*
 * The transport's clock is guest time: a stopped VM does not time out its
 * peers' QPs.
 */
static uint64_t qrdma_env_now_ns(void *opaque)
{
    return qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
}

static void qrdma_env_timer_mod(void *opaque, uint64_t deadline_ns)
{
    QrdmaState *s = opaque;

    if (s->gone) {
        return;
    }
    if (deadline_ns == UINT64_MAX) {
        timer_del(s->dp_timer);
    } else {
        timer_mod(s->dp_timer,
                  deadline_ns > INT64_MAX ? INT64_MAX : (int64_t)deadline_ns);
    }
}

static void qrdma_dp_timer(void *opaque)
{
    QrdmaState *s = opaque;

    qrdma_hold(s);
    qrdma_lock(s);
    if (s->held) {
        s->dp_timer_due = true;
    } else {
        qrdma_core_timer(&s->core);
    }
    qrdma_unlock(s);
    qrdma_release(s);
}

static void qrdma_pe_ready_timer(void *opaque)
{
    QrdmaState *s = opaque;

    qrdma_hold(s);
    qrdma_lock(s);
    if (s->held) {
        s->pe_ready_due = true;
    } else {
        trace_qrdma_pe_ready();
        qrdma_core_pe_ready(&s->core);
    }
    qrdma_unlock(s);
    qrdma_release(s);
}

/* ---- BARs ---------------------------------------------------------------- */

static uint64_t qrdma_regs_read(void *opaque, hwaddr addr, unsigned size)
{
    QrdmaState *s = opaque;
    uint32_t value;

    qrdma_lock(s);
    value = qrdma_core_reg_read(&s->core, addr, size);
    qrdma_unlock(s);
    trace_qrdma_reg_read(addr, size, value);
    return value;
}

static void qrdma_regs_write(void *opaque, hwaddr addr, uint64_t value,
                             unsigned size)
{
    QrdmaState *s = opaque;

    trace_qrdma_reg_write(addr, size, (uint32_t)value);
    qrdma_lock(s);
    qrdma_core_reg_write(&s->core, addr, size, value);
    qrdma_unlock(s);
}

/*
 * Every size from 1 to 8 reaches the core, which alone decides what is
 * valid, so a wrong-size access is logged by the same code in tests.
 */
static const MemoryRegionOps qrdma_regs_ops = {
    .read = qrdma_regs_read,
    .write = qrdma_regs_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 1, .max_access_size = 8 },
    .impl = { .min_access_size = 1, .max_access_size = 8 },
};

static uint64_t qrdma_db_read(void *opaque, hwaddr addr, unsigned size)
{
    QrdmaState *s = opaque;
    uint64_t value;

    qrdma_lock(s);
    value = qrdma_core_db_read(&s->core, addr, size);
    qrdma_unlock(s);
    return value;
}

static void qrdma_db_write(void *opaque, hwaddr addr, uint64_t value,
                           unsigned size)
{
    QrdmaState *s = opaque;

    trace_qrdma_db_write(addr / QRDMA_DB_PAGE_SIZE, addr % QRDMA_DB_PAGE_SIZE,
                         size, (uint32_t)value);
    qrdma_lock(s);
    qrdma_core_db_write(&s->core, addr, size, value);
    qrdma_unlock(s);
}

static const MemoryRegionOps qrdma_db_ops = {
    .read = qrdma_db_read,
    .write = qrdma_db_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 1, .max_access_size = 8 },
    .impl = { .min_access_size = 1, .max_access_size = 8 },
};

/* ---- SQ doorbells as eventfds (iothread=, ioeventfd=) -------------------- */

/*
 * The eventfd is read (cleared) under the device's lock, so a reset or a
 * save that drained it first (qrdma_sq_notifiers_drain) leaves this
 * handler nothing to take.
 */
static void qrdma_sq_notified(EventNotifier *e)
{
    struct qrdma_sq_notifier *n = container_of(e, struct qrdma_sq_notifier, e);
    QrdmaState *s = n->s;

    qrdma_hold(s);
    qrdma_lock(s);
    if (event_notifier_test_and_clear(e) && !s->gone) {
        trace_qrdma_sq_notify(n->page);
        /* while the VM is stopped this only queues the kicks */
        qrdma_core_db_notify(&s->core, n->page);
    }
    qrdma_unlock(s);
    qrdma_release(s);
}

/*
 * Device's lock held: take what the eventfds hold. A reset drops it (the
 * doorbells were rung for the device before it); a save hands it to the
 * core (deliver), whose kicked QPs travel in the stream.
 */
static void qrdma_sq_notifiers_drain(QrdmaState *s, bool deliver)
{
    for (uint32_t p = 0; p < s->nsq_notifiers; p++) {
        EventNotifier *e = &s->sq_notifiers[p].e;

        if (event_notifier_test_and_clear(e) && deliver) {
            qrdma_core_db_notify(&s->core, p);
        }
    }
}

/*
 * Realize, after the doorbell region and dp_ctx: the first pages' SQ
 * doorbell offsets become eventfds, their handlers in the IOThread.
 * false with errp set if an eventfd cannot be made (nothing is left).
 */
static bool qrdma_sq_notifiers_start(QrdmaState *s, Error **errp)
{
    uint32_t n = MIN(s->cfg.db_pages, QRDMA_SQ_NOTIFY_PAGES), p;
    int ret;

    s->sq_notifiers = g_new0(struct qrdma_sq_notifier, n);
    for (p = 0; p < n; p++) {
        ret = event_notifier_init(&s->sq_notifiers[p].e, 0);
        if (ret < 0) {
            error_setg_errno(errp, -ret,
                             "qrdma: cannot make the eventfd of doorbell "
                             "page %u (ioeventfd=off goes without)", p);
            while (p--) {
                event_notifier_cleanup(&s->sq_notifiers[p].e);
            }
            g_free(s->sq_notifiers);
            s->sq_notifiers = NULL;
            return false;
        }
        s->sq_notifiers[p].s = s;
        s->sq_notifiers[p].page = p;
    }
    s->nsq_notifiers = n;
    memory_region_transaction_begin();
    for (p = 0; p < n; p++) {
        /* any 32-bit value: the QP ID is not matched (no datamatch) */
        memory_region_add_eventfd(&s->doorbells,
                                  (hwaddr)p * QRDMA_DB_PAGE_SIZE + QRDMA_DB_SQ,
                                  4, false, 0, &s->sq_notifiers[p].e);
    }
    memory_region_transaction_commit();
    for (p = 0; p < n; p++) {
        aio_set_event_notifier(s->dp_ctx, &s->sq_notifiers[p].e,
                               qrdma_sq_notified, NULL, NULL);
    }
    return true;
}

/* In the IOThread (qrdma_dp_stop_bh): no handler runs after this. */
static void qrdma_sq_notifiers_unwatch(QrdmaState *s)
{
    for (uint32_t p = 0; p < s->nsq_notifiers; p++) {
        aio_set_event_notifier(s->dp_ctx, &s->sq_notifiers[p].e, NULL, NULL,
                               NULL);
    }
}

/* Unrealize, once the handlers are off: the eventfds go. */
static void qrdma_sq_notifiers_stop(QrdmaState *s)
{
    uint32_t p;

    memory_region_transaction_begin();
    for (p = 0; p < s->nsq_notifiers; p++) {
        memory_region_del_eventfd(&s->doorbells,
                                  (hwaddr)p * QRDMA_DB_PAGE_SIZE + QRDMA_DB_SQ,
                                  4, false, 0, &s->sq_notifiers[p].e);
    }
    memory_region_transaction_commit();
    for (p = 0; p < s->nsq_notifiers; p++) {
        event_notifier_cleanup(&s->sq_notifiers[p].e);
    }
    g_free(s->sq_notifiers);
    s->sq_notifiers = NULL;
    s->nsq_notifiers = 0;
}

/* ---- netdev -------------------------------------------------------------- */

static bool qrdma_net_can_receive(NetClientState *nc)
{
    QrdmaState *s = qemu_get_nic_opaque(nc);
    bool can;

    if (s->dp_ctx) {
        QEMU_LOCK_GUARD(&s->frames_lock);
        can = !s->held && s->rx_frames.count < QRDMA_RX_FRAMES_MAX;
        s->rx_refused |= !can;
        return can;
    }
    qrdma_lock(s);
    can = !s->held && qrdma_core_lan_can_receive(&s->core);
    qrdma_unlock(s);
    return can;
}

/*
 * With iothread=: the frame is queued for the data path's thread (dp_bh),
 * or, when the queue is full, left to QEMU's net layer (0), which holds it
 * and what follows until main_bh flushes them.
 */
static ssize_t qrdma_rx_enqueue(QrdmaState *s, const uint8_t *buf, size_t size)
{
    struct iovec iov = { .iov_base = (void *)buf, .iov_len = size };
    struct qrdma_frame *f;

    if (s->gone) {
        return size;    /* unplugged: dp_bh may be gone too */
    }
    WITH_QEMU_LOCK_GUARD(&s->frames_lock) {
        if (s->held || s->rx_frames.count >= QRDMA_RX_FRAMES_MAX) {
            s->rx_refused = true;
            return 0;
        }
    }
    f = qrdma_frame_new(&iov, 1, size);
    WITH_QEMU_LOCK_GUARD(&s->frames_lock) {
        qrdma_frames_push(&s->rx_frames, f);
    }
    qemu_bh_schedule(s->dp_bh);
    /* an empty frame is counted by the core; QEMU must not hold it (below) */
    return size ? size : -1;
}

/*
 * The core takes every frame (it holds LAN frames that find no buffer in
 * its own backlog, so RoCE frames never wait behind them in QEMU's queue).
 */
static ssize_t qrdma_net_receive(NetClientState *nc, const uint8_t *buf,
                                 size_t size)
{
    QrdmaState *s = qemu_get_nic_opaque(nc);
    size_t taken;

    if (s->dp_ctx) {
        return qrdma_rx_enqueue(s, buf, size);
    }
    qrdma_hold(s);
    qrdma_lock(s);
    taken = qrdma_core_lan_receive(&s->core, buf, size);
    qrdma_unlock(s);
    qrdma_release(s);

    /*
     * An empty frame was consumed (counted as an error), but returning 0
     * would tell QEMU to hold it and stop delivering: drop it instead.
     */
    if (!size) {
        return -1;
    }
    return taken;
}

/*
 * QEMU's announcement after an incoming migration (and the announce-self
 * QMP command), once per round, after the RARP it sends for our MAC: the
 * driver is asked to announce the addresses (AE ANNOUNCE). The first round
 * comes before the VM runs; the kick then waits for it (qrdma_env_kick).
 */
static void qrdma_net_announce(NetClientState *nc)
{
    QrdmaState *s = qemu_get_nic_opaque(nc);

    qrdma_lock(s);
    qrdma_core_announce(&s->core);
    qrdma_unlock(s);
}

static NetClientInfo qrdma_net_info = {
    .type = NET_CLIENT_DRIVER_NIC,
    .size = sizeof(NICState),
    .can_receive = qrdma_net_can_receive,
    .receive = qrdma_net_receive,
    .announce = qrdma_net_announce,
};

/* ---- config space -------------------------------------------------------- */

/*
 * An FLR written into the PCIe Device Control register resets the function
 * (pci_device_reset -> qrdma_reset_hold), whoever writes it: the driver's
 * reset path, setpci, or a DMA aimed at our config space.
 */
static void qrdma_write_config(PCIDevice *pdev, uint32_t addr, uint32_t val,
                               int len)
{
    pci_default_write_config(pdev, addr, val, len);
    pcie_cap_flr_write_config(pdev, addr, val, len);
}

/* ---- backend=verbs ------------------------------------------------------- */

#ifdef QRDMA_HAVE_VERBS
struct qrdma_ram_walk {
    struct qrdma_be_verbs_config *cfg;
    char why[256];
};

/*
 * One range of the system memory map: guest RAM becomes a range of the
 * backend's config (guest-physical address, host address, fd and file
 * offset). RAM the host cannot map again from an fd, shared, cannot be
 * registered with the NIC page by page: refused with what to use instead.
 */
static bool qrdma_ram_range(Int128 start, Int128 len, const MemoryRegion *cmr,
                            hwaddr offset_in_region, void *opaque)
{
    struct qrdma_ram_walk *w = opaque;
    MemoryRegion *mr = (MemoryRegion *)cmr;
    struct qrdma_be_verbs_ram *r;
    RAMBlock *rb = mr->ram_block;
    uint8_t *hva;

    if (!memory_region_is_ram(mr) || memory_region_is_ram_device(mr) ||
        memory_region_is_rom(mr) || mr->readonly || !rb) {
        return false;
    }
    if (!qemu_ram_is_shared(rb) || memory_region_get_fd(mr) < 0) {
        snprintf(w->why, sizeof(w->why),
                 "guest RAM '%s' is not shared memory the host can register; use "
                 "-object memory-backend-memfd,id=m,size=...,share=on -machine "
                 "memory-backend=m (or a hugetlbfs memory-backend-file with share=on)",
                 memory_region_name(mr));
        return true;
    }
    if (w->cfg->nram == QRDMA_BE_VERBS_MAX_RAM) {
        snprintf(w->why, sizeof(w->why), "guest RAM is in more than %d ranges",
                 QRDMA_BE_VERBS_MAX_RAM);
        return true;
    }
    hva = (uint8_t *)memory_region_get_ram_ptr(mr) + offset_in_region;
    r = &w->cfg->ram[w->cfg->nram++];
    r->gpa = int128_get64(start);
    r->size = int128_get64(len);
    r->hva = hva;
    r->fd = memory_region_get_fd(mr);
    r->fd_offset = rb->fd_offset + (hva - rb->host);
    return false;
}

/*
 * ibgid-indexes=3:5: host GID table indexes separated by ':' (',' is the
 * option separator of -device), each 0..255, at most
 * QRDMA_BE_PORT_MAX_GIDS of them.
 */
static bool qrdma_gid_indexes(const char *list,
                              struct qrdma_be_verbs_config *cfg, Error **errp)
{
    const char *p = list;

    cfg->ngids = 0;
    for (;;) {
        const char *end;
        unsigned long v;

        if (qemu_strtoul(p, &end, 10, &v) || v > 255 ||
            (*end && *end != ':')) {
            error_setg(errp,
                       "qrdma: ibgid-indexes='%s': not a list of host GID "
                       "indexes 0..255 separated by ':' (e.g. 3:5)", list);
            return false;
        }
        if (cfg->ngids == QRDMA_BE_PORT_MAX_GIDS) {
            error_setg(errp, "qrdma: ibgid-indexes='%s': more than %d indexes",
                       list, QRDMA_BE_PORT_MAX_GIDS);
            return false;
        }
        cfg->gid_indexes[cfg->ngids++] = (uint8_t)v;
        if (!*end) {
            return true;
        }
        p = end + 1;
    }
}

/*
 * cm= and cm-listen=7174:4420 (ports 1..65535 separated by ':', at most
 * QRDMA_BE_VERBS_MAX_LISTEN): the backend's CM proxy settings.
 */
static bool qrdma_cm_config(QrdmaState *s, struct qrdma_be_verbs_config *cfg,
                            Error **errp)
{
    const char *p = s->cm_listen;

    s->cm_off_why[0] = 0;
    if (!s->cm) {
        cfg->cm_proxy = true;
        cfg->cm_optional = true;
        cfg->cm_off_why = s->cm_off_why;
        cfg->cm_off_why_len = sizeof(s->cm_off_why);
    } else if (!strcmp(s->cm, "off")) {
        cfg->cm_proxy = false;
    } else if (!strcmp(s->cm, "proxy")) {
        cfg->cm_proxy = true;
    } else {
        error_setg(errp, "qrdma: cm='%s': not proxy or off", s->cm);
        return false;
    }
    cfg->ncm_listen = 0;
    if (!p || !*p) {
        return true;
    }
    if (!cfg->cm_proxy) {
        error_setg(errp, "qrdma: cm-listen= needs cm=proxy");
        return false;
    }
    for (;;) {
        const char *end;
        unsigned long v;

        if (qemu_strtoul(p, &end, 10, &v) || !v || v > 65535 ||
            (*end && *end != ':')) {
            error_setg(errp,
                       "qrdma: cm-listen='%s': not a list of ports 1..65535 "
                       "separated by ':' (e.g. 7174:4420)", s->cm_listen);
            return false;
        }
        if (cfg->ncm_listen == QRDMA_BE_VERBS_MAX_LISTEN) {
            error_setg(errp, "qrdma: cm-listen='%s': more than %d ports",
                       s->cm_listen, QRDMA_BE_VERBS_MAX_LISTEN);
            return false;
        }
        cfg->cm_listen[cfg->ncm_listen++] = (uint16_t)v;
        if (!*end) {
            return true;
        }
        p = end + 1;
    }
}

static void qrdma_verbs_fd_ready(void *opaque);

/*
 * The backend's fd is watched where the data path runs: the IOThread's
 * context, or the main loop's fd handlers (which, unlike its AioContext,
 * do not run inside a nested event loop such as a drain). Called in that
 * thread, or before the fd's first handler.
 */
static void qrdma_wait_fd_watch(QrdmaState *s, bool on)
{
    IOHandler *read = on ? qrdma_verbs_fd_ready : NULL;

    if (s->dp_ctx) {
        aio_set_fd_handler(s->dp_ctx, s->wait_fd, read, NULL, NULL, NULL, s);
    } else {
        qemu_set_fd_handler(s->wait_fd, read, NULL, s);
    }
}

/*
 * The host has completions or events. With a data path's thread this is
 * it, and the data path runs here; in the main loop it runs from work_bh.
 * While the VM is stopped the device takes nothing from the host: the
 * handler goes off (the fd would stay readable and spin the loop) until
 * the VM runs again (qrdma_dp_bh, qrdma_vm_state_change).
 */
static void qrdma_verbs_fd_ready(void *opaque)
{
    QrdmaState *s = opaque;

    qrdma_hold(s);
    qrdma_lock(s);
    if (s->held) {
        s->pending_work |= QRDMA_WORK_DP;
        s->wait_fd_parked = true;
        qrdma_wait_fd_watch(s, false);
    } else if (s->dp_ctx) {
        qrdma_core_run(&s->core, QRDMA_WORK_DP);
    } else {
        qrdma_env_kick(s, QRDMA_WORK_DP);
    }
    qrdma_unlock(s);
    qrdma_release(s);
}

/* Undo qrdma_verbs_prepare (and the fd handler), in reverse. */
static void qrdma_verbs_release(QrdmaState *s)
{
    if (s->wait_fd >= 0) {
        qrdma_wait_fd_watch(s, false);
        s->wait_fd = -1;
    }
    migrate_del_blocker(&s->migration_blocker);
    if (s->discard_disabled) {
        ram_block_discard_disable(false);
        s->discard_disabled = false;
    }
}
#endif

/*
 * backend=verbs before the core is made: the host device's name, guest
 * RAM as the backend will register it (shared memory only), RAM discard
 * off while the NIC may hold guest pages (as vfio does), and migration
 * blocked. Nothing to do for sw. In a build without libibverbs the core
 * refuses verbs itself and says why.
 */
static bool qrdma_verbs_prepare(QrdmaState *s, Error **errp)
{
#ifdef QRDMA_HAVE_VERBS
    struct qrdma_ram_walk w = { .cfg = &s->vcfg };

    s->wait_fd = -1;
    if (s->cfg.backend != QRDMA_BACKEND_VERBS) {
        return true;
    }
    if (!s->ibdev || !s->ibdev[0]) {
        error_setg(
            errp,
            "qrdma: backend=verbs needs ibdev=<host RDMA device> (e.g. rxe0)");
        return false;
    }
    memset(&s->vcfg, 0, sizeof(s->vcfg));
    s->vcfg.ibdev = s->ibdev;
    s->vcfg.ibport = s->ibport;
    s->vcfg.gid_index = s->ibgid_index;
    if (s->ibgid_indexes) {
        if (s->ibgid_index) {
            error_setg(errp,
                       "qrdma: give ibgid-index or ibgid-indexes, not both");
            return false;
        }
        if (!qrdma_gid_indexes(s->ibgid_indexes, &s->vcfg, errp)) {
            return false;
        }
    }
    if (!qrdma_cm_config(s, &s->vcfg, errp)) {
        return false;
    }
    WITH_RCU_READ_LOCK_GUARD() {
        flatview_for_each_range(address_space_to_flatview(
                                    &address_space_memory),
                                qrdma_ram_range, &w);
    }
    if (w.why[0]) {
        error_setg(errp, "qrdma: backend=verbs: %s", w.why);
        return false;
    }
    if (!s->vcfg.nram) {
        error_setg(errp,
                   "qrdma: backend=verbs: no guest RAM in the memory map");
        return false;
    }
    if (ram_block_discard_disable(true)) {
        error_setg(
            errp,
            "qrdma: backend=verbs pins guest RAM for the host NIC, which RAM "
            "discard in use (virtio-balloon, virtio-mem) does not allow");
        return false;
    }
    s->discard_disabled = true;
    error_setg(&s->migration_blocker,
               "qrdma: backend=verbs: the host NIC's QP numbers and memory keys cannot "
               "move to another host");
    if (migrate_add_blocker(&s->migration_blocker, errp) < 0) {
        qrdma_verbs_release(s);
        return false;
    }
    s->cfg.backend_config = &s->vcfg;
#endif
    return true;
}

/* After the core is made: its backend's fd, watched (verbs). */
static void qrdma_verbs_start(QrdmaState *s)
{
#ifdef QRDMA_HAVE_VERBS
    s->wait_fd = qrdma_core_backend_wait_fd(&s->core);
    if (s->wait_fd >= 0) {
        qrdma_wait_fd_watch(s, true);
    }
#endif
}

static void qrdma_verbs_stop(QrdmaState *s)
{
#ifdef QRDMA_HAVE_VERBS
    qrdma_verbs_release(s);
#endif
}

/*
 * The data path's thread stops: its fd handler, timer and bottom half go,
 * there, after any of them that is running has returned.
 */
static void qrdma_dp_stop_bh(void *opaque)
{
    QrdmaState *s = opaque;

#ifdef QRDMA_HAVE_VERBS
    if (s->wait_fd >= 0) {
        qrdma_wait_fd_watch(s, false);
        s->wait_fd = -1;
    }
#endif
    qrdma_sq_notifiers_unwatch(s);
    timer_free(s->dp_timer);
    s->dp_timer = NULL;
    qemu_bh_delete(s->dp_bh);
    s->dp_bh = NULL;
}

/* ---- VM run state -------------------------------------------------------- */

/*
 * The device works only while the VM runs, as the rest of the machine
 * does: no CQP command, completion, interrupt, frame sent or taken, and
 * no timer's work while it is stopped. A destination matters most: its
 * post_load restarts the device's work (qrdma_core_load kicks the CQP,
 * the LAN and the data path), which now waits until the guest starts;
 * and if the guest never starts there (a failed switchover), the device
 * did nothing to its memory or the segment. The clocks the core reads
 * (QEMU_CLOCK_VIRTUAL) stop with the VM too, so no time passes for it.
 * Timers that fired while held run now, from their own callbacks.
 */
static void qrdma_vm_state_change(void *opaque, bool running, RunState state)
{
    QrdmaState *s = opaque;
    unsigned work;

    if (s->gone) {
        return;
    }
    trace_qrdma_vm_state(running, RunState_str(state));
    qrdma_lock(s);
    s->held = !running;
    if (!running) {
        /* from here the data path's thread does nothing either */
        qrdma_unlock(s);
        return;
    }
    if (s->pe_ready_due) {
        s->pe_ready_due = false;
        timer_mod(s->pe_ready_timer, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL));
    }
    if (s->dp_timer_due) {
        s->dp_timer_due = false;
        timer_mod(s->dp_timer, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL));
    }
#ifdef QRDMA_HAVE_VERBS
    if (s->wait_fd_parked) {
        /* the handler is off, so none runs in its thread meanwhile */
        s->wait_fd_parked = false;
        qrdma_wait_fd_watch(s, true);
    }
#endif
    work = s->pending_work;
    s->pending_work = 0;
    if (work) {
        qrdma_env_kick(s, work);
    }
    qrdma_unlock(s);
    if (s->dp_ctx) {
        /*
         * What the data path's thread raised while the VM was stopped, and
         * the frames that waited in both queues.
         */
        qemu_bh_schedule(s->main_bh);
        qemu_bh_schedule(s->dp_bh);
    }
    if (s->nic) {
        qemu_flush_queued_packets(qemu_get_queue(s->nic));
    }
}

/* ---- lifecycle ----------------------------------------------------------- */

/*
 * Live migration (docs/migration.md, tests/vm/test-migrate.sh) is allowed
 * unless the backend cannot save its state: then a blocker names it (verbs
 * adds its own blocker naming the host NIC). A blocker that cannot be
 * added (a migration is running) is only reported: pre_save refuses too.
 */
static void qrdma_mig_block(QrdmaState *s)
{
    char err[160];

    if (s->cfg.backend == QRDMA_BACKEND_VERBS) {
        return;
    }
    if (qrdma_core_can_save(&s->core, err, sizeof(err))) {
        return;
    }
    error_setg(&s->mig_blocker, "qrdma: %s", err);
    if (migrate_add_blocker(&s->mig_blocker, NULL) < 0) {
        warn_report(
            "qrdma: migration is running: the device will refuse in pre_save");
    }
}

static void qrdma_realize(PCIDevice *pdev, Error **errp)
{
    QrdmaState *s = QRDMA(pdev);
    DeviceState *dev = DEVICE(pdev);
    struct qrdma_core_env env = {
        .opaque = s,
        .guest_error = qrdma_env_guest_error,
        .schedule_pe_ready = qrdma_env_schedule_pe_ready,
        .link_up = qrdma_env_link_up,
        .dma_read = qrdma_env_dma_read,
        .dma_write = qrdma_env_dma_write,
        .msix_notify = qrdma_env_msix_notify,
        .send_frame = qrdma_env_send_frame,
        .dma_map_read = qrdma_env_dma_map_read,
        .dma_unmap_read = qrdma_env_dma_unmap_read,
        .send_frame_iov = qrdma_env_send_frame_iov,
        .kick = qrdma_env_kick,
        .rx_ready = qrdma_env_rx_ready,
        .now_ns = qrdma_env_now_ns,
        .timer_mod = qrdma_env_timer_mod,
        .trace = qrdma_env_trace,
    };
    char err[160];
    int ret;

    qemu_macaddr_default_if_unset(&s->conf.macaddr);
    memcpy(s->cfg.mac, s->conf.macaddr.a, sizeof(s->cfg.mac));
    if (s->board_id) {
        if (strlen(s->board_id) >= QRDMA_BOARD_ID_LEN) {
            error_setg(errp,
                       "qrdma: board-id '%s' is longer than %u characters",
                       s->board_id, QRDMA_BOARD_ID_LEN - 1);
            return;
        }
        pstrcpy(s->cfg.board_id, sizeof(s->cfg.board_id), s->board_id);
    }
    /*
     * The core knows the backends and refuses one this build lacks, saying why.
     */
    ret = qrdma_core_backend_from_name(s->backend ? s->backend : "sw");
    if (ret < 0) {
        error_setg(errp, "qrdma: backend=%s: not a backend (sw or verbs)",
                   s->backend);
        return;
    }
    s->cfg.backend = ret;
    if (s->iothread) {
        s->dp_ctx = iothread_get_aio_context(s->iothread);
    } else if (s->ioeventfd == ON_OFF_AUTO_ON) {
        error_setg(errp, "qrdma: ioeventfd=on needs iothread=: the SQ "
                   "doorbells' eventfds are handled in the data path's "
                   "IOThread");
        return;
    }
    if (!qrdma_verbs_prepare(s, errp)) {
        return;
    }
    ret = qrdma_core_init(&s->core, &s->cfg, &env, err, sizeof(err));
    if (ret) {
        error_setg(errp, "qrdma: %s", err);
        qrdma_verbs_stop(s);
        return;
    }
    if (s->cm_off_why[0]) {
        warn_report("qrdma: the guest has no rdma_cm on this device: %s "
                    "(cm=off to go without it, cm=proxy to require it)",
                    s->cm_off_why);
    }

    pdev->config[PCI_INTERRUPT_PIN] = 1;
    if (pcie_endpoint_cap_init(pdev, 0x80) < 0) {
        error_setg(errp, "qrdma: cannot add the PCIe capability");
        qrdma_core_fini(&s->core);
        qrdma_verbs_stop(s);
        return;
    }
    pcie_cap_flr_init(pdev);

    memory_region_init_io(&s->regs, OBJECT(s), &qrdma_regs_ops, s, "qrdma-regs",
                          QRDMA_BAR_REGS_SIZE);
    pci_register_bar(pdev, QRDMA_BAR_REGS, PCI_BASE_ADDRESS_SPACE_MEMORY,
                     &s->regs);

    memory_region_init_io(&s->doorbells, OBJECT(s), &qrdma_db_ops, s,
                          "qrdma-doorbells",
                          (uint64_t)s->cfg.db_pages * QRDMA_DB_PAGE_SIZE);
    pci_register_bar(pdev, QRDMA_BAR_DOORBELL,
                     PCI_BASE_ADDRESS_SPACE_MEMORY |
                         PCI_BASE_ADDRESS_MEM_TYPE_64,
                     &s->doorbells);

    ret = msix_init_exclusive_bar(pdev, s->cfg.msix_vectors, QRDMA_BAR_MSIX,
                                  errp);
    if (ret) {
        qrdma_core_fini(&s->core);
        qrdma_verbs_stop(s);
        return;
    }
    for (unsigned v = 0; v < s->cfg.msix_vectors; v++) {
        msix_vector_use(pdev, v);
    }
    if (s->dp_ctx && s->ioeventfd != ON_OFF_AUTO_OFF &&
        !qrdma_sq_notifiers_start(s, errp)) {
        msix_uninit_exclusive_bar(pdev);
        qrdma_core_fini(&s->core);
        qrdma_verbs_stop(s);
        return;
    }

    s->pe_ready_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, qrdma_pe_ready_timer,
                                     s);
    s->work_bh = qemu_bh_new_guarded(qrdma_work_bh, s,
                                     &dev->mem_reentrancy_guard);
    s->main_bh = qemu_bh_new_guarded(qrdma_main_bh, s,
                                     &dev->mem_reentrancy_guard);
    if (s->dp_ctx) {
        /*
         * Unguarded: the device's re-entrancy guard is a flag for the
         * BQL's holders, which the thread is not; no access of the thread
         * reaches MMIO (qrdma_dma_ram) or sends an interrupt.
         */
        s->dp_timer = aio_timer_new(s->dp_ctx, QEMU_CLOCK_VIRTUAL, SCALE_NS,
                                    qrdma_dp_timer, s);
        s->dp_bh = aio_bh_new(s->dp_ctx, qrdma_dp_bh, s);
    } else {
        s->dp_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, qrdma_dp_timer, s);
    }
    s->nic = qemu_new_nic(&qrdma_net_info, &s->conf,
                          object_get_typename(OBJECT(s)), dev->id,
                          &dev->mem_reentrancy_guard, s);
    qemu_format_nic_info_str(qemu_get_queue(s->nic), s->conf.macaddr.a);
    s->held = !runstate_is_running();
    s->vm_state = qemu_add_vm_change_state_handler(qrdma_vm_state_change, s);
    qrdma_verbs_start(s);
    qrdma_mig_block(s);
}

static void qrdma_exit(PCIDevice *pdev)
{
    QrdmaState *s = QRDMA(pdev);

    /*
     * From here the core's callbacks do nothing. If the core is inside one
     * of its calls (this unplug came from one of its callbacks), its
     * teardown waits for that call to return; the reference the caller
     * holds keeps this memory until then.
     */
    qrdma_lock(s);
    s->gone = true;
    qrdma_unlock(s);
    /*
     * The data path's thread lets go first (the fd's handler goes before
     * the backend that owns the fd). No interrupt or reset of the device's
     * own can be running on this thread under the device's lock, which the
     * thread may be waiting for: in this mode they are all sent from
     * main_bh, outside it.
     */
    if (s->dp_ctx) {
        aio_wait_bh_oneshot(s->dp_ctx, qrdma_dp_stop_bh, s);
    }
    qrdma_sq_notifiers_stop(s);
    qemu_del_vm_change_state_handler(s->vm_state);
    s->vm_state = NULL;
    /* no frame of ours may call qrdma_tx_sent once the NIC is gone */
    qemu_purge_queued_packets(qemu_get_queue(s->nic));
    qemu_del_nic(s->nic);
    s->nic = NULL;
    qemu_bh_delete(s->work_bh);
    qemu_bh_delete(s->main_bh);
    qrdma_frames_reset(s);
    timer_free(s->pe_ready_timer);
    timer_free(s->dp_timer);
    msix_uninit_exclusive_bar(pdev);
#ifdef QRDMA_HAVE_VERBS
    if (s->wait_fd >= 0) {
        qrdma_wait_fd_watch(s, false);
        s->wait_fd = -1;
    }
#endif
    qrdma_lock(s);
    qrdma_core_fini(&s->core);
    qrdma_unlock(s);
    qrdma_verbs_stop(s);
    migrate_del_blocker(&s->mig_blocker);
    g_free(s->mig_buf);
    s->mig_buf = NULL;
}

static void qrdma_reset_hold(Object *obj, ResetType type)
{
    QrdmaState *s = QRDMA(obj);

    trace_qrdma_reset("device");
    qrdma_lock(s);
    timer_del(s->pe_ready_timer);
    timer_del(s->dp_timer);
    /* what the data path's thread raised before the reset is not sent */
    qatomic_set(&s->irq_raised, 0);
    /*
     * A reset device's frames do not go out: those between the data
     * path's thread and the netdev (iothread=) are dropped first, and the
     * core told they have gone; then a frame the netdev still queues for
     * us, whose callback (qrdma_tx_sent) lets the device transmit again
     * (and with iothread= finds nothing left to send).
     */
    qrdma_frames_restart(s);
    if (s->nic) {
        qemu_purge_queued_packets(qemu_get_queue(s->nic));
    }
    s->pending_work = 0;
    s->dp_timer_due = s->pe_ready_due = false;
    qrdma_sq_notifiers_drain(s, false);
    qrdma_core_reset(&s->core);
    qrdma_unlock(s);
    if (s->dp_ctx && s->nic) {
        /* frames the full queue refused before the reset come in again */
        qatomic_set(&s->rx_ready_due, true);
        qemu_bh_schedule(s->main_bh);
    }
}

/* ---- live migration (docs/migration.md) ---------------------------------- */

/*
 * The core's stream (qrdma_core_save) is the device's state; PCI config
 * space and MSI-X go beside it. pre_save fills the buffer with the VM
 * stopped and fails the migration with the core's message (a backend
 * without save/load: "migration is blocked"); post_load loads it into
 * the core, which it resets first, and fails the incoming migration
 * naming the section and field of a stream it refuses.
 */
static int qrdma_pre_save(void *opaque)
{
    QrdmaState *s = opaque;
    uint8_t *buf;
    size_t len;
    char err[256];
    int ret;

    g_free(s->mig_buf);
    s->mig_buf = NULL;
    s->mig_len = 0;
    qrdma_lock(s);
    /* doorbells rung before the VM stopped: their kicks are saved */
    qrdma_sq_notifiers_drain(s, true);
    ret = qrdma_core_save(&s->core, &buf, &len, err, sizeof(err));
    qrdma_unlock(s);
    if (ret) {
        error_report("qrdma: cannot save the device: %s", err);
        return -EINVAL;
    }
    if (len > UINT32_MAX) {
        free(buf);
        error_report("qrdma: device state of %zu bytes is too large", len);
        return -E2BIG;
    }
    s->mig_buf = g_memdup2(buf, len);
    s->mig_len = len;
    free(buf);
    return 0;
}

static int qrdma_post_save(void *opaque)
{
    QrdmaState *s = opaque;

    g_free(s->mig_buf);
    s->mig_buf = NULL;
    s->mig_len = 0;
    return 0;
}

static int qrdma_post_load(void *opaque, int version_id)
{
    QrdmaState *s = opaque;
    char err[256];
    int ret;

    qrdma_lock(s);
    timer_del(s->pe_ready_timer);
    timer_del(s->dp_timer);
    s->pending_work = 0;
    s->dp_timer_due = s->pe_ready_due = false;
    qrdma_frames_restart(s);
    ret = qrdma_core_load(&s->core, s->mig_buf, s->mig_len, err, sizeof(err));
    qrdma_unlock(s);
    g_free(s->mig_buf);
    s->mig_buf = NULL;
    s->mig_len = 0;
    if (ret) {
        error_report("qrdma: cannot load the device: %s", err);
        return ret;
    }
    return 0;
}

static const VMStateDescription qrdma_vmstate = {
    .name = "qrdma",
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_save = qrdma_pre_save,
    .post_save = qrdma_post_save,
    .post_load = qrdma_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_PCI_DEVICE(parent_obj, QrdmaState),
        VMSTATE_MSIX(parent_obj, QrdmaState),
        VMSTATE_UINT32(mig_len, QrdmaState),
        VMSTATE_VBUFFER_ALLOC_UINT32(mig_buf, QrdmaState, 0, NULL, mig_len),
        VMSTATE_END_OF_LIST()
    },
};

static const Property qrdma_properties[] = {
    DEFINE_NIC_PROPERTIES(QrdmaState, conf),
    DEFINE_PROP_STRING("board-id", QrdmaState, board_id),
    /*
     * What carries the RDMA traffic (docs/backends.md): sw, the software
     * RoCEv2 transport on the netdev (default); verbs, a host RDMA NIC
     * (in a QEMU built with libibverbs; guest RAM must be shared memory;
     * migration is blocked; untested on a real device yet).
     */
    DEFINE_PROP_STRING("backend", QrdmaState, backend),
    /*
     * backend=verbs: host device, port, and the host GIDs the guest may use
     * (their host GID table indexes: one, or a list "3:5"); they are the
     * guest's port GIDs.
     */
    DEFINE_PROP_STRING("ibdev", QrdmaState, ibdev),
    DEFINE_PROP_UINT8("ibport", QrdmaState, ibport, 1),
    DEFINE_PROP_UINT8("ibgid-index", QrdmaState, ibgid_index, 0),
    DEFINE_PROP_STRING("ibgid-indexes", QrdmaState, ibgid_indexes),
    /*
     * backend=verbs: rdma_cm for the guest. proxy: the device has a GSI QP
     * whose CM MADs it carries through the host's rdma_cm (a QEMU built
     * with librdmacm; tested on a model of rdma_cm only so far); off (the
     * default): no GSI QP, the guest's rdma_cm fails at once. cm-listen:
     * the ports (':'-separated) peers may connect to the guest on.
     */
    DEFINE_PROP_STRING("cm", QrdmaState, cm),
    DEFINE_PROP_STRING("cm-listen", QrdmaState, cm_listen),
    /*
     * The IOThread (-object iothread,id=...) the data path runs in, off
     * the vCPUs and the main loop: the guest's work queues and CQs, and
     * with sw the transport's frames and timer, with verbs the host
     * completions and the CM proxy. Unset: the main loop.
     */
    DEFINE_PROP_LINK("iothread", QrdmaState, iothread, TYPE_IOTHREAD,
                     IOThread *),
    /*
     * With iothread=: the SQ doorbells of the first 64 doorbell pages as
     * eventfds handled in the IOThread, not MMIO writes under the BQL.
     * auto (the default) is on with iothread= and off without; on without
     * iothread= is refused.
     */
    DEFINE_PROP_ON_OFF_AUTO("ioeventfd", QrdmaState, ioeventfd,
                            ON_OFF_AUTO_AUTO),
    DEFINE_PROP_UINT32("max-qp", QrdmaState, cfg.max_qp, QRDMA_DEFAULT_MAX_QP),
    DEFINE_PROP_UINT32("max-cq", QrdmaState, cfg.max_cq, QRDMA_DEFAULT_MAX_CQ),
    DEFINE_PROP_UINT32("max-mr", QrdmaState, cfg.max_mr, QRDMA_DEFAULT_MAX_MR),
    DEFINE_PROP_UINT32("max-pd", QrdmaState, cfg.max_pd, QRDMA_DEFAULT_MAX_PD),
    DEFINE_PROP_UINT32("max-srq", QrdmaState, cfg.max_srq,
                       QRDMA_DEFAULT_MAX_SRQ),
    DEFINE_PROP_UINT32("max-ah", QrdmaState, cfg.max_ah, QRDMA_DEFAULT_MAX_AH),
    DEFINE_PROP_UINT32("max-qp-wr", QrdmaState, cfg.max_qp_wr,
                       QRDMA_DEFAULT_MAX_QP_WR),
    DEFINE_PROP_UINT32("max-srq-wr", QrdmaState, cfg.max_srq_wr,
                       QRDMA_DEFAULT_MAX_SRQ_WR),
    DEFINE_PROP_UINT32("max-cqe", QrdmaState, cfg.max_cqe,
                       QRDMA_DEFAULT_MAX_CQE),
    DEFINE_PROP_UINT32("max-send-sge", QrdmaState, cfg.max_send_sge,
                       QRDMA_DEFAULT_MAX_SEND_SGE),
    DEFINE_PROP_UINT32("max-recv-sge", QrdmaState, cfg.max_recv_sge,
                       QRDMA_DEFAULT_MAX_RECV_SGE),
    DEFINE_PROP_UINT32("max-inline", QrdmaState, cfg.max_inline,
                       QRDMA_DEFAULT_MAX_INLINE),
    DEFINE_PROP_UINT32("max-rd-atom", QrdmaState, cfg.max_rd_atom,
                       QRDMA_DEFAULT_MAX_RD_ATOM),
    DEFINE_PROP_UINT32("max-mtu", QrdmaState, cfg.max_mtu,
                       QRDMA_DEFAULT_MAX_MTU),
    DEFINE_PROP_UINT32("gid-table-len", QrdmaState, cfg.gid_table_len,
                       QRDMA_DEFAULT_GID_TABLE_LEN),
    DEFINE_PROP_UINT32("doorbell-pages", QrdmaState, cfg.db_pages,
                       QRDMA_DEFAULT_DB_PAGES),
    DEFINE_PROP_UINT32("msix-vectors", QrdmaState, cfg.msix_vectors,
                       QRDMA_DEFAULT_MSIX_VECTORS),
    DEFINE_PROP_UINT32("max-ceq", QrdmaState, cfg.max_ceq,
                       QRDMA_DEFAULT_MAX_CEQ),
    DEFINE_PROP_UINT32("max-mcast-grp", QrdmaState, cfg.max_mcast_grp,
                       QRDMA_DEFAULT_MAX_MCAST_GRP),
    DEFINE_PROP_UINT32("max-mcast-qp-attach", QrdmaState,
                       cfg.max_mcast_qp_attach,
                       QRDMA_DEFAULT_MAX_MCAST_QP_ATTACH),
    DEFINE_PROP_UINT32("link-speed", QrdmaState, cfg.link_speed_mbps,
                       QRDMA_DEFAULT_LINK_SPEED_MBPS),
    /*
     * An RC QP reports retry-exceeded only after its retries and this long
     * without progress (0: the retry count alone, as IBTA has it), so that
     * a peer VM its host briefly starves of CPU is not taken for dead.
     */
    DEFINE_PROP_UINT32("stall-floor-ms", QrdmaState, cfg.stall_floor_ms,
                       QRDMA_DEFAULT_STALL_FLOOR_MS),
    /* Test hook: 4294967295 keeps the engine from ever reporting ready. */
    DEFINE_PROP_UINT32("pe-ready-delay-us", QrdmaState, cfg.pe_ready_delay_us,
                       QRDMA_DEFAULT_PE_READY_DELAY_US),
    /*
     * Test hooks (unstable, x-): faults the RDMA transport injects into the
     * frames it sends, in parts per million, to test recovery from loss,
     * duplication, reordering and corruption. The LAN function is untouched.
     */
    DEFINE_PROP_UINT32("x-fault-loss-ppm", QrdmaState, cfg.fault.loss_ppm, 0),
    DEFINE_PROP_UINT32("x-fault-dup-ppm", QrdmaState, cfg.fault.dup_ppm, 0),
    DEFINE_PROP_UINT32("x-fault-reorder-ppm", QrdmaState, cfg.fault.reorder_ppm,
                       0),
    DEFINE_PROP_UINT32("x-fault-corrupt-ppm", QrdmaState, cfg.fault.corrupt_ppm,
                       0),
    DEFINE_PROP_UINT32("x-fault-delay-us", QrdmaState, cfg.fault.delay_us, 0),
    DEFINE_PROP_UINT64("x-fault-seed", QrdmaState, cfg.fault.seed, 1),
    /*
     * Test hook (unstable): the control QP hangs at the first command with
     * this opcode (0..255; 4294967295, the default: never) until the next
     * reset, to test the driver's CQP timeout.
     */
    DEFINE_PROP_UINT32("x-cqp-stall-opcode", QrdmaState, cfg.cqp_stall_opcode,
                       QRDMA_CQP_STALL_NEVER),
};

/*
 * x-sq-doorbells, x-sq-notifications: the SQ doorbells that reached the
 * core as BAR writes (under the BQL) and as eventfd notifications (in the
 * IOThread), for tests (qrdma-reset-test's /qrdma/iothread/ cases).
 */
static void qrdma_get_stat(Object *obj, Visitor *v, const char *name,
                           void *opaque, Error **errp)
{
    QrdmaState *s = QRDMA(obj);
    uint64_t value;

    qrdma_lock(s);
    value = *(uint64_t *)((char *)&s->core.stats + (uintptr_t)opaque);
    qrdma_unlock(s);
    visit_type_uint64(v, name, &value, errp);
}

static void qrdma_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    ResettableClass *rc = RESETTABLE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);

    k->realize = qrdma_realize;
    k->exit = qrdma_exit;
    k->config_write = qrdma_write_config;
    k->vendor_id = QRDMA_PCI_VENDOR_ID;
    k->device_id = QRDMA_PCI_DEVICE_ID;
    k->revision = QRDMA_PCI_REVISION;
    k->class_id = QRDMA_PCI_CLASS;
    rc->phases.hold = qrdma_reset_hold;

    dc->desc = "qrdma virtual RDMA NIC (E810-style RDMA engine)";
    dc->vmsd = &qrdma_vmstate;
    device_class_set_props(dc, qrdma_properties);
    set_bit(DEVICE_CATEGORY_NETWORK, dc->categories);
    object_class_property_add(
        klass, "x-sq-doorbells", "uint64", qrdma_get_stat, NULL, NULL,
        (void *)offsetof(struct qrdma_core_stats, sq_doorbells));
    object_class_property_add(
        klass, "x-sq-notifications", "uint64", qrdma_get_stat, NULL, NULL,
        (void *)offsetof(struct qrdma_core_stats, sq_notifications));
}

static void qrdma_instance_init(Object *obj)
{
    QrdmaState *s = QRDMA(obj);

    /* Limits come from the properties; board-id, when set, overrides this. */
    pstrcpy(s->cfg.board_id, sizeof(s->cfg.board_id), QRDMA_DEFAULT_BOARD_ID);
    qemu_rec_mutex_init(&s->lock);
    qemu_mutex_init(&s->frames_lock);
    QSIMPLEQ_INIT(&s->tx_frames.head);
    QSIMPLEQ_INIT(&s->rx_frames.head);
}

static void qrdma_instance_finalize(Object *obj)
{
    QrdmaState *s = QRDMA(obj);

    qrdma_frames_reset(s);
    qemu_mutex_destroy(&s->frames_lock);
    qemu_rec_mutex_destroy(&s->lock);
}

static const TypeInfo qrdma_info = {
    .name = TYPE_QRDMA,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(QrdmaState),
    .instance_init = qrdma_instance_init,
    .instance_finalize = qrdma_instance_finalize,
    .class_init = qrdma_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_PCIE_DEVICE },
        { }
    },
};

static void qrdma_register_types(void)
{
    type_register_static(&qrdma_info);
}

type_init(qrdma_register_types)
