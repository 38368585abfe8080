import FileIO
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ChunkCache

#if canImport(Glibc)
import Glibc
#endif

/// `fetch --out` writes each byte once: where the destination cannot share blocks with the store, the bytes
/// are assembled straight into a new file beside it, which gets its name only when complete.
@Suite struct DestinationTests {
    static let chunk = 65536

    /// A random chunk, 30 zero chunks, a text chunk: 32 chunks, 30 of them holes when fetched whole.
    static func sparseContent() -> [UInt8] {
        TestData.random(count: chunk, seed: 1) + [UInt8](repeating: 0, count: 30 * chunk)
            + TestData.text(count: chunk, seed: 2)
    }

    static func entries(_ directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
    }

    /// Whether the temp directory's filesystem lacks reflink (ext4, tmpfs): there the in-place route is taken.
    static var tempDirectoryCannotReflink: Bool {
        (try? withTemporaryDirectory { dir -> Bool in
            let a = try FileDescriptor.open(dir + "/a", O_RDWR | O_CREAT | O_EXCL)
            let b = try FileDescriptor.open(dir + "/b", O_RDWR | O_CREAT | O_EXCL)
            defer {
                try? a.close()
                try? b.close()
            }
            return !FileCloner.canReflink(from: a, to: b)
        }) ?? false
    }

    @Test(
        "§5 one write: without reflink --out is assembled in place: same bytes, holes kept, mode 0644, nothing else made",
        .enabled(if: tempDirectoryCannotReflink, "the temp directory's filesystem reflinks: the clone route applies"))
    func assembledInPlace() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "sparse")
            let bytes = Self.sparseContent()
            try await put(cache, bytes, as: id, in: dir)
            try FileSystem.makeDirectory(dir + "/out", mode: 0o755)
            let target = dir + "/out/copy"
            let mask = umask(0o022)
            umask(mask)

            let result = try await cache.fetchContents(for: id, destination: .clone(to: target, replaceExisting: false))
            #expect(result.cloneStrategy == nil, "nil: assembled in place, each byte written once (no copy from tmp/)")
            #expect(result.owner == .destination)
            #expect(result.url.path == target)
            #expect(result.flags == .knownSparseRanges)
            #expect(try readRange(target, ByteRange(location: 0, length: Int64(bytes.count))) == bytes)
            #expect(try fileSizes(target).size == Int64(bytes.count))
            #expect(
                try TestData.firstHole(in: target, atOrAfter: 0) == Int64(Self.chunk),
                "SEEK_HOLE: the zero chunks are a hole")
            #expect(try fileSizes(target).allocated < Int64(8 * Self.chunk))
            #expect(try FileSystem.status(target).st_mode & 0o777 == 0o644 & ~mask)
            #expect(try Self.entries(dir + "/out") == ["copy"], "no staging file beside the destination")
            #expect(try Self.entries(cache.temporaryDirectoryURL.path) == [], "nothing assembled in the store's tmp/")

            // --force replaces, again in place, and leaves nothing else.
            let replaced = try await cache.fetchPartialContents(
                for: id, version: nil, minimalRange: ByteRange(location: 0, length: 10), aligningTo: 4096,
                destination: .clone(to: target, replaceExisting: true))
            #expect(replaced.cloneStrategy == nil)
            #expect(try readRange(target, replaced.retrievedRange) == Array(bytes.prefix(Self.chunk)))
            #expect(try Self.entries(dir + "/out") == ["copy"])
        }
    }

    @Test(
        "§5 no-replace: an existing destination is fileExists and stays; one that appears during the fetch is not overwritten"
    )
    func existingDestination() async throws {
        try await withTemporaryDirectory { dir in
            let beforeNaming = ArmedProbe()
            let cache = try await makeCache(
                dir, probes: EngineProbes(inspectClone: { _ in beforeNaming.runWithoutThrowing() }))
            let id = ItemIdentifier(domain: "d", "doc")
            let bytes = TestData.random(count: 3 * Self.chunk + 5, seed: 3)
            try await put(cache, bytes, as: id, in: dir)
            try FileSystem.makeDirectory(dir + "/out", mode: 0o755)
            let target = dir + "/out/precious"
            try TestData.write(Array("precious".utf8), to: target)
            let refused = await errorCode {
                _ = try await cache.fetchContents(for: id, destination: .clone(to: target, replaceExisting: false))
            }
            #expect(refused == .fileExists)
            #expect(try TestData.read(target, count: 100) == Array("precious".utf8))
            #expect(try Self.entries(dir + "/out") == ["precious"])

            // Another writer takes the name between the check and the placement: it keeps it.
            let late = dir + "/out/late"
            beforeNaming.arm { try TestData.write(Array("theirs".utf8), to: late) }
            let raced = await errorCode {
                _ = try await cache.fetch(
                    id, version: nil, minimalRange: nil, alignment: 1, options: [], request: FetchRequest(),
                    destination: .clone(to: late, replaceExisting: false))
            }
            beforeNaming.arm(nil)
            #expect(raced == .fileExists)
            #expect(try TestData.read(late, count: 100) == Array("theirs".utf8))
            #expect(try Self.entries(dir + "/out") == ["late", "precious"])
            #expect(try Self.entries(cache.temporaryDirectoryURL.path) == [])
        }
    }

    @Test(
        "§5 failure rule: a fetch that fails mid-assembly (a damaged chunk) leaves no file at or beside the destination"
    )
    func failureMidAssembly() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "doc")
            let bytes = (1...4).flatMap { TestData.random(count: Self.chunk, seed: UInt64($0)) }
            try await put(cache, bytes, as: id, version: "v1", in: dir)
            try IntegrityTests.flipStoredByte(
                of: try IntegrityTests.digest(ofChunk: 2, item: id, version: "v1", in: cache), in: cache)
            try FileSystem.makeDirectory(dir + "/out", mode: 0o755)
            for replace in [false, true] {
                let code = await errorCode {
                    _ = try await cache.fetchContents(
                        for: id, destination: .clone(to: dir + "/out/copy", replaceExisting: replace))
                }
                #expect(code == .corruptData)
                #expect(try Self.entries(dir + "/out") == [], "nothing left behind (replaceExisting \(replace))")
                #expect(try Self.entries(cache.temporaryDirectoryURL.path) == [])
            }
        }
    }

    @Test(
        "§5 the named fallback (no O_TMPFILE): one locked .chunkcache- file while writing, none after success or failure",
        arguments: [false, true])
    func namedFallback(replaceExisting: Bool) throws {
        struct Failed: Error {}
        try withTemporaryDirectory { dir in
            try FileSystem.makeDirectory(dir + "/scratch", mode: 0o700)
            let target = dir + "/file"
            if replaceExisting { try TestData.write([1], to: target) }
            let bytes = TestData.random(count: 100_000, seed: 4)
            let destination = try Destination(path: target, replaceExisting: replaceExisting)
            let written = try destination.write(
                size: Int64(bytes.count), scratch: dir + "/scratch", strategies: Set(CloneStrategy.allCases),
                faults: DestinationFaults(namedStaging: true), inspect: nil
            ) { file in
                let staging = try Self.entries(dir).filter { $0.hasPrefix(".chunkcache-") }
                #expect(staging.count == 1)
                // The writer holds its lock: a sweep leaves the file alone.
                #expect(StagingFiles.removeAbandoned(in: dir) == 0)
                try bytes.withUnsafeBytes { try file.writeAll(toAbsoluteOffset: 0, $0) }
                return .complete
            }
            guard case .placed(let strategy) = written else {
                Issue.record("not placed: \(written)")
                return
            }
            #expect(strategy == nil || strategy == .reflink)
            #expect(try TestData.read(target, count: 200_000) == bytes)
            #expect(try Self.entries(dir) == ["file", "scratch"])

            #expect(throws: Failed.self) {
                _ = try Destination(path: dir + "/other", replaceExisting: replaceExisting).write(
                    size: 10, scratch: dir + "/scratch", strategies: Set(CloneStrategy.allCases),
                    faults: DestinationFaults(namedStaging: true), inspect: nil
                ) { _ in throw Failed() }
            }
            #expect(try Self.entries(dir) == ["file", "scratch"])
            #expect(try Self.entries(dir + "/scratch") == [])
        }
    }

    @Test("kill -9: a sweep removes staging files whose writer is gone, and nothing else")
    func sweepOfAbandonedStagingFiles() throws {
        try withTemporaryDirectory { dir in
            // A live writer's file: it holds the lock.
            let live = try PendingFile.create(in: dir, unnamed: false)
            defer { live.close() }
            let livePath = try #require(live.stagingPath)
            // A dead writer's file (as the code before this sweep left them), a FIFO and a symlink under the
            // prefix, and a user's file.
            try TestData.write([1, 2, 3], to: dir + "/.chunkcache-999999-abc")
            #expect(mkfifo(dir + "/.chunkcache-fifo", 0o600) == 0)
            #expect(symlink(dir + "/mine", dir + "/.chunkcache-link") == 0)
            try TestData.write([4], to: dir + "/mine")
            #expect(StagingFiles.removeAbandoned(in: dir) == 1)
            #expect(
                try Self.entries(dir)
                    == [
                        ".chunkcache-fifo", ".chunkcache-link", URL(fileURLWithPath: livePath).lastPathComponent,
                        "mine",
                    ].sorted())
        }
    }
}
