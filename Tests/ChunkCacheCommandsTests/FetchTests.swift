import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A requested range and, for the table, why it is interesting.
struct RangeCase: Sendable, CustomTestStringConvertible {
    var start: Int64
    var length: Int64
    var why: String

    var testDescription: String { "\(start):\(length) (\(why))" }
    var argument: String { "\(start):\(length)" }
}

/// The retrieved range §3 prescribes: clamp to `[0, size]`, then round out to `max(alignment, chunkSize)`,
/// the end capped at `size`.
func expectedRetrievedRange(start: Int64, length: Int64, alignment: Int64, chunkSize: Int64, size: Int64) -> Span {
    let lower = min(max(start, 0), size)
    let upper = max(lower, min(start + length, size))
    let unit = max(alignment, chunkSize)
    let location = lower / unit * unit
    let end = min((upper + unit - 1) / unit * unit, size)
    return Span(location, end - location)
}

/// Checks A1–A6 for one fetch result against the item's bytes.
func expectFetchRules(
    _ json: [String: Any], content: [UInt8], start: Int64, length: Int64, alignment: Int64,
    sourceLocation: SourceLocation = #_sourceLocation
) throws {
    let size = Int64(content.count)
    let range = try json.retrievedRange(sourceLocation: sourceLocation)
    let path = try json.string("path", sourceLocation: sourceLocation)
    #expect(
        range.location % alignment == 0, "A1: \(range) is not aligned to \(alignment)", sourceLocation: sourceLocation)
    #expect(
        range.length % alignment == 0 || range.end == size, "A2: \(range) of \(size)", sourceLocation: sourceLocation)
    let clampedStart = min(max(start, 0), size)
    let clampedEnd = max(clampedStart, min(start + length, size))
    #expect(
        range.location <= clampedStart && range.end >= clampedEnd, "A3: \(range) misses \(start):\(length)",
        sourceLocation: sourceLocation)
    #expect(range.end <= size, "\(range) runs past EOF \(size)", sourceLocation: sourceLocation)
    #expect(
        try TestData.status(path).st_size == size, "A6: the file has the item's length", sourceLocation: sourceLocation)
    let read = try TestData.read(path, offset: range.location, count: Int(range.length))
    #expect(
        read == content.slice(range.location, range.length), "A5: bytes of \(range) differ",
        sourceLocation: sourceLocation)
}

@Suite("§3–§5 fetch through the CLI")
struct FetchTests {
    /// 1 MiB + 12345 bytes: text, then random, so both compressed and raw chunks are read.
    static let content: [UInt8] =
        TestData.text(count: 600_000, seed: 11) + TestData.random(count: 1_048_576 + 12345 - 600_000, seed: 12)

    static let ranges: [RangeCase] = [
        RangeCase(start: 0, length: 1, why: "first byte"),
        RangeCase(start: 65535, length: 2, why: "straddles a chunk boundary"),
        RangeCase(start: 65536, length: 65536, why: "exactly one chunk"),
        RangeCase(start: 100_000, length: 300_000, why: "several chunks, text and random"),
        RangeCase(start: 1_048_576, length: 12345, why: "the partial last chunk"),
        RangeCase(start: 1_060_000, length: 999_999, why: "runs past EOF"),
        RangeCase(start: 2_000_000, length: 10, why: "starts past EOF (A15)"),
        RangeCase(start: 0, length: 1_060_921, why: "the whole file"),
    ]

    @Test("A1–A6 fetched bytes sit at their own offsets, default alignment 4096", arguments: ranges)
    func fetchedBytesAtOffsets(range: RangeCase) throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            try TestData.write(Self.content, to: dir + "/file")
            try runJSON(store, ["put", "--domain", "d", "doc", dir + "/file", "--version", "v1"])
            let json = try runJSON(store, ["fetch", "--domain", "d", "doc", "--range", range.argument])
            try expectItemObject(
                json["item"], domain: "d", id: "doc", size: Int64(Self.content.count), contentVersion: "v1")
            try expectFetchRules(json, content: Self.content, start: range.start, length: range.length, alignment: 4096)
            // §3 and §7: without --align the alignment is 4096, so on a 64 KiB store the unit is 64 KiB.
            #expect(
                try json.retrievedRange()
                    == expectedRetrievedRange(
                        start: range.start, length: range.length, alignment: 4096, chunkSize: defaultChunkSize,
                        size: Int64(Self.content.count)))
        }
    }

    /// A store chunk size and an alignment to fetch with.
    struct Geometry: Sendable, CustomTestStringConvertible {
        var chunkSize: Int64
        var alignment: Int64
        var testDescription: String { "chunks \(chunkSize), --align \(alignment)" }
    }

    static let geometries: [Geometry] = [4096, 65536].flatMap { chunk in
        [1, 4096, 16384, 1 << 20].map { Geometry(chunkSize: chunk, alignment: $0) }
    }

    @Test(
        "A1 A2 A3 retrieved range follows §3 for alignments smaller and larger than the chunk size",
        arguments: geometries)
    func alignmentRules(geometry: Geometry) throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            try runJSON(store, ["init", "--chunk-size", String(geometry.chunkSize)])
            try TestData.write(Self.content, to: dir + "/file")
            try runJSON(store, ["put", "--domain", "d", "doc", dir + "/file"])
            for range in [Self.ranges[1], Self.ranges[3], Self.ranges[5], Self.ranges[6]] {
                let json = try runJSON(
                    store,
                    ["fetch", "--domain", "d", "doc", "--range", range.argument, "--align", String(geometry.alignment)])
                try expectFetchRules(
                    json, content: Self.content, start: range.start, length: range.length, alignment: geometry.alignment
                )
                #expect(
                    try json.retrievedRange()
                        == expectedRetrievedRange(
                            start: range.start, length: range.length, alignment: geometry.alignment,
                            chunkSize: geometry.chunkSize,
                            size: Int64(Self.content.count)), "\(range)")
            }
        }
    }

    @Test("§7 --range without --align aligns to 4096 on a 4 KiB-chunk store")
    func defaultAlignmentIs4096() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            try runJSON(store, ["init", "--chunk-size", "4KiB"])
            try TestData.write(Self.content, to: dir + "/file")
            try runJSON(store, ["put", "--domain", "d", "doc", dir + "/file"])
            let json = try runJSON(store, ["fetch", "--domain", "d", "doc", "--range", "10000:5000"])
            #expect(try json.retrievedRange() == Span(8192, 8192))
            let aligned = try runJSON(
                store, ["fetch", "--domain", "d", "doc", "--range", "10000:5000", "--align", "64KiB"])
            #expect(try aligned.retrievedRange() == Span(0, 65536))
        }
    }

    @Test("A14 zero-length file fetch returns {0,0} and an empty file")
    func zeroLengthFile() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            try TestData.write([], to: dir + "/empty")
            let put = try runJSON(store, ["put", "--domain", "d", "empty", dir + "/empty"])
            #expect(try put.int("chunks") == 0)
            #expect(try put.int("newChunks") == 0)
            for extra in [[], ["--range", "0:4096"], ["--range", "100:1", "--align", "1"]] {
                let json = try runJSON(store, ["fetch", "--domain", "d", "empty"] + extra)
                #expect(try json.retrievedRange() == Span(0, 0), "\(extra)")
                #expect(try json.flags() == [])
                try expectItemObject(json["item"], domain: "d", id: "empty", size: 0)
                #expect(try TestData.status(try json.string("path")).st_size == 0)
            }
        }
    }

    /// Eight 64 KiB chunks less 1000 bytes: random, hole, hole, written zeros, text, hole, hole, short hole.
    static func sparseContent(at path: String) throws -> [UInt8] {
        try TestData.writeSparse(
            to: path, length: 8 * 65536 - 1000,
            pieces: [
                (0, TestData.random(count: 65536, seed: 21)),
                (3 * 65536, [UInt8](repeating: 0, count: 65536)),
                (4 * 65536, TestData.text(count: 65536, seed: 22)),
            ])
    }

    @Test("A7 A8 zero chunks: a full fetch keeps holes with knownSparseRanges, a partial range gets real zeros")
    func zeroChunks() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            let content = try Self.sparseContent(at: dir + "/sparse")
            let size = Int64(content.count)
            let put = try runJSON(store, ["put", "--domain", "d", "disk.img", dir + "/sparse"])
            #expect(try put.int("chunks") == 8)
            #expect(try put.int("zeroChunks") == 6)
            #expect(try put.int("newChunks") == 2)

            let whole = try runJSON(store, ["fetch", "--domain", "d", "disk.img"])
            let wholePath = try whole.string("path")
            #expect(try whole.retrievedRange() == Span(0, size), "A4")
            #expect(try whole.flags() == ["knownSparseRanges"], "§4: a whole file with zero chunks")
            #expect(try TestData.read(wholePath, count: content.count + 1) == content)
            #expect(
                try TestData.firstHole(in: wholePath, atOrAfter: 0) == 65536,
                "zero chunks stay holes in a whole-file fetch")
            #expect(Int64(try TestData.status(wholePath).st_blocks) * 512 < size)

            // A7 and A8: a partial range holding zero chunks has real zeros and no flag.
            for (range, expected) in [
                ("70000:200000", Span(65536, 262144)), ("131072:65536", Span(131072, 65536)),
                ("400000:10", Span(393216, 65536)),
            ] {
                let json = try runJSON(store, ["fetch", "--domain", "d", "disk.img", "--range", range])
                let path = try json.string("path")
                let retrieved = try json.retrievedRange()
                #expect(retrieved == expected)
                #expect(try json.flags() == [], "A8: \(range) is not the whole file")
                #expect(
                    try TestData.firstHole(in: path, atOrAfter: retrieved.location) >= retrieved.end,
                    "A7: a hole inside \(retrieved)")
                #expect(
                    try TestData.read(path, offset: retrieved.location, count: Int(retrieved.length))
                        == content.slice(retrieved.location, retrieved.length))
            }

            // A range that covers the whole file is the whole file (A4): holes and the flag again.
            let covering = try runJSON(store, ["fetch", "--domain", "d", "disk.img", "--range", "0:\(size)"])
            #expect(try covering.retrievedRange() == Span(0, size))
            #expect(try covering.flags() == ["knownSparseRanges"])

            // A file without zero chunks never gets the flag.
            try TestData.write(TestData.random(count: 100_000, seed: 23), to: dir + "/dense")
            try runJSON(store, ["put", "--domain", "d", "dense", dir + "/dense"])
            #expect(try runJSON(store, ["fetch", "--domain", "d", "dense"]).flags() == [])
        }
    }

    @Test("§5 fetch --out keeps holes and leaves no temp file behind")
    func outKeepsHoles() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            let content = try Self.sparseContent(at: dir + "/sparse")
            try runJSON(store, ["put", "--domain", "d", "disk.img", dir + "/sparse"])
            let json = try runJSON(store, ["fetch", "--domain", "d", "disk.img", "--out", dir + "/copy"])
            #expect(try json.string("path") == dir + "/copy")
            #expect(try json.string("owner") == "destination")
            #expect(try json.flags() == ["knownSparseRanges"])
            #expect(try TestData.read(dir + "/copy", count: content.count + 1) == content)
            #expect(Int64(try TestData.status(dir + "/copy").st_blocks) * 512 < Int64(content.count), "holes kept")
            #expect(try TestData.firstHole(in: dir + "/copy", atOrAfter: 0) == 65536, "SEEK_HOLE finds the zero chunks")
            // Each byte written once: shared blocks (reflink) or assembled in place (no cloneStrategy), never a copy.
            #expect([nil, "reflink"].contains(json["cloneStrategy"] as? String), "\(json)")
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: store + "/tmp") == [],
                "the engine removed its own temp")
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == ["copy", "sparse", "store"],
                "no staging file left")
        }
    }

    @Test("§5 fetch --out of an existing file is fileExists without --force and replaces it with --force")
    func outExistingFile() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            let content = TestData.random(count: 150_000, seed: 31)
            try TestData.write(content, to: dir + "/file")
            try runJSON(store, ["put", "--domain", "d", "doc", dir + "/file"])
            let destination = dir + "/dest"
            try TestData.write(Array("precious".utf8), to: destination)

            let refused = try runCLI([
                "--store", store, "--json", "fetch", "--domain", "d", "doc", "--out", destination,
            ])
            expectError(refused, exit: 1, code: "fileExists", mentions: [destination])
            #expect(
                try TestData.read(destination, count: 100) == Array("precious".utf8), "the destination is untouched")

            let partial = try runCLI([
                "--store", store, "--json", "fetch", "--domain", "d", "doc", "--out", destination, "--range", "0:10",
            ])
            expectError(partial, exit: 1, code: "fileExists", mentions: [destination])

            let replaced = try runJSON(store, ["fetch", "--domain", "d", "doc", "--out", destination, "--force"])
            #expect(try replaced.string("owner") == "destination")
            #expect(try TestData.read(destination, count: 200_000) == content)
            #expect(try FileManager.default.contentsOfDirectory(atPath: store + "/tmp") == [])
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == ["dest", "file", "store"])
        }
    }

    @Test("B1 B4 §5 hand-off files are unique, mode 0600, regular files in the store's tmp/")
    func handOffFiles() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            let content = TestData.random(count: 70_000, seed: 41)
            try TestData.write(content, to: dir + "/file")
            try runJSON(store, ["put", "--domain", "d", "doc", dir + "/file"])
            let first = try runJSON(store, ["fetch", "--domain", "d", "doc"])
            let second = try runJSON(store, ["fetch", "--domain", "d", "doc"])
            let paths = [try first.string("path"), try second.string("path")]
            #expect(paths[0] != paths[1], "B4")
            for path in paths {
                #expect(URL(fileURLWithPath: path).deletingLastPathComponent().path == store + "/tmp", "B1")
                let st = try TestData.status(path)
                #expect(st.st_mode & S_IFMT == S_IFREG)
                #expect(st.st_mode & 0o777 == 0o600)
                #expect(try TestData.read(path, count: 100_000) == content)
            }
            #expect(
                Set(try FileManager.default.contentsOfDirectory(atPath: store + "/tmp").map { store + "/tmp/" + $0 })
                    == Set(paths))
        }
    }

    @Test("A12 A13 B6 the newest version by default, an older one on request, the newest for an unknown one")
    func versionSelection() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            let old = TestData.random(count: 100_000, seed: 51)
            let new = TestData.text(count: 180_000, seed: 52)
            try TestData.write(old, to: dir + "/old")
            try TestData.write(new, to: dir + "/new")
            try runJSON(store, ["put", "--domain", "d", "doc", dir + "/old", "--version", "v1"])
            try runJSON(store, ["put", "--domain", "d", "doc", dir + "/new", "--version", "v2"])

            let newest = try runJSON(store, ["fetch", "--domain", "d", "doc"])
            try expectItemObject(newest["item"], domain: "d", id: "doc", size: 180_000, contentVersion: "v2")
            #expect(try TestData.read(try newest.string("path"), count: 200_000) == new)

            for strict in [[], ["--strict"]] {
                let older = try runJSON(store, ["fetch", "--domain", "d", "doc", "--version", "v1"] + strict)
                try expectItemObject(older["item"], domain: "d", id: "doc", size: 100_000, contentVersion: "v1")
                #expect(try TestData.read(try older.string("path"), count: 200_000) == old)
                let olderRange = try runJSON(
                    store, ["fetch", "--domain", "d", "doc", "--version", "v1", "--range", "90000:20000"] + strict)
                try expectItemObject(olderRange["item"], domain: "d", id: "doc", size: 100_000, contentVersion: "v1")
                try expectFetchRules(olderRange, content: old, start: 90000, length: 20000, alignment: 4096)
            }

            let unknown = try runJSON(store, ["fetch", "--domain", "d", "doc", "--version", "v9", "--range", "0:10"])
            try expectItemObject(unknown["item"], domain: "d", id: "doc", size: 180_000, contentVersion: "v2")
            try expectFetchRules(unknown, content: new, start: 0, length: 10, alignment: 4096)
            // Two puts, and the first fetch's last use (§11; later fetches within a minute record none).
            #expect(try unknown.domainVersion() == 3)
        }
    }
}
