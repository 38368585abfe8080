import Foundation
import Testing

@testable import ChunkCache

/// The stored form of a trace and its extent lists (CONTRACT §15): exact round trips, bounds that hold, and a
/// size well under 1 % of what a trace describes.
@Suite("Trace records")
struct TraceRecordTests {
    static func run(_ reads: [(String, Int64, Int64)]) -> TraceRun {
        var run = TraceRun(leader: reads[0].0)
        for (item, offset, length) in reads { run.note(item, TraceExtent(offset: offset, length: length)) }
        return run
    }

    @Test("§15: a trace record decodes to what was encoded, identifiers sharing prefixes")
    func roundTrip() throws {
        let record = TraceRecord(
            learning: Self.run([
                ("pkg/django/__init__.py", 0, 900), ("pkg/django/apps/config.py", 0, 12_000),
                ("pkg/db.sqlite", 1 << 30, 4096), ("pkg/db.sqlite", 4096, 8192),
            ]), at: 1_700_000_000)
        let bytes = record.encoded()
        let decoded = try bytes.withUnsafeBytes { try TraceRecord(decoding: $0, name: "a trace") }
        #expect(decoded == record)
        #expect(
            decoded.members.map(\.item) == ["pkg/django/__init__.py", "pkg/django/apps/config.py", "pkg/db.sqlite"])
        #expect(
            decoded.members[2].extents == [.init(offset: 1 << 30, length: 4096), .init(offset: 4096, length: 8192)])
        var damaged = bytes
        damaged[3] ^= 1
        #expect(throws: CacheError.self) {
            try damaged.withUnsafeBytes { try TraceRecord(decoding: $0, name: "a trace") }
        }
    }

    @Test("§15: reads in order leave one extent; scattered ones stay within the bound, covering every read")
    func extentsBounded() {
        var sequential: [TraceExtent] = []
        for offset in stride(from: Int64(0), to: 1 << 20, by: 4096) {
            TraceExtents.note(TraceExtent(offset: offset, length: 4096), in: &sequential)
        }
        #expect(sequential == [TraceExtent(offset: 0, length: 1 << 20)])
        var scattered: [TraceExtent] = []
        let offsets = (0..<1000).map { Int64(($0 * 7919) % 1000) << 20 }
        for offset in offsets { TraceExtents.note(TraceExtent(offset: offset, length: 4096), in: &scattered) }
        #expect(scattered.count == 1000, "under the bound every read is its own extent")
        let many = (0..<10_000).map { Int64(($0 * 7919) % 10_000) << 16 }
        var bounded: [TraceExtent] = []
        for offset in many { TraceExtents.note(TraceExtent(offset: offset, length: 4096), in: &bounded) }
        #expect(bounded.count <= TraceRecord.maxExtents && bounded.count > TraceRecord.maxExtents / 4)
        for offset in many {
            #expect(bounded.contains { $0.offset <= offset && offset + 4096 <= $0.end })
        }
    }

    @Test("§15: prefetch requests join extents closer than the gap and stop at the file's end; overlaps count once")
    func requestsAndOverlap() {
        let extents = [
            TraceExtent(offset: 1_000_000, length: 10), TraceExtent(offset: 0, length: 100),
            TraceExtent(offset: 200, length: 100), TraceExtent(offset: 2_000_000, length: 500),
        ]
        #expect(
            TraceExtents.requests(extents, size: 2_000_100, gap: 256)
                == [
                    .init(offset: 0, length: 300), .init(offset: 1_000_000, length: 10),
                    .init(offset: 2_000_000, length: 100),
                ])
        #expect(
            TraceExtents.overlap(
                [.init(offset: 0, length: 100)], [.init(offset: 50, length: 100), .init(offset: 60, length: 10)]) == 50)
        #expect(TraceExtents.bytes(extents) == 710)
    }

    @Test(
        "§15: a prefetch asks whole chunks; where the origin takes many ranges a request holds the runs themselves, in the order first read, up to 1 MiB or 64 runs; elsewhere runs 256 KiB apart are joined"
    )
    func prefetchBatches() {
        let chunk: Int64 = 4096
        // Pages 0, 1 (one run), 10, 200, a read crossing pages 300 and 301, and one past the end.
        let reads = [
            TraceExtent(offset: 10 * chunk + 5, length: 10), TraceExtent(offset: 0, length: 4096),
            TraceExtent(offset: 4096, length: 100), TraceExtent(offset: 200 * chunk, length: 1),
            TraceExtent(offset: 301 * chunk - 1, length: 2), TraceExtent(offset: 400 * chunk, length: 9),
        ]
        let size = 302 * chunk - 7
        let many = ChunkCache.batches(of: reads, size: size, chunkShift: 12, manyRanges: true)
        #expect(
            many == [
                [
                    ByteRange(location: 0, length: 2 * chunk), ByteRange(location: 10 * chunk, length: chunk),
                    ByteRange(location: 200 * chunk, length: chunk),
                    ByteRange(location: 300 * chunk, length: 2 * chunk - 7),
                ]
            ])
        // 100 runs a page apart: 64 in the first request, 36 in the second.
        let scattered = (0..<100).map { TraceExtent(offset: Int64($0) * 2 * chunk, length: 1) }
        let split = ChunkCache.batches(of: scattered, size: 1 << 30, chunkShift: 12, manyRanges: true)
        #expect(split.map(\.count) == [64, 36])
        // In the order read: 70 pages read from the file's end backwards; the first request holds the 64 read
        // first, in offset order.
        let backwards = (0..<70).reversed().map { TraceExtent(offset: Int64($0) * 2 * chunk, length: 1) }
        let ordered = ChunkCache.batches(of: backwards, size: 1 << 30, chunkShift: 12, manyRanges: true)
        #expect(ordered.map(\.count) == [64, 6])
        #expect(ordered.first?.first == ByteRange(location: 6 * 2 * chunk, length: chunk))
        #expect(ordered.last?.last == ByteRange(location: 5 * 2 * chunk, length: chunk))
        // 1 MiB a request: 300 runs of 16 KiB, 64 to a request would be 1 MiB each, so 64 fit exactly.
        let wide = (0..<300).map { TraceExtent(offset: Int64($0) * 8 * chunk, length: 4 * chunk) }
        let byBytes = ChunkCache.batches(of: wide, size: 1 << 30, chunkShift: 12, manyRanges: true)
        #expect(byBytes.map(\.count) == [64, 64, 64, 64, 44])
        #expect(byBytes.allSatisfy { $0.reduce(0) { $0 + $1.length } <= ChunkCache.traceBatchBytes })
        // One range a request elsewhere: runs 256 KiB apart or closer are one (pages 2…9 come along), those
        // further apart (200 and 300, 396 KiB) are not.
        let single = ChunkCache.batches(of: reads, size: size, chunkShift: 12, manyRanges: false)
        #expect(
            single == [
                [ByteRange(location: 0, length: 11 * chunk)], [ByteRange(location: 200 * chunk, length: chunk)],
                [ByteRange(location: 300 * chunk, length: 2 * chunk - 7)],
            ])
    }

    @Test("§15: a trace of a thousand small files takes under 1 % of the bytes it describes")
    func compact() {
        var reads: [(String, Int64, Int64)] = []
        for index in 0..<1000 { reads.append(("site-packages/django/module\(index / 10)/file\(index).py", 0, 8000)) }
        let record = TraceRecord(learning: Self.run(reads), at: 0)
        #expect(record.describedBytes == 8_000_000)
        #expect(record.encoded().count * 100 < Int(record.describedBytes), "\(record.encoded().count) bytes")
    }

    @Test(
        "§15: merging a run puts its reads first, keeps the old extents it read again, counts misses of predicted items, and drops gone ones"
    )
    func merging() throws {
        let first = TraceRecord(
            learning: Self.run([("a", 0, 20), ("a", 1000, 10), ("b", 0, 10), ("c", 0, 10), ("d", 0, 10)]), at: 0)
        let second = try #require(
            first.merging(
                Self.run([("a", 5, 5), ("a", 5000, 10), ("c", 100, 10)]), predicted: ["a", "b", "c", "d"], gone: ["d"],
                at: 5))
        #expect(second.members.map(\.item) == ["a", "c", "b"] && second.members.map(\.misses) == [0, 0, 1])
        // Old extents the run read again stay; those it did not go (a random reader predicts its last run only).
        #expect(second.members[0].extents == [.init(offset: 0, length: 20), .init(offset: 5000, length: 10)])
        #expect(second.members[1].extents == [.init(offset: 100, length: 10)])
        #expect(second.runs == 2 && second.uses == 1 && second.usedAt == 5)
        let third = try #require(second.merging(Self.run([("a", 0, 10)]), predicted: ["a", "b", "c"], at: 6))
        #expect(third.members.map(\.item) == ["a", "c"], "b missed twice in a row")
        #expect(third.merging(Self.run([("x", 0, 1)]), predicted: [], at: 7)?.members.map(\.item) == ["x", "a", "c"])
    }
}
