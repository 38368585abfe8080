import ChunkCache
import FileIO
import Foundation
import FuseKit

/// Mounts a domain and serves it until it is unmounted (CONTRACT §13).
public enum DomainMount {
    /// Mounts `domain` of `cache` at `mountPoint` and serves it until it is unmounted (`fusermount3 -u`), or
    /// SIGINT, SIGTERM or SIGHUP arrives (which unmount it lazily: files open on it keep reading until
    /// closed). Returns once the mount has ended.
    ///
    /// - Parameter mounted: Called once the mount is in place, before any request is served.
    /// - Throws: `noSuchItem` for an unknown domain; `invalidArgument` when the mount cannot be made (the
    ///   message says why and what to do).
    public static func serve(
        _ cache: ChunkCache, domain: String, at mountPoint: String, options: MountOptions,
        mounted: @Sendable () -> Void = {}
    ) async throws {
        try checkMountPoint(mountPoint)
        let info = try await checkDomain(domain, of: cache)
        await cache.prepareOrigin(of: domain)
        let filesystem = MountedDomain(
            cache, domain: domain, fillBelow: options.fillBelow, evictable: info.origin != nil)
        let session: FuseSession
        do {
            session = try FuseSession(serving: filesystem, at: mountPoint, options: fuseOptions(domain, cache, options))
        } catch let error as FuseError {
            throw CacheError(.invalidArgument, error.description)
        }
        raiseReadAhead(of: mountPoint)
        filesystem.pages.attach(session)
        let follower = ChangeFollower(filesystem, session: session)
        let following = Task { try await follower.run() }
        let syncing = options.syncEvery.map { every in Task { await syncDomain(domain, of: cache, every: every) } }
        let signals = InterruptSignals { _ in session.detach() }
        defer {
            signals.release()
            following.cancel()
            syncing?.cancel()
        }
        mounted()
        try await onThreadOfItsOwn(named: "chunkcache-mount") { try session.run(threads: options.threads) }
        filesystem.pages.detach()
        // What the programs read is saved as traces, once the prefetches running for them finish.
        await cache.finishTraceSessions()
        try? await cache.flushUsage()
    }

    /// Checks that `mountPoint` is an existing folder, as ``serve(_:domain:at:options:mounted:)`` does first
    /// (libfuse would print its own message and fail).
    /// - Throws: `invalidArgument` naming the path and what to do.
    public static func checkMountPoint(_ mountPoint: String) throws {
        let kind = (try? FileSystem.status(mountPoint)).map { $0.st_mode & S_IFMT }
        guard kind != S_IFDIR else { return }
        throw CacheError(
            .invalidArgument,
            kind == nil
                ? "cannot mount at \(mountPoint): there is no such folder; make it (mkdir) and mount again"
                : "cannot mount at \(mountPoint): it is not a folder; give an existing empty folder")
    }

    /// Checks that `domain` exists in `cache`, as ``serve(_:domain:at:options:mounted:)`` does first.
    /// - Returns: The domain.
    /// - Throws: `noSuchItem` naming the domain.
    @discardableResult
    public static func checkDomain(_ domain: String, of cache: ChunkCache) async throws -> DomainInfo {
        guard let info = try await cache.domains().first(where: { $0.name == domain }) else {
            throw CacheError(
                .noSuchItem,
                "there is no domain \"\(domain)\" in the store at \(cache.path); `chunkcache domain ls` lists them")
        }
        return info
    }

    /// The kernel reads ahead of a sequential reader at most `read_ahead_kb` of the mount's backing device
    /// (128 KiB by default); 4 MiB keeps several 1 MiB reads in flight. Only root may raise it: others keep
    /// the default.
    private static func raiseReadAhead(of mountPoint: String) {
        guard let canonical = try? FileSystem.canonicalPath(mountPoint), let mounted = MountTable.entry(at: canonical)
        else { return }
        let device = mounted.device
        guard let file = try? FileDescriptor.open("/sys/class/bdi/\(device)/read_ahead_kb", O_WRONLY) else { return }
        _ = try? file.closeAfter { try Array("4096\n".utf8).withUnsafeBytes { try file.writeAll($0) } }
    }

    /// libfuse's mount options: read-only unless `setfattr` may pin (`-o rw`), named after the store and domain.
    private static func fuseOptions(_ domain: String, _ cache: ChunkCache, _ options: MountOptions) -> [String] {
        var fuse = ["fsname=chunkcache:\(domain)", "subtype=chunkcache", "default_permissions"]
        if options.readOnly { fuse.append("ro") }
        if options.allowOther { fuse.append("allow_other") }
        return fuse.map { $0.replacingOccurrences(of: ",", with: "\\,") }
    }

    /// Runs `domain sync` every `interval` until cancelled; a failed sync is reported and tried again next time.
    private static func syncDomain(_ domain: String, of cache: ChunkCache, every interval: Duration) async {
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            guard !Task.isCancelled else { return }
            do {
                _ = try await cache.syncDomain(domain)
            } catch {
                FileHandle.standardError.write(
                    Data("chunkcache mount: domain sync of \"\(domain)\" failed: \(error)\n".utf8))
            }
        }
    }

    /// Runs `body` on a new thread and awaits it without holding a Swift concurrency thread.
    private static func onThreadOfItsOwn(named name: String, _ body: @escaping @Sendable () throws -> Void)
        async throws
    {
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<Void, any Error>) in
            let thread = Thread { done.resume(with: Result { try body() }) }
            thread.name = name
            thread.start()
        }
    }
}
