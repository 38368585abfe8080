#pragma once
#include <stdint.h>
#include <sys/types.h>

/// `FICLONE` ioctl request number (linux/fs.h), which Glibc does not export to Swift.
extern const unsigned long CLinuxShims_FICLONE;
/// `SEEK_DATA` and `SEEK_HOLE`, which need `_GNU_SOURCE`.
extern const int CLinuxShims_SEEK_DATA;
extern const int CLinuxShims_SEEK_HOLE;
/// `O_TMPFILE` (an unnamed file in a directory), which needs `_GNU_SOURCE`.
extern const int CLinuxShims_O_TMPFILE;
/// `RENAME_NOREPLACE` for ``CLinuxShims_renameat2``.
extern const unsigned int CLinuxShims_RENAME_NOREPLACE;

/// Clones the whole of `src_fd` into `dst_fd` with `ioctl(FICLONE)`. Returns 0 or -1 with errno set.
int CLinuxShims_ficlone(int dst_fd, int src_fd);

/// `copy_file_range(2)`, which needs `_GNU_SOURCE`. Returns bytes copied or -1 with errno set.
ssize_t CLinuxShims_copy_file_range(int fd_in, int64_t *off_in, int fd_out, int64_t *off_out, size_t len,
                                    unsigned int flags);

/// Frees the disk of `len` bytes at `offset` of `fd`, leaving a hole and the file's length
/// (`fallocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)`, which needs `_GNU_SOURCE`). Returns 0 or -1 with errno set.
int CLinuxShims_punch_hole(int fd, int64_t offset, int64_t len);

/// `renameat2(2)`, which needs `_GNU_SOURCE`. Returns 0 or -1 with errno set.
int CLinuxShims_renameat2(int old_dir_fd, const char *old_path, int new_dir_fd, const char *new_path,
                          unsigned int flags);

/// Counts the extents of `fd` that `FS_IOC_FIEMAP` reports as shared (`FIEMAP_EXTENT_SHARED`),
/// and all extents in `*total`. Returns -1 with errno set when the filesystem cannot tell.
int CLinuxShims_count_shared_extents(int fd, int *total);

/// Makes SIGSEGV, SIGBUS, SIGABRT, SIGILL and SIGFPE end the process with exit status 1 after writing
/// `stderr_text` to fd 2 and `stdout_text` (may be NULL) to fd 1, on an alternate signal stack. Both texts
/// are copied. Only async-signal-safe calls run in the handler (`write`, `_exit`). Returns 0 or -1 with errno set.
int CLinuxShims_report_fatal_signals(const char *stderr_text, const char *stdout_text);

/// `epoll_create1(EPOLL_CLOEXEC)`. Returns the descriptor or -1 with errno set.
int CLinuxShims_epoll_create(void);
/// Watches `fd` for input, once (`EPOLLIN | EPOLLONESHOT`): reported with `token` by the next
/// ``CLinuxShims_epoll_wait`` that sees it readable, then not again until re-armed. `rearm` is nonzero to re-arm
/// a descriptor already added. Returns 0 or -1 with errno set.
int CLinuxShims_epoll_watch(int epoll_fd, int fd, uint64_t token, int rearm);
/// Stops watching `fd`. Returns 0 or -1 with errno set.
int CLinuxShims_epoll_unwatch(int epoll_fd, int fd);
/// Waits (without limit) until a watched descriptor is readable; writes up to `capacity` tokens. Returns how
/// many, or -1 with errno set. `struct epoll_event` is packed on x86-64, which Swift does not import as is.
int CLinuxShims_epoll_wait(int epoll_fd, uint64_t *tokens, int capacity);
