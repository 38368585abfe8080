import FileIO
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ChunkCache

/// Clones to a caller's destination: every strategy gives the same bytes and keeps holes.
@Suite struct CloneTests {
    static let chunk = 65536

    static func sparseContent() -> [UInt8] {
        TestData.random(count: chunk, seed: 1) + [UInt8](repeating: 0, count: 32 * chunk)
            + TestData.text(count: chunk, seed: 2)
    }

    @Test(
        "B3 §5: clone by copy_file_range and by read/write: same bytes, holes kept, store temp removed",
        arguments: [FileIO.CloneStrategy.copyRange, FileIO.CloneStrategy.readWrite])
    func fallbackStrategies(strategy: FileIO.CloneStrategy) async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir, probes: EngineProbes(cloneStrategies: [strategy]))
            let id = ItemIdentifier(domain: "d", "sparse")
            let bytes = Self.sparseContent()
            try await put(cache, bytes, as: id, in: dir)
            let target = dir + "/out-\(strategy.rawValue)"
            let result = try await cache.fetch(
                id, version: nil, minimalRange: nil, alignment: 1, options: [], request: FetchRequest(),
                destination: .clone(to: target, replaceExisting: false))
            #expect(result.cloneStrategy == strategy)
            #expect(result.owner == .destination)
            #expect(result.url.path == target)
            #expect(try readRange(target, ByteRange(location: 0, length: Int64(bytes.count))) == bytes)
            #expect(try fileSizes(target).size == Int64(bytes.count))
            #expect(try fileSizes(target).allocated < Int64(8 * Self.chunk), "the zero chunks stay holes")
            #expect(try FileManager.default.contentsOfDirectory(atPath: cache.temporaryDirectoryURL.path).isEmpty)
            let existing = await errorCode {
                _ = try await cache.fetchContents(for: id, destination: .clone(to: target, replaceExisting: false))
            }
            #expect(existing == .fileExists)
            let replaced = try await cache.fetchContents(
                for: id, destination: .clone(to: target, replaceExisting: true))
            #expect(replaced.url.path == target)
            // The caller's copy is independent of the store (H1): changing it leaves the store's bytes alone.
            try TestData.write([1, 2, 3], to: target)
            let again = try await cache.fetchContents(for: id)
            #expect(try readRange(again.url.path, again.retrievedRange) == bytes)
        }
    }

    @Test("a destination in a missing folder is invalidArgument naming it")
    func missingFolder() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "a")
            try await put(cache, TestData.text(count: 1000, seed: 1), as: id, in: dir)
            do {
                _ = try await cache.fetchContents(
                    for: id, destination: .clone(to: dir + "/no/such/file", replaceExisting: false))
                Issue.record("clone into a missing folder succeeded")
            } catch let error as CacheError {
                #expect(error.code == .invalidArgument)
                #expect(error.message.contains(dir + "/no/such"))
            }
        }
    }

    @Test(
        "§5 reflink: on an XFS loop mount the clone shares extents with the store's file and the bytes match",
        .enabled(if: Capabilities.canMountXFS, "needs root, mkfs.xfs and a loop device"))
    func reflinkOnXFS() async throws {
        try await withTemporaryDirectory { dir in
            let mount = try XFSMount(in: dir)
            defer { mount.unmount() }
            // Extents are shared while both files exist: look before the engine removes its temp.
            let seen = Mutex<(shared: Int, total: Int)?>(nil)
            let cache = try await makeCache(
                mount.path, probes: EngineProbes(inspectClone: { fd in seen.withLock { $0 = try? fd.sharedExtents() } })
            )
            let id = ItemIdentifier(domain: "d", "blob")
            let bytes = TestData.random(count: 4 << 20, seed: 5)
            try await put(cache, bytes, as: id, in: mount.path)
            let target = mount.path + "/clone"
            let clone = try await cache.fetch(
                id, version: nil, minimalRange: nil, alignment: 1, options: [], request: FetchRequest(),
                destination: .clone(to: target, replaceExisting: false))
            #expect(clone.cloneStrategy == .reflink)
            #expect(try readRange(target, ByteRange(location: 0, length: Int64(bytes.count))) == bytes)
            let extents = try #require(seen.withLock { $0 })
            #expect(extents.shared > 0 && extents.shared == extents.total, "FIEMAP reports shared extents: \(extents)")
        }
    }
}
