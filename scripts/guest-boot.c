/*
 * The first init of a qrdma test guest: the whole of the small initramfs
 * scripts/vm-run boots (scripts/build-guest.sh builds it, statically
 * linked, as its /init).
 *
 * The guest's root is a read-only ext4 image on a virtio-blk disk, shared
 * by every guest and every QEMU of a run, under a tmpfs that takes the
 * guest's writes (overlayfs). Unpacking the same root as an initramfs cost
 * 8 of a boot's 18 seconds under TCG; a disk is read on demand.
 *
 * It loads the modules the mount needs (the Debian kernel has virtio-blk,
 * ext4 and overlayfs as modules), which are /modules/NN-NAME.ko.xz in the
 * order modprobe --show-depends gave them; mounts the overlay; moves it
 * to / and runs the root's own /init (scripts/guest-init.sh) as PID 1.
 * Any failure says what failed on the console and powers the guest off,
 * which vm-run reports as a guest that did not boot.
 *
 * The root holds it too, as /usr/local/sbin/qrdma-boot: "qrdma-boot
 * poweroff" is how the root's init ends the guest. Power-off shuts the
 * disk down; with sysrq's asynchronous power-off the init went on running
 * and faulted in pages of a disk already gone (an I/O error, init killed,
 * a panic). The reboot system call does it in the caller, which runs no
 * more.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef MODULE_INIT_COMPRESSED_FILE
#define MODULE_INIT_COMPRESSED_FILE 4   /* the kernel decompresses (5.17+) */
#endif

#define ROOT_DISK       "/dev/vda"
#define DISK_WAIT_MS    20000           /* the disk's probe, under TCG */

static int power_off(void)
{
    sync();
    reboot(RB_POWER_OFF);
    fprintf(stderr, "qrdma-boot: power-off failed: %s\n", strerror(errno));
    return 1;
}

static void die(const char *fmt, ...)
{
    va_list ap;

    fputs("qrdma-boot: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("; powering off\n", stderr);
    power_off();
    for (;;) {
        pause();
    }
}

static void load_modules(void)
{
    struct dirent **names;
    int n, i;

    n = scandir("/modules", &names, NULL, alphasort);
    if (n < 0) {
        die("no /modules: %s", strerror(errno));
    }
    for (i = 0; i < n; i++) {
        char path[512];
        int fd;

        if (names[i]->d_name[0] == '.') {
            continue;
        }
        snprintf(path, sizeof(path), "/modules/%s", names[i]->d_name);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            die("cannot open %s: %s", path, strerror(errno));
        }
        /*
         * Not fatal: a soft dependency (crc32c-intel on a CPU without
         * SSE4.2) may not load; a mount that needs what failed says so.
         */
        if (syscall(SYS_finit_module, fd, "", MODULE_INIT_COMPRESSED_FILE) &&
            errno != EEXIST) {
            fprintf(stderr, "qrdma-boot: cannot load %s: %s\n", path,
                    strerror(errno));
        }
        close(fd);
        free(names[i]);
    }
    free(names);
}

/* The disk appears once virtio-blk has probed it, which may be later. */
static void wait_for_disk(void)
{
    const struct timespec step = { .tv_nsec = 10 * 1000 * 1000 };
    struct stat st;
    int waited_ms;

    for (waited_ms = 0; stat(ROOT_DISK, &st); waited_ms += 10) {
        if (waited_ms >= DISK_WAIT_MS) {
            die("no %s after %d s (is the root image attached as the first "
                "virtio-blk disk?)", ROOT_DISK, DISK_WAIT_MS / 1000);
        }
        nanosleep(&step, NULL);
    }
}

static void make_dir(const char *path)
{
    if (mkdir(path, 0755) && errno != EEXIST) {
        die("cannot make %s: %s", path, strerror(errno));
    }
}

static void mount_or_die(const char *src, const char *dst, const char *type,
                         unsigned long flags, const char *data)
{
    make_dir(dst);
    if (mount(src, dst, type, flags, data)) {
        die("cannot mount %s (%s) on %s: %s", src, type, dst, strerror(errno));
    }
}

int main(int argc, char **argv)
{
    char *const init_argv[] = { "/init", NULL };

    if (argc == 2 && !strcmp(argv[1], "poweroff")) {
        return power_off();
    }
    if (argc != 1 || getpid() != 1) {
        fprintf(stderr, "usage: qrdma-boot (as PID 1: mount the root, run its "
                "/init) | qrdma-boot poweroff\n");
        return 2;
    }

    mount_or_die("devtmpfs", "/dev", "devtmpfs", 0, NULL);
    load_modules();
    wait_for_disk();
    mount_or_die(ROOT_DISK, "/lower", "ext4", MS_RDONLY, NULL);
    mount_or_die("tmpfs", "/rw", "tmpfs", 0, "mode=0755");
    make_dir("/rw/upper");
    make_dir("/rw/work");
    /*
     * nfs_export (with the index it needs): an NFSv4 server's pseudo root
     * starts at /, and nfsd needs file handles of every directory down to
     * an export (tests/vm/guest-nfs.sh's mount failed with ENOENT without).
     */
    mount_or_die("overlay", "/root", "overlay", 0,
                 "lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work,"
                 "index=on,nfs_export=on");
    /* the root's init mounts its own /dev */
    if (umount2("/dev", MNT_DETACH)) {
        die("cannot unmount /dev: %s", strerror(errno));
    }
    /* switch_root without the deletion: this initramfs is 1.3 MB */
    if (chdir("/root") || mount("/root", "/", NULL, MS_MOVE, NULL) ||
        chroot(".") || chdir("/")) {
        die("cannot move the root to /: %s", strerror(errno));
    }
    execv(init_argv[0], init_argv);
    die("cannot run the root's /init: %s", strerror(errno));
}
