#include "CLinuxShims.h"
#include <errno.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <unistd.h>

const unsigned long CLinuxShims_FICLONE = FICLONE;
const int CLinuxShims_SEEK_DATA = SEEK_DATA;
const int CLinuxShims_SEEK_HOLE = SEEK_HOLE;
const int CLinuxShims_O_TMPFILE = O_TMPFILE;
const unsigned int CLinuxShims_RENAME_NOREPLACE = RENAME_NOREPLACE;

int CLinuxShims_ficlone(int dst_fd, int src_fd) { return ioctl(dst_fd, FICLONE, src_fd); }

int CLinuxShims_punch_hole(int fd, int64_t offset, int64_t len) {
    return fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, len);
}

ssize_t CLinuxShims_copy_file_range(int fd_in, int64_t *off_in, int fd_out, int64_t *off_out, size_t len,
                                    unsigned int flags) {
    loff_t in = off_in ? *off_in : 0, out = off_out ? *off_out : 0;
    ssize_t n = copy_file_range(fd_in, off_in ? &in : NULL, fd_out, off_out ? &out : NULL, len, flags);
    if (off_in) *off_in = in;
    if (off_out) *off_out = out;
    return n;
}

int CLinuxShims_renameat2(int old_dir_fd, const char *old_path, int new_dir_fd, const char *new_path,
                          unsigned int flags) {
    return renameat2(old_dir_fd, old_path, new_dir_fd, new_path, flags);
}

int CLinuxShims_count_shared_extents(int fd, int *total) {
    enum { batch = 256 };
    size_t size = sizeof(struct fiemap) + batch * sizeof(struct fiemap_extent);
    struct fiemap *map = calloc(1, size);
    if (!map) { errno = ENOMEM; return -1; }
    int shared = 0, all = 0;
    uint64_t start = 0;
    for (;;) {
        memset(map, 0, size);
        map->fm_start = start;
        map->fm_length = ~0ULL - start;
        map->fm_flags = FIEMAP_FLAG_SYNC;
        map->fm_extent_count = batch;
        if (ioctl(fd, FS_IOC_FIEMAP, map) < 0) { int e = errno; free(map); errno = e; return -1; }
        if (map->fm_mapped_extents == 0) break;
        int last = 0;
        for (unsigned i = 0; i < map->fm_mapped_extents; i++) {
            struct fiemap_extent *x = &map->fm_extents[i];
            all++;
            if (x->fe_flags & FIEMAP_EXTENT_SHARED) shared++;
            if (x->fe_flags & FIEMAP_EXTENT_LAST) last = 1;
            start = x->fe_logical + x->fe_length;
        }
        if (last) break;
    }
    free(map);
    if (total) *total = all;
    return shared;
}

#include <signal.h>

static char *fatal_stderr_text;
static char *fatal_stdout_text;

static void write_all(int fd, const char *text) {
    if (text == NULL) return;
    size_t left = strlen(text);
    while (left > 0) {
        ssize_t n = write(fd, text, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        text += n;
        left -= (size_t)n;
    }
}

static void report_fatal_signal(int signal_number) {
    (void)signal_number;
    write_all(2, fatal_stderr_text);
    write_all(1, fatal_stdout_text);
    _exit(1);
}

int CLinuxShims_report_fatal_signals(const char *stderr_text, const char *stdout_text) {
    fatal_stderr_text = strdup(stderr_text);
    fatal_stdout_text = stdout_text ? strdup(stdout_text) : NULL;
    // A fault from a stack overflow needs a stack of its own to run the handler on.
    stack_t stack = {0};
    stack.ss_size = 64 * 1024;
    stack.ss_sp = malloc(stack.ss_size);
    if (stack.ss_sp == NULL || sigaltstack(&stack, NULL) != 0) return -1;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = report_fatal_signal;
    action.sa_flags = SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    // Faults a damaged data.mdb causes inside LMDB (bad page references, its assertions); not SIGILL or
    // SIGFPE, which are Swift traps: a bug must still crash loudly.
    const int signals[] = {SIGSEGV, SIGBUS, SIGABRT};
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++) {
        if (sigaction(signals[i], &action, NULL) != 0) return -1;
    }
    return 0;
}

int CLinuxShims_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int CLinuxShims_epoll_watch(int epoll_fd, int fd, uint64_t token, int rearm) {
    struct epoll_event event = {.events = EPOLLIN | EPOLLONESHOT, .data.u64 = token};
    return epoll_ctl(epoll_fd, rearm ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &event);
}

int CLinuxShims_epoll_unwatch(int epoll_fd, int fd) { return epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, NULL); }

int CLinuxShims_epoll_wait(int epoll_fd, uint64_t *tokens, int capacity) {
    enum { most = 64 };
    struct epoll_event events[most];
    int n = epoll_wait(epoll_fd, events, capacity < most ? capacity : most, -1);
    for (int i = 0; i < n; i++) tokens[i] = events[i].data.u64;
    return n;
}
