import FileIO
import Foundation
import TestSupport
import Testing

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
                    try await put(
                        cache, TestData.text(count: 10_000, seed: 1), as: ItemIdentifier(domain: "d", "a"), in: dir)
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

    /// Writes 1 MiB blocks to `path` until the filesystem is full.
    static func fill(_ path: String) {
        guard let file = fopen(path, "w") else { return }
        defer { fclose(file) }
        let block = [UInt8](repeating: 0xA5, count: 1 << 20)
        while fwrite(block, 1, block.count, file) == block.count, fflush(file) == 0 {}
    }

    static func freeBytes(_ path: String) throws -> Int64 {
        let fs = try FileSystem.filesystemStatus(path)
        return Int64(fs.f_bavail) * Int64(fs.f_frsize)
    }

    @Test(
        "§6 §12 disk full: a fetch of what the store holds still succeeds (its space reserve); a put is insufficientQuota with the store unchanged; once space returns everything works"
    )
    func fetchOnFullDisk() async throws {
        try await withTemporaryDirectory { dir in
            try await Self.withTmpfs(in: dir, size: "64m") { mount in
                let cache = try await makeCache(mount, maxSize: 1 << 30)
                #expect(FileManager.default.fileExists(atPath: cache.path + "/reserve"), "the reserve is made at open")
                let keep = TestData.text(count: 300_000, seed: 1)
                try await put(cache, keep, as: ItemIdentifier(domain: "d", "keep"), in: dir)
                Self.fill(mount + "/filler")
                #expect(try Self.freeBytes(mount) < 64 << 10, "the filesystem is full")
                let before = try await cache.statistics()
                let range = try await cache.fetchPartialContents(
                    for: ItemIdentifier(domain: "d", "keep"), version: nil,
                    minimalRange: ByteRange(location: 100_000, length: 100_000),
                    aligningTo: 4096)
                let got = try TestData.read(range.url.path, count: 400_000)
                #expect(
                    Array(got[Int(range.retrievedRange.location)..<Int(range.retrievedRange.end)])
                        == Array(keep[Int(range.retrievedRange.location)..<Int(range.retrievedRange.end)]))
                unlink(range.url.path)
                try TestData.write(TestData.random(count: 2 << 20, seed: 3), to: dir + "/more")
                #expect(
                    await errorCode {
                        _ = try await cache.put(fileAt: dir + "/more", as: ItemIdentifier(domain: "d", "more"))
                    } == .insufficientQuota)
                var after = try await cache.statistics()
                after.fileBytes = before.fileBytes
                #expect(after == before, "a failed put changes nothing")
                let report = try await cache.verify()
                #expect(report.corrupt.isEmpty && report.damagedRecords.isEmpty && report.inconsistencies.isEmpty)
                unlink(mount + "/filler")
                try await put(
                    cache, TestData.random(count: 2 << 20, seed: 3), as: ItemIdentifier(domain: "d", "more"), in: dir)
                let whole = try await cache.fetchContents(for: ItemIdentifier(domain: "d", "more"))
                #expect(try TestData.read(whole.url.path, count: 3 << 20) == TestData.random(count: 2 << 20, seed: 3))
                unlink(whole.url.path)
            }
        }
    }

    @Test(
        "§12 --min-free: a put that would leave less free is insufficientQuota before the filesystem is full, and changes nothing"
    )
    func putStopsAtMinFree() async throws {
        try await withTemporaryDirectory { dir in
            try await Self.withTmpfs(in: dir, size: "48m") { mount in
                let cache = try await makeCache(mount, maxSize: 1 << 30)
                try await cache.setMinimumFreeSpace(16 << 20)
                try await put(
                    cache, TestData.random(count: 4 << 20, seed: 1), as: ItemIdentifier(domain: "d", "small"), in: dir)
                let before = try await cache.statistics()
                try TestData.write(TestData.random(count: 40 << 20, seed: 2), to: dir + "/big")
                #expect(
                    await errorCode {
                        _ = try await cache.put(fileAt: dir + "/big", as: ItemIdentifier(domain: "d", "big"))
                    } == .insufficientQuota)
                let free = try Self.freeBytes(mount)
                #expect(free >= 12 << 20, "the put stopped before the filesystem filled: \(free) free")
                var after = try await cache.statistics()
                after.fileBytes = before.fileBytes
                #expect(after == before)
            }
        }
    }
}
