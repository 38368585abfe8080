import TestSupport
import Testing
import ZstdKit

@testable import ChunkCache

/// Bases held in memory by digest: the stored values a delta is decoded against.
final class MemoryBases: BaseValues {
    var values: [ChunkDigest: [UInt8]] = [:]
    let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 2 * 65536, alignment: 64)
    var decoded: DecodedBases? { nil }
    deinit { scratch.deallocate() }

    func withStoredChunk<R>(_ digest: ChunkDigest, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        try values[digest].map { try $0.withUnsafeBytes(body) }
    }

    /// Stores `raw` plain, as the store would, and returns its digest.
    func add(_ raw: [UInt8]) throws -> ChunkDigest {
        let digest = raw.withUnsafeBytes { ChunkDigest(hashing: $0) }
        values[digest] = try Self.plain(raw)
        return digest
    }

    static func plain(_ raw: [UInt8]) throws -> [UInt8] {
        var output = [UInt8](repeating: 0, count: ChunkCodec.encodedBound(rawCount: raw.count))
        let n = try output.withUnsafeMutableBytes { out in
            try raw.withUnsafeBytes { try ChunkCodec.encode($0, compressor: Compressor(), into: out) }
        }
        return Array(output[..<n])
    }
}

@Suite struct DeltaCodecTests {
    /// `raw` stored as a delta against `bases` (each added to `store`), as the ingest writes it.
    static func delta(_ raw: [UInt8], against bases: [[UInt8]], in store: MemoryBases) throws -> [UInt8] {
        let digests = try bases.map { try store.add($0) }
        let prefix = bases.flatMap { $0 }
        let layout = DeltaLayout(
            bases: zip(digests, bases).map { ($0, $1.count) }, plainLength: try MemoryBases.plain(raw).count - 16)
        var output = [UInt8](repeating: 0, count: ChunkCodec.encodedBound(rawCount: raw.count) + 64)
        let frameLength = try output.withUnsafeMutableBytes { out in
            layout.write(into: out)
            let frame = UnsafeMutableRawBufferPointer(rebasing: out[layout.headerLength...])
            return try raw.withUnsafeBytes { source in
                try prefix.withUnsafeBytes { try #require(try Compressor().compress(source, against: $0, into: frame)) }
            }
        }
        return Array(output[..<(layout.headerLength + frameLength)])
    }

    static func decode(_ stored: [UInt8], rawCount: Int, bases: MemoryBases) throws -> [UInt8] {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: rawCount, alignment: 64)
        defer { buffer.deallocate() }
        return try stored.withUnsafeBytes {
            Array(
                try ChunkCodec.decode(
                    $0, rawCount: rawCount, decompressor: Decompressor(), buffer: buffer, digest: ChunkDigest.zero,
                    bases: bases))
        }
    }

    /// A chunk of text and the same text with bytes inserted near its start: a shifted edit.
    static func pair(seed: UInt64) -> (old: [UInt8], new: [UInt8]) {
        let old = TestData.text(count: 65536, seed: seed)
        var new = old
        new.insert(contentsOf: Array("an insertion".utf8), at: 300)
        new.removeLast(12)
        return (old, new)
    }

    @Test("§14: a delta's header round-trips its bases, their lengths and the plain length")
    func layoutRoundTrip() throws {
        let store = MemoryBases()
        let (old, new) = Self.pair(seed: 1)
        let stored = try Self.delta(new, against: [old, Array(old.reversed())], in: store)
        let layout = try #require(stored.withUnsafeBytes { DeltaLayout(parsing: $0) })
        #expect(
            layout.bases.map(\.digest)
                == [old, Array(old.reversed())].map { b in b.withUnsafeBytes { ChunkDigest(hashing: $0) } })
        #expect(layout.bases.map(\.rawLength) == [65536, 65536])
        #expect(layout.plainLength == (try MemoryBases.plain(new).count - 16))
        #expect(layout.headerLength == 16 + 64)
    }

    @Test(
        "§14: a delta round-trips byte for byte against one base and against two, and is far smaller than plain"
    )
    func roundTrip() throws {
        let store = MemoryBases()
        let (old, new) = Self.pair(seed: 2)
        for bases in [[old], [TestData.text(count: 65536, seed: 9), old]] {
            let stored = try Self.delta(new, against: bases, in: store)
            #expect(try Self.decode(stored, rawCount: new.count, bases: store) == new)
            #expect(stored.count < (try MemoryBases.plain(new).count) / 8)
        }
    }

    @Test(
        "§14: a delta whose base is missing, damaged, or itself a delta is corruptData naming the delta, never other bytes"
    )
    func brokenBases() throws {
        let store = MemoryBases()
        let (old, new) = Self.pair(seed: 3)
        let stored = try Self.delta(new, against: [old], in: store)
        let base = old.withUnsafeBytes { ChunkDigest(hashing: $0) }
        func expectCorrupt(_ why: String) {
            do {
                _ = try Self.decode(stored, rawCount: new.count, bases: store)
                Issue.record("a delta decoded with its base \(why)")
            } catch let error as CacheError {
                #expect(error.code == .corruptData, "\(why)")
                #expect(error.message.contains(ChunkDigest.zero.description), "names the delta: \(error.message)")
            } catch {
                Issue.record("\(why): \(error)")
            }
        }
        let good = store.values[base]!
        store.values[base] = nil
        expectCorrupt("missing")
        var damaged = good
        damaged[damaged.count - 7] ^= 0x10
        store.values[base] = damaged
        expectCorrupt("damaged")
        // Another base of the same digest and length (as a refetch that changed would be): the frame's checksum.
        store.values[base] = try MemoryBases.plain(TestData.text(count: 65536, seed: 77))
        expectCorrupt("replaced by other bytes")
        store.values[base] = try Self.delta(old, against: [TestData.text(count: 65536, seed: 5)], in: store)
        expectCorrupt("itself a delta (depth 1)")
        store.values[base] = good
        #expect(try Self.decode(stored, rawCount: new.count, bases: store) == new)
    }

    @Test("§14: a damaged delta frame or header is corruptData")
    func damagedDelta() throws {
        let store = MemoryBases()
        let (old, new) = Self.pair(seed: 4)
        let stored = try Self.delta(new, against: [old], in: store)
        for position in [1, 20, stored.count / 2 + 40, stored.count - 3] {
            var damaged = stored
            damaged[position] ^= 0x21
            #expect(throws: CacheError.self, "byte \(position) flipped") {
                _ = try Self.decode(damaged, rawCount: new.count, bases: store)
            }
        }
    }
}

extension ChunkDigest {
    static let zero = ChunkDigest(bytes: [UInt8](repeating: 0, count: 32))!
}
