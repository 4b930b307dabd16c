/*
 * faultfs: an LD_PRELOAD shim that makes a server's disk fail on command.
 *
 * Loaded into keel-server or redis-server by the fault tests. It wraps
 * write, writev, pwrite, fsync and fdatasync; for a descriptor whose file
 * lies under the watched directory it can
 *
 *   - fail writes with a chosen errno (ENOSPC, EIO, ...),
 *   - fail fsync/fdatasync with a chosen errno,
 *   - make every fsync/fdatasync take a chosen number of microseconds,
 *   - log, after each successful fsync/fdatasync, the file's path and the
 *     length it had when the call began ("sync <path> <len>": what the call
 *     guarantees is on disk), each directory fsync ("dirsync <path>") and
 *     each rename ("rename-begin <old> <new>" before the call, "rename
 *     <old> <new>" after it succeeded), so a test can cut files back to
 *     what was synced (a power cut).
 *
 * Control is a small file mapped shared (FAULTFS_CTL names it); the test
 * changes the fields while the server runs. Layout, native-endian int32s:
 *
 *   offset 0   write_errno    0: writes pass through
 *   offset 4   fsync_errno    0: fsyncs pass through
 *   offset 8   fsync_delay_us added to every fsync/fdatasync
 *   offset 12  log_syncs      1: append sync records to FAULTFS_LOG
 *   offset 16  dir            NUL-terminated path prefix (224 bytes max)
 *   offset 240 kill_at        0: off; else the process group is killed
 *                             (SIGKILL) just before its kill_at-th file
 *                             operation (write, fsync, rename, unlink)
 *                             under the directory, counted from when the
 *                             field was set
 *   offset 244 ops            the operations counted so far (the test
 *                             zeroes it when it sets kill_at)
 *
 * Nothing is touched while every field is 0, beyond one load per call.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

struct control {
    volatile int write_errno;
    volatile int fsync_errno;
    volatile int fsync_delay_us;
    volatile int log_syncs;
    char dir[224];
    volatile int kill_at;
    volatile int ops;
    char pad[8];
};

static struct control *ctl;
static int log_fd = -1;

static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_rename)(const char *, const char *);

__attribute__((constructor)) static void faultfs_init(void) {
    real_write = dlsym(RTLD_NEXT, "write");
    real_writev = dlsym(RTLD_NEXT, "writev");
    real_pwrite = dlsym(RTLD_NEXT, "pwrite");
    real_fsync = dlsym(RTLD_NEXT, "fsync");
    real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
    real_rename = dlsym(RTLD_NEXT, "rename");
    const char *path = getenv("FAULTFS_CTL");
    if (path) {
        int fd = open(path, O_RDWR);
        if (fd >= 0) {
            void *p = mmap(NULL, sizeof(struct control), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (p != MAP_FAILED) ctl = p;
            close(fd);
        }
    }
    const char *logp = getenv("FAULTFS_LOG");
    if (logp) log_fd = open(logp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

/* Whether any fault or log is asked for at all. */
static int armed(void) {
    return ctl && (ctl->write_errno || ctl->fsync_errno || ctl->fsync_delay_us || ctl->log_syncs ||
                   ctl->kill_at);
}

/* Count one file operation under the directory; die before the chosen one.
 * The whole process group goes, so a server's forked child dies with it. */
static void step(void) {
    if (!ctl || !ctl->kill_at) return;
    int n = __atomic_add_fetch(&ctl->ops, 1, __ATOMIC_SEQ_CST);
    if (n >= ctl->kill_at) kill(0, SIGKILL);
}

/* The path of fd, into buf; 0 when it cannot be told. */
static int path_of(int fd, char *buf, size_t len) {
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, buf, len - 1);
    if (n <= 0) return 0;
    buf[n] = 0;
    return 1;
}

/* Whether fd is a file under the watched directory. */
static int watched(int fd, char *buf, size_t len) {
    if (!ctl || !ctl->dir[0] || !path_of(fd, buf, len)) return 0;
    return strncmp(buf, ctl->dir, strnlen(ctl->dir, sizeof ctl->dir)) == 0;
}

static int failing_write(int fd) {
    if (!ctl || (!ctl->write_errno && !ctl->kill_at)) return 0;
    char p[PATH_MAX];
    if (!watched(fd, p, sizeof p)) return 0;
    step();
    return ctl->write_errno != 0;
}

ssize_t write(int fd, const void *buf, size_t n) {
    if (fd > 2 && failing_write(fd)) {
        errno = ctl->write_errno;
        return -1;
    }
    return real_write(fd, buf, n);
}

ssize_t writev(int fd, const struct iovec *iov, int cnt) {
    if (fd > 2 && failing_write(fd)) {
        errno = ctl->write_errno;
        return -1;
    }
    return real_writev(fd, iov, cnt);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
    if (fd > 2 && failing_write(fd)) {
        errno = ctl->write_errno;
        return -1;
    }
    return real_pwrite(fd, buf, n, off);
}

static void log_line(const char *line, int n) {
    if (n > 0 && log_fd >= 0) real_write(log_fd, line, (size_t)n);
}

/* Record a successful sync of `path`: a directory, or a file whose first
 * `size` bytes (its length when the sync began) are now on disk. */
static void log_sync(const char *path, int is_dir, long long size) {
    if (log_fd < 0 || !ctl->log_syncs) return;
    char line[PATH_MAX + 64];
    int n = is_dir ? snprintf(line, sizeof line, "dirsync %s\n", path)
                   : snprintf(line, sizeof line, "sync %s %lld\n", path, size);
    log_line(line, n);
}

/* Whether `path` (which may not exist yet) lies under the directory. */
static int path_watched(const char *path) {
    if (!ctl || !ctl->dir[0]) return 0;
    char full[PATH_MAX];
    if (path[0] == '/') snprintf(full, sizeof full, "%s", path);
    else {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd)) return 0;
        snprintf(full, sizeof full, "%.2000s/%.2000s", cwd, path);
    }
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", full);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    char real[PATH_MAX];
    if (!realpath(dir[0] ? dir : "/", real)) return 0;
    size_t rl = strlen(real);
    if (rl + 1 < sizeof real) {
        real[rl] = '/';
        real[rl + 1] = 0;
    }
    return strncmp(real, ctl->dir, strnlen(ctl->dir, sizeof ctl->dir)) == 0;
}

int unlink(const char *path) {
    static int (*real_unlink)(const char *);
    if (!real_unlink) real_unlink = dlsym(RTLD_NEXT, "unlink");
    if (ctl && ctl->kill_at && path_watched(path)) step();
    return real_unlink(path);
}

/* `path` with its directory resolved (the file itself need not exist). */
static void resolved(const char *path, char *out, size_t len) {
    const char *slash = strrchr(path, '/');
    char dir[PATH_MAX], real[PATH_MAX];
    if (!slash) {
        if (getcwd(real, sizeof real)) snprintf(out, len, "%.2000s/%.2000s", real, path);
        else snprintf(out, len, "%s", path);
        return;
    }
    size_t n = (size_t)(slash - path);
    if (n >= sizeof dir) n = sizeof dir - 1;
    memcpy(dir, path, n);
    dir[n] = 0;
    if (realpath(n ? dir : "/", real)) snprintf(out, len, "%.2000s%.2000s", real, slash);
    else snprintf(out, len, "%s", path);
}

/* A rename is logged twice: "rename-begin" before the call and "rename"
 * once it succeeded. A kill can land while the call runs (it may take
 * milliseconds on ext4) and leave the file renamed with no second record;
 * the test then tells from the directory whether it happened. */
int rename(const char *from, const char *to) {
    if (ctl && ctl->kill_at && path_watched(to)) step();
    int logging = log_fd >= 0 && ctl && ctl->log_syncs;
    char a[PATH_MAX], b[PATH_MAX], line[2 * PATH_MAX + 32];
    if (logging) {
        resolved(from, a, sizeof a);
        resolved(to, b, sizeof b);
        log_line(line, snprintf(line, sizeof line, "rename-begin %s %s\n", a, b));
    }
    int r = real_rename(from, to);
    if (r == 0 && logging) log_line(line, snprintf(line, sizeof line, "rename %s %s\n", a, b));
    return r;
}

static int around_sync(int fd, int (*real)(int)) {
    if (!armed()) return real(fd);
    char p[PATH_MAX];
    if (!watched(fd, p, sizeof p)) return real(fd);
    step();
    struct stat st;
    int known = fstat(fd, &st) == 0;
    if (ctl->fsync_delay_us) {
        struct timespec ts = {ctl->fsync_delay_us / 1000000, (ctl->fsync_delay_us % 1000000) * 1000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
    }
    if (ctl->fsync_errno) {
        errno = ctl->fsync_errno;
        return -1;
    }
    int r = real(fd);
    if (r == 0 && known) log_sync(p, S_ISDIR(st.st_mode), (long long)st.st_size);
    return r;
}

int fsync(int fd) { return around_sync(fd, real_fsync); }

int fdatasync(int fd) { return around_sync(fd, real_fdatasync); }
