import Foundation
import Testing
import TestSupport
@testable import ChunkCache

/// A store on a small or read-only filesystem (a tmpfs the test mounts, as root).
@Suite(.enabled(if: getuid() == 0 && Capabilities.path(of: "mount") != nil, "needs root to mount a tmpfs"))
struct FilesystemLimitTests {
    /// Mounts a tmpfs of `size` at a new folder in `directory` for `body`, and unmounts it afterwards.
    static func withTmpfs<R>(in directory: String, size: String, _ body: (String) async throws -> R) async throws -> R {
        let mountPoint = directory + "/tmpfs"
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        try runTool("mount", "-t", "tmpfs", "-o", "size=\(size)", "tmpfs", mountPoint)
        defer { try? runTool("umount", "-l", mountPoint) }
        return try await body(mountPoint)
    }

    @Test("a full disk (ENOSPC) is insufficientQuota and the store keeps what it had")
    func fullDisk() async throws {
        try await withTemporaryDirectory { dir in
            try await Self.withTmpfs(in: dir, size: "12m") { mount in
                let cache = try await makeCache(mount, maxSize: 1 << 30)
                let keep = TestData.text(count: 200_000, seed: 1)
                try await put(cache, keep, as: ItemIdentifier(domain: "d", "keep"), in: dir)
                let before = try await cache.statistics()
                let input = dir + "/big"
                try TestData.write(TestData.random(count: 24 << 20, seed: 2), to: input)
                do {
                    _ = try await cache.put(fileAt: input, as: ItemIdentifier(domain: "d", "big"))
                    Issue.record("a put larger than the filesystem succeeded")
                } catch let error as CacheError {
                    #expect(error.code == .insufficientQuota, "\(error.detailedDescription())")
                }
                var after = try await cache.statistics()
                after.fileBytes = before.fileBytes
                #expect(after == before)
                // The disk is still full (LMDB keeps its file's size), so check the bytes in place.
                let report = try await cache.verify()
                #expect(report.corrupt.isEmpty && report.chunksChecked == before.chunks)
            }
        }
    }

    @Test("a store on a read-only filesystem is noPermission naming the store, not a crash")
    func readOnlyStore() async throws {
        try await withTemporaryDirectory { dir in
            try await Self.withTmpfs(in: dir, size: "16m") { mount in
                let storePath = try await {
                    let cache = try await makeCache(mount)
                    try await put(cache, TestData.text(count: 10_000, seed: 1), as: ItemIdentifier(domain: "d", "a"), in: dir)
                    return cache.path
                }()  // the cache closes its files here, or the filesystem could not become read-only
                try runTool("mount", "-o", "remount,ro", mount)
                do {
                    _ = try await ChunkCache.open(at: storePath)
                    Issue.record("opening a store on a read-only filesystem succeeded")
                } catch let error as CacheError {
                    #expect(error.code == .noPermission)
                    #expect(error.message.contains(storePath))
                }
                try runTool("mount", "-o", "remount,rw", mount)
                let reopened = try await ChunkCache.open(at: storePath)
                #expect(try await reopened.statistics().versions == 1)
            }
        }
    }
}
