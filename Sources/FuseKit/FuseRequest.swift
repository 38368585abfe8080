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

/// A directory entry for a `LOOKUP` or `READDIRPLUS`: the node, its attributes, and how long the kernel may
/// trust each.
public struct FuseEntry: Sendable {
    public var node: UInt64
    public var attributes: FuseAttributes
    /// Seconds the kernel may trust the name.
    public var timeout: Double
    /// Seconds the kernel may trust the attributes.
    public var attributeTimeout: Double

    public init(node: UInt64, attributes: FuseAttributes, timeout: Double, attributeTimeout: Double? = nil) {
        self.node = node
        self.attributes = attributes
        self.timeout = timeout
        self.attributeTimeout = attributeTimeout ?? timeout
    }

    /// libfuse's form of the entry. Nodes are never reused while the mount lives, so the generation is 1.
    var parameters: fuse_entry_param {
        var param = fuse_entry_param()
        param.ino = fuse_ino_t(node)
        param.generation = 1
        param.attr = attributes.status
        param.attr_timeout = attributeTimeout
        param.entry_timeout = timeout
        return param
    }
}

/// Fills a `READDIRPLUS` answer of at most the size the kernel asked for.
public struct FuseDirectoryBuffer: ~Copyable {
    private let request: FuseRequest
    private let buffer: UnsafeMutableRawBufferPointer
    private var used = 0

    /// A buffer for an answer of at most `size` bytes.
    public init(for request: FuseRequest, size: Int) {
        self.request = request
        self.buffer = .allocate(byteCount: max(size, 0), alignment: 8)
    }

    deinit { buffer.deallocate() }

    /// Adds `entry` under `name`; `next` is the offset the kernel asks from to continue after it.
    /// - Returns: false when the entry does not fit: the answer is full, send it.
    public mutating func add(_ name: String, _ entry: FuseEntry, next: Int64) -> Bool {
        var param = entry.parameters
        let room = buffer.count - used
        let start = buffer.baseAddress.map { ($0 + used).assumingMemoryBound(to: CChar.self) }
        let needed = fuse_add_direntry_plus(request.raw, start, room, name, &param, off_t(next))
        guard needed <= room else { return false }
        used += needed
        return true
    }

    /// Sends the entries added.
    public consuming func send() {
        request.reply(bytes: UnsafeRawBufferPointer(rebasing: buffer[0..<used]))
    }
}

/// Lets replies and notifications through while the session serves, and none once it has ended. A read
/// answered from a task, or a change the mount tells the kernel of, may come after the session ended (an
/// unmount with a download under way): by then the session's device is closed (libfuse printed "writing
/// device: Bad file descriptor") and its memory is freed, so nothing late may reach libfuse.
///
/// What it guarantees:
/// - **Nothing after close.** Once ``close()`` returns, no reply runs and none is still running: a reply
///   either saw the gate open and counted itself in before `close` looked (then `close` waits for it), or
///   sees it closed and is dropped. Both sides use sequentially consistent atomics, so neither misses the
///   other.
/// - Any thread or task may ``pass(_:)``; it never blocks. Only the session's own thread calls `close()`,
///   once, never a task: it spins, in 50 µs sleeps, for at most one `writev` per reply in flight.
/// - A reply dropped at close is not an error: the kernel forgot the request with the session.
///
/// It stays in FuseKit, beside the one libfuse session it guards, rather than in the engine's
/// `Concurrency/`: FuseKit cannot depend on ChunkCache (ChunkCache's mount depends on it), and the gate
/// exists only to keep late calls out of libfuse.
final class ReplyGate: Sendable {
    private let passing = Atomic<Int>(0)
    private let closed = Atomic<Bool>(false)

    /// Runs `reply` unless the gate is closed.
    func pass(_ reply: () -> Void) {
        passing.add(1, ordering: .sequentiallyConsistent)
        defer { passing.subtract(1, ordering: .sequentiallyConsistent) }
        guard !closed.load(ordering: .sequentiallyConsistent) else { return }
        reply()
    }

    /// Closes the gate and waits for the replies passing it, each one `writev` long. Called on the session's
    /// own thread, never on a task's.
    func close() {
        closed.store(true, ordering: .sequentiallyConsistent)
        while passing.load(ordering: .sequentiallyConsistent) > 0 { ThisProcess.sleepBlocking(for: .microseconds(50)) }
    }
}
