import CFuse3
import FileIO

#if canImport(Glibc)
import Glibc
#endif

/// A FUSE mount served by a ``FuseFilesystem``: libfuse 3's low-level session, its mount, and its
/// multi-threaded request loop.
///
/// ```swift
/// let session = try FuseSession(serving: filesystem, at: "/mnt/docs", options: ["ro", "fsname=chunkcache"])
/// try session.run(threads: 4)   // returns once unmounted or ended
/// ```
///
/// Why libfuse and not `/dev/fuse` spoken directly: libfuse mounts through `fusermount3` when not root,
/// parses and answers every request correctly (including the ones a read-only file system refuses), and its
/// replies may come from any thread. The kernel features it lacks in 3.14 (passthrough, io_uring) do not
/// serve a store whose chunks are compressed. What the binding costs was measured (the mount's benchmark).
public final class FuseSession: @unchecked Sendable {
    private let session: OpaquePointer
    private let target: Unmanaged<Target>
    /// The mount point, as given.
    public let mountPoint: String
    private var mounted = false

    /// The file system the C callbacks reach through `fuse_req_userdata`.
    final class Target {
        let filesystem: any FuseFilesystem
        let replies = ReplyGate()
        init(_ filesystem: any FuseFilesystem) { self.filesystem = filesystem }
    }

    /// Creates the session and mounts it at `mountPoint`.
    ///
    /// - Parameters:
    ///   - options: Mount options, as `-o` takes them (`ro`, `allow_other`, `fsname=…`, `subtype=…`).
    /// - Throws: ``FuseError`` when libfuse refuses the options or the mount fails (no `/dev/fuse`, a mount
    ///   point that is not an empty folder the user may mount on, `allow_other` without `user_allow_other`).
    public init(serving filesystem: any FuseFilesystem, at mountPoint: String, options: [String]) throws {
        self.mountPoint = mountPoint
        let target = Unmanaged.passRetained(Target(filesystem))
        self.target = target
        var arguments = ["chunkcache"]
        if !options.isEmpty { arguments += ["-o", options.joined(separator: ",")] }
        var operations = Self.operations()
        let made = Self.withArguments(arguments) { args in
            fuse_session_new(args, &operations, MemoryLayout<fuse_lowlevel_ops>.size, target.toOpaque())
        }
        guard let made else {
            target.release()
            throw FuseError("libfuse refused the mount options \(options.joined(separator: ","))")
        }
        session = made
        guard fuse_session_mount(session, mountPoint) == 0 else {
            // Every stored property is set: deinit runs and destroys the session and releases the target
            // (doing it here too freed them twice).
            throw FuseError(
                "cannot mount at \(mountPoint): it must be an existing folder you may mount on (and /dev/fuse must exist; allow_other needs user_allow_other in /etc/fuse.conf)"
            )
        }
        mounted = true
    }

    deinit {
        if mounted { fuse_session_unmount(session) }
        fuse_session_destroy(session)
        target.release()
    }

    /// Serves requests on `threads` threads until the file system is unmounted (`fusermount3 -u`, `umount`,
    /// ``detach()``) and the last file open on it is closed; then unmounts.
    ///
    /// Returns on the calling thread, which it uses as one of the session's threads. Signals are the
    /// caller's to handle (``detach()`` is what SIGTERM should do).
    public func run(threads: Int) throws {
        let config = fuse_loop_cfg_create()!
        defer { fuse_loop_cfg_destroy(config) }
        fuse_loop_cfg_set_max_threads(config, UInt32(max(threads, 1)))
        fuse_loop_cfg_set_idle_threads(config, UInt32(max(threads, 1)))
        // Each thread gets its own /dev/fuse descriptor: no thread wakes for another's request.
        fuse_loop_cfg_set_clone_fd(config, 1)
        let status = fuse_session_loop_mt(session, config)
        target.takeUnretainedValue().replies.close()
        fuse_session_unmount(session)
        mounted = false
        // The kernel ends the connection with ENODEV once unmounted: the normal end.
        guard status == 0 || status == -ENODEV else {
            throw FuseError("the FUSE session ended with error \(-status): \(String(cString: strerror(-status)))")
        }
    }

    /// Unmounts lazily (`MNT_DETACH`, or `fusermount3 -u -z` when not root): the mount point is free at once,
    /// files open on the mount keep reading, and ``run(threads:)`` returns once the last is closed.
    public func detach() {
        if geteuid() == 0 {
            _ = umount2(mountPoint, Int32(MNT_DETACH))
            return
        }
        // Best effort, as umount2's result above: a mount point already free leaves fusermount3 nothing to do.
        let unmount = try? SpawnedProcess.spawn(
            "fusermount3", arguments: ["-u", "-z", "-q", mountPoint], options: .searchPath)
        _ = try? unmount?.wait()
    }

    /// Tells the kernel to drop what it cached of `node`: its attributes, and its pages when `data` is true.
    /// - Returns: false when the kernel does not know the node (nothing to drop).
    @discardableResult
    public func invalidate(node: UInt64, data: Bool) -> Bool {
        var done = false
        target.takeUnretainedValue().replies.pass {
            done = fuse_lowlevel_notify_inval_inode(session, fuse_ino_t(node), data ? 0 : -1, 0) == 0
        }
        return done
    }

    /// Tells the kernel to forget the name `name` in the folder `parent` (a negative entry too), so the next
    /// access looks it up again.
    @discardableResult
    public func invalidateEntry(parent: UInt64, name: String) -> Bool {
        var done = false
        target.takeUnretainedValue().replies.pass {
            done = fuse_lowlevel_notify_inval_entry(session, fuse_ino_t(parent), name, name.utf8.count) == 0
        }
        return done
    }

    /// Puts `bytes` into the kernel's page cache of `node` at `offset` (`FUSE_NOTIFY_STORE`), so reads of
    /// them are answered by the kernel without a request. Only for bytes that never change under the node,
    /// and never at the pages of a read not yet answered: the kernel holds those locked, and the store
    /// waits for them.
    /// - Returns: false when the kernel refused (it does not know the node, or the connection is gone).
    @discardableResult
    public func store(node: UInt64, offset: Int64, bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return true }
        var vector = fuse_bufvec()
        vector.count = 1
        vector.buf = fuse_buf(
            size: bytes.count, flags: fuse_buf_flags(0), mem: UnsafeMutableRawPointer(mutating: base), fd: -1, pos: 0)
        var done = false
        target.takeUnretainedValue().replies.pass {
            done =
                fuse_lowlevel_notify_store(session, fuse_ino_t(node), off_t(offset), &vector, fuse_buf_copy_flags(0))
                == 0
        }
        return done
    }

    /// Calls `body` with a `fuse_args` of `arguments`, valid only during the call.
    private static func withArguments<R>(_ arguments: [String], _ body: (UnsafeMutablePointer<fuse_args>) -> R) -> R {
        var pointers = arguments.map { strdup($0) }
        defer { for pointer in pointers { free(pointer) } }
        return pointers.withUnsafeMutableBufferPointer { argv in
            var args = fuse_args(argc: Int32(argv.count), argv: argv.baseAddress, allocated: 0)
            defer { fuse_opt_free_args(&args) }
            return body(&args)
        }
    }
}
