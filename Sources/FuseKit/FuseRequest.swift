import CFuse3
import FileIO
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One request from the kernel, to be answered exactly once: at once on the session thread that received it,
/// or later from any thread (libfuse's replies are thread-safe), which is how a read that must wait for the
/// origin is answered from a task without holding a thread.
///
/// `@unchecked Sendable`: a `fuse_req_t` may be answered from any thread, once.
public struct FuseRequest: @unchecked Sendable {
    let raw: fuse_req_t
    /// The session's gate, taken while the session surely lives (in the callback that made the request).
    private let gate: ReplyGate

    init(_ raw: fuse_req_t) {
        self.raw = raw
        gate = Unmanaged<FuseSession.Target>.fromOpaque(fuse_req_userdata(raw)!).takeUnretainedValue().replies
    }

    /// The id of the thread that made the request (the kernel's `pid` of the caller), 0 when the kernel made
    /// it on no one's behalf.
    public var threadID: Int32 { fuse_req_ctx(raw).pointee.pid }

    /// Fails the request with `error`.
    public func fail(_ error: Errno) { gate.pass { _ = fuse_reply_err(raw, error.rawValue) } }

    /// Answers a `LOOKUP`: the kernel now holds one more lookup of `entry.node`.
    public func reply(entry: FuseEntry) {
        var param = entry.parameters
        gate.pass { _ = fuse_reply_entry(raw, &param) }
    }

    /// Answers a `LOOKUP` of a name that does not exist, letting the kernel remember the absence for
    /// `timeout` seconds (a negative entry; an invalidation clears it).
    public func replyNoEntry(timeout: Double) {
        var param = fuse_entry_param()
        param.ino = 0
        param.entry_timeout = timeout
        gate.pass { _ = fuse_reply_entry(raw, &param) }
    }

    /// Answers a `GETATTR`.
    public func reply(attributes: FuseAttributes, timeout: Double) {
        var attributes = attributes.status
        gate.pass { _ = fuse_reply_attr(raw, &attributes, timeout) }
    }

    /// Answers an `OPEN` or `OPENDIR` with the handle later requests carry.
    /// - Parameter keepCache: Whether the kernel may keep the pages it cached of the file from earlier opens.
    public func replyOpen(handle: UInt64, keepCache: Bool, cacheDirectory: Bool = false) {
        var info = fuse_file_info()
        info.fh = handle
        info.keep_cache = keepCache ? 1 : 0
        info.cache_readdir = cacheDirectory ? 1 : 0
        gate.pass { _ = fuse_reply_open(raw, &info) }
    }

    /// Answers a `READ` (or `READDIRPLUS`, `GETXATTR` with a value) with `bytes`.
    public func reply(bytes: UnsafeRawBufferPointer) {
        gate.pass { _ = fuse_reply_buf(raw, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), bytes.count) }
    }

    /// Answers an `LSEEK`: the offset found.
    public func reply(offset: Int64) { gate.pass { _ = fuse_reply_lseek(raw, off_t(offset)) } }

    /// Answers a `READLINK`.
    public func reply(link target: String) { gate.pass { _ = fuse_reply_readlink(raw, target) } }

    /// Answers a `STATFS`.
    public func reply(filesystem: statvfs) {
        var filesystem = filesystem
        gate.pass { _ = fuse_reply_statfs(raw, &filesystem) }
    }

    /// Answers a `GETXATTR` or `LISTXATTR` asked with size 0: how many bytes the value takes.
    public func reply(attributeSize: Int) { gate.pass { _ = fuse_reply_xattr(raw, attributeSize) } }

    /// Answers a request that succeeded with nothing to say (`SETXATTR`, `RELEASE`).
    public func succeed() { gate.pass { _ = fuse_reply_err(raw, 0) } }

}
