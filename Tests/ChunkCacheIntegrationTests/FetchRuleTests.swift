import Foundation
import SeededRandom
import TestSupport
import Testing

@testable import ChunkCache

/// Fetches through the real store checked against the original bytes.
@Suite struct FetchRuleTests {
    /// Checks one partial-fetch result against the original bytes and every rule that applies.
    static func checkPartial(
        _ result: FetchResult, original: [UInt8], minimal: ByteRange, alignment: Int64, context: String
    ) throws {
        let size = Int64(original.count)
        let r = result.retrievedRange
        #expect(r.location % alignment == 0, "A1 \(context) → \(r)")
        #expect(r.length % alignment == 0 || r.end == size, "A2 \(context) → \(r)")
        let start = min(minimal.location, size)
        let end = min(minimal.location + minimal.length, size)
        #expect(r.location <= start && r.end >= end, "A3 \(context) → \(r)")
        let path = result.url.path
        let sizes = try fileSizes(path)
        #expect(sizes.size == size, "temp file has the item's full length \(context)")
        #expect(sizes.size >= r.end, "A6 \(context)")
        #expect(result.item.documentSize == size, "A13 \(context)")
        let bytes = try readRange(path, r)
        #expect(bytes == Array(original[Int(r.location)..<Int(r.end)]), "A5 \(context)")
        let whole = r.location == 0 && r.length == size
        if !whole && r.length > 0 {
            #expect(
                try TestData.firstHole(in: path, atOrAfter: r.location) >= r.end, "A7 no holes inside \(context) → \(r)"
            )
            #expect(result.flags.isEmpty, "A8 \(context)")
        }
        // A4: a request covering the whole file gets exactly the whole file back.
        if start == 0 && end == size { #expect(r == ByteRange(location: 0, length: size), "A4 \(context)") }
        if size == 0 { #expect(r == ByteRange(location: 0, length: 0), "A14 \(context)") }
    }

    @Test(
        "A1–A7 A13–A15: thousands of drawn ranges against the original bytes, zero chunks included",
        arguments: [4096, 16384, 65536])
    func drawnRangesMatchTheOriginal(chunkSize: Int) async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir, chunkSize: chunkSize)
            var rng = SplitMix64(seed: UInt64(chunkSize))
            let sizes = [0, 1, chunkSize - 1, chunkSize, chunkSize + 1, 7 * chunkSize + 123, 33 * chunkSize]
            var files: [(ItemIdentifier, [UInt8])] = []
            for (i, size) in sizes.enumerated() {
                let bytes = TestData.mixed(count: size, chunkSize: chunkSize, seed: rng.next())
                let id = ItemIdentifier(domain: "d", "file\(i)")
                try await put(cache, bytes, as: id, in: dir)
                files.append((id, bytes))
            }
            for caseNumber in 0..<1000 {
                let (id, bytes) = files[Int(rng.next() % UInt64(files.count))]
                let size = Int64(bytes.count)
                let alignment = Int64(1) << Int64(rng.next() % 21)
                let location =
                    rng.next() % 5 == 0
                    ? Int64(rng.next() % UInt64(size * 2 + 10)) : Int64(rng.next() % UInt64(size + 1))
                let length = Int64(rng.next() % UInt64(max(1, size / 2) + Int64(chunkSize)))
                let minimal = ByteRange(location: location, length: length)
                let result = try await cache.fetchPartialContents(
                    for: id, version: nil, minimalRange: minimal, aligningTo: Int(alignment))
                try Self.checkPartial(
                    result, original: bytes, minimal: minimal, alignment: alignment,
                    context: "case \(caseNumber) \(id) size \(size) \(minimal) align \(alignment)")
                unlink(result.url.path)
            }
        }
    }

    @Test(
        "A7 A8: a whole-file result keeps zero chunks as holes and says knownSparseRanges; a partial one writes zeros")
    func zeroChunksAndSparseFlag() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let chunk = 65536
            let bytes =
                TestData.random(count: chunk, seed: 1) + [UInt8](repeating: 0, count: 4 * chunk)
                + TestData.random(count: chunk, seed: 2)
            let id = ItemIdentifier(domain: "d", "sparse")
            let put = try await put(cache, bytes, as: id, in: dir)
            #expect(put.zeroChunks == 4)
            let full = try await cache.fetchContents(for: id)
            #expect(full.flags == .knownSparseRanges)
            #expect(full.retrievedRange == ByteRange(location: 0, length: Int64(bytes.count)))
            #expect(try readRange(full.url.path, full.retrievedRange) == bytes)
            #expect(
                try fileSizes(full.url.path).allocated <= Int64(3 * chunk),
                "zero chunks are holes in a whole-file result")
            let partial = try await cache.fetchPartialContents(
                for: id, version: nil, minimalRange: ByteRange(location: Int64(chunk), length: Int64(2 * chunk)),
                aligningTo: 4096)
            #expect(partial.flags.isEmpty)
            #expect(
                try TestData.firstHole(in: partial.url.path, atOrAfter: Int64(chunk)) >= Int64(3 * chunk),
                "zeros are real inside the range")
            #expect(try readRange(partial.url.path, partial.retrievedRange) == Array(bytes[chunk..<(3 * chunk)]))
        }
    }

    @Test("A9: outside the retrieved range the temp file is holes, never bytes that could pass for content")
    func outsideTheRangeIsHoles() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "big")
            try await put(cache, TestData.random(count: 64 * 65536, seed: 11), as: id, in: dir)
            let result = try await cache.fetchPartialContents(
                for: id, version: nil, minimalRange: ByteRange(location: 20 * 65536 + 100, length: 1000),
                aligningTo: 4096)
            let r = result.retrievedRange
            #expect(r == ByteRange(location: 20 * 65536, length: 65536))
            let fd = open(result.url.path, O_RDONLY)
            defer { close(fd) }
            #expect(Int64(lseek(fd, 0, 3 /* SEEK_DATA */)) == r.location, "no data before the range")
            #expect(Int64(lseek(fd, off_t(r.end), 3 /* SEEK_DATA */)) == -1, "no data after the range")
            #expect(try fileSizes(result.url.path).allocated <= r.length + 65536)
        }
    }

    @Test("A8: a file without zero chunks returned whole carries no flags")
    func noZeroChunksNoFlag() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "dense")
            try await put(cache, TestData.text(count: 200_000, seed: 3), as: id, in: dir)
            #expect(try await cache.fetchContents(for: id).flags.isEmpty)
        }
    }

    @Test("A14: a zero-length file gives {0,0} and an empty file")
    func emptyFile() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "empty")
            let put = try await put(cache, [], as: id, in: dir)
            #expect(put.chunks == 0)
            let result = try await cache.fetchPartialContents(
                for: id, version: nil, minimalRange: ByteRange(location: 100, length: 10), aligningTo: 4096)
            #expect(result.retrievedRange == ByteRange(location: 0, length: 0))
            #expect(try fileSizes(result.url.path).size == 0)
        }
    }

    @Test("A10 A11 A12 B6: strict fetches serve the requested version or fail; others report the version served")
    func versionRules() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "doc")
            let v1 = TestData.text(count: 300_000, seed: 1)
            let v2 = TestData.text(count: 310_000, seed: 2)
            try await put(cache, v1, as: id, version: "v1", in: dir)
            try await put(cache, v2, as: id, version: "v2", in: dir)
            let range = ByteRange(location: 70_000, length: 1000)
            let old = try await cache.fetchPartialContents(
                for: id, version: ItemVersion("v1"), minimalRange: range, aligningTo: 4096, options: .strictVersioning)
            #expect(old.item.itemVersion.contentVersionString == "v1")
            #expect(
                try readRange(old.url.path, old.retrievedRange)
                    == Array(v1[Int(old.retrievedRange.location)..<Int(old.retrievedRange.end)]))
            let strictMiss = await errorCode {
                _ = try await cache.fetchPartialContents(
                    for: id, version: ItemVersion("gone"), minimalRange: range, aligningTo: 4096,
                    options: .strictVersioning)
            }
            #expect(strictMiss == .versionNoLongerAvailable)
            let fallback = try await cache.fetchPartialContents(
                for: id, version: ItemVersion("gone"), minimalRange: range, aligningTo: 4096)
            #expect(
                fallback.item.itemVersion.contentVersionString == "v2", "A12 the newest version is served and reported")
            #expect(fallback.item.documentSize == Int64(v2.count), "A13")
            #expect(
                try readRange(fallback.url.path, fallback.retrievedRange)
                    == Array(v2[Int(fallback.retrievedRange.location)..<Int(fallback.retrievedRange.end)]))
            let latest = try await cache.fetchContents(for: id)
            #expect(latest.item.itemVersion.contentVersionString == "v2", "B6 nil means the newest")
            #expect(try readRange(latest.url.path, latest.retrievedRange) == v2)
        }
    }

    @Test("C2: noSuchItem only for unknown domains and items; folders are invalidArgument")
    func unknownThings() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            try await put(cache, TestData.text(count: 1000, seed: 1), as: ItemIdentifier(domain: "d", "a"), in: dir)
            #expect(
                await errorCode { _ = try await cache.fetchContents(for: ItemIdentifier(domain: "nope", "a")) }
                    == .noSuchItem)
            #expect(
                await errorCode { _ = try await cache.fetchContents(for: ItemIdentifier(domain: "d", "nope")) }
                    == .noSuchItem)
            #expect(
                await errorCode {
                    _ = try await cache.fetchPartialContents(
                        for: ItemIdentifier(domain: "d", "a"), version: nil,
                        minimalRange: ByteRange(location: -1, length: 5), aligningTo: 4096)
                } == .invalidArgument)
            #expect(
                await errorCode {
                    _ = try await cache.fetchPartialContents(
                        for: ItemIdentifier(domain: "d", "a"), version: nil,
                        minimalRange: ByteRange(location: 0, length: 5), aligningTo: 3)
                } == .invalidArgument)
        }
    }

    @Test("§3: a process on the domain's non-materializing list gets noPermission and nothing is written")
    func nonMaterializingProcess() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "a")
            try await put(cache, TestData.text(count: 100_000, seed: 1), as: id, in: dir)
            let before = try await cache.domainVersion(of: "d")
            let after = try await cache.setNonMaterializingProcesses(["Spotlight"], forDomain: "d")
            #expect(after > before, "E3 a domain metadata change bumps its version")
            let denied = await errorCode {
                _ = try await cache.fetchContents(for: id, request: FetchRequest(requestingProcess: "Spotlight"))
            }
            #expect(denied == .noPermission)
            #expect(try FileManager.default.contentsOfDirectory(atPath: cache.temporaryDirectoryURL.path).isEmpty)
            let other = try await cache.fetchContents(for: id, request: FetchRequest(requestingProcess: "spotlight"))
            #expect(other.retrievedRange.length == 100_000, "the match is exact and case-sensitive")
        }
    }

    @Test("B1 B4: hand-off files are unique 0600 regular files in the store's tmp/")
    func handOffFiles() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "a")
            try await put(cache, TestData.text(count: 100_000, seed: 1), as: id, in: dir)
            var paths = Set<String>()
            for _ in 0..<20 {
                let result = try await cache.fetchContents(for: id)
                #expect(result.owner == .caller)
                #expect(
                    result.url.deletingLastPathComponent().standardizedFileURL.path
                        == cache.temporaryDirectoryURL.standardizedFileURL.path)
                var st = stat()
                #expect(stat(result.url.path, &st) == 0)
                #expect(st.st_mode & 0o777 == 0o600)
                #expect(st.st_mode & S_IFMT == S_IFREG)
                paths.insert(result.url.path)
            }
            #expect(paths.count == 20)
        }
    }

    @Test("B2 B5: a fresh hand-off survives other opens; old leftovers are swept on open and by sweep")
    func sweepRespectsGrace() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "a")
            let bytes = TestData.text(count: 100_000, seed: 1)
            try await put(cache, bytes, as: id, in: dir)
            let fresh = try await cache.fetchContents(for: id)
            let old = try await cache.fetchContents(for: id)
            var times = [timespec(tv_sec: 1_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000, tv_nsec: 0)]
            #expect(utimensat(AT_FDCWD, old.url.path, &times, 0) == 0)
            _ = try await ChunkCache.open(at: cache.path)  // another opener: sweeps only what is past the grace period
            #expect(FileManager.default.fileExists(atPath: fresh.url.path))
            #expect(!FileManager.default.fileExists(atPath: old.url.path))
            #expect(try readRange(fresh.url.path, fresh.retrievedRange) == bytes, "B2 the hand-off is untouched")
            #expect(await cache.sweep() == 0)
            #expect(await cache.sweep(all: true) == 1)
        }
    }
}
