import Foundation
import LMDBKit
import TestSupport
import Testing

@testable import ChunkCache

/// The one reader of stored chunks (``StoredChunkReader``), on real stores: every kind of manifest entry read
/// to its exact bytes, and every way a chunk cannot be read told apart.
@Suite struct StoredChunkReaderTests {
    static let chunk = 65_536

    /// What the reader made of one entry: its bytes copied out, or why it could not give them.
    enum Outcome: Equatable {
        case bytes([UInt8])
        case zero
        case absent
        case missing(ChunkDigest)
        case damaged(ChunkDigest, message: String)
        case fillLost
    }

    /// Reads chunk `index` of `version` of `id` with a reader, in one snapshot; also says whether the reader
    /// asked for the buffer and whether the bytes it gave lie in it.
    static func read(
        _ index: Int64, of id: ItemIdentifier, version: String, in cache: ChunkCache, entry: ManifestEntry? = nil
    ) throws -> (outcome: Outcome, askedForBuffer: Bool, inBuffer: Bool) {
        let store = cache.store
        return try store.environment.read { txn in
            let record = try #require(try versionRecord(of: id, version: version, in: store, txn))
            var cursor = ManifestCursor(manifestID: record.manifestID, dbs: store.dbs)
            let named = try entry ?? cursor.entry(index, in: txn)
            return try store.codecs.withDecoder { context in
                var asked = false
                let read = try StoredChunkReader(context, store.dbs).read(
                    named, of: record.manifestID, spanning: record.layout.range(ofChunk: index, length: record.size),
                    into: {
                        asked = true
                        return context.buffer
                    }, in: txn)
                let outcome: Outcome
                var inBuffer = false
                switch read {
                case .bytes(let bytes):
                    outcome = .bytes(Array(bytes))
                    inBuffer = bytes.baseAddress == UnsafeRawPointer(context.buffer.baseAddress)
                case .zero: outcome = .zero
                case .unreadable(.absent): outcome = .absent
                case .unreadable(.missing(let digest)): outcome = .missing(digest)
                case .unreadable(.damaged(let digest, let error)):
                    #expect(error.code == .corruptData)
                    outcome = .damaged(digest, message: error.message)
                case .unreadable(.fillLost): outcome = .fillLost
                }
                return (outcome, asked, inBuffer)
            }
        }
    }

    static func versionRecord(
        of id: ItemIdentifier, version: String, in store: Store, _ txn: borrowing ReadTransaction
    ) throws -> VersionRecord? {
        let key = Keys.version(
            itemKey: Keys.item(domain: id.domain, id: id.rawValue), contentVersion: Array(version.utf8))
        return try txn.withValue(store.dbs.versions, key: key) {
            try VersionRecord(decoding: $0, name: "version \(version) of \(id)")
        }
    }

    /// Chunk `index` of `bytes`.
    static func slice(_ bytes: [UInt8], _ index: Int) -> [UInt8] {
        Array(bytes[(index * chunk)..<min(bytes.count, (index + 1) * chunk)])
    }

    /// Random, text, zero, then a short text tail: a raw chunk, a zstd chunk, a zero chunk.
    static let mixed =
        TestData.random(count: chunk, seed: 31) + TestData.text(count: chunk, seed: 32)
        + [UInt8](repeating: 0, count: chunk) + TestData.text(count: 1000, seed: 33)

    /// A fresh store holding ``mixed`` as version "v1" of "mixed" in domain "d"; with the digest of its raw chunk 0.
    static func withMixed(_ body: (ChunkCache, ItemIdentifier, ChunkDigest) async throws -> Void) async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "mixed")
            try await put(cache, mixed, as: id, version: "v1", in: dir)
            try await body(cache, id, try IntegrityTests.digest(ofChunk: 0, item: id, version: "v1", in: cache))
        }
    }

    @Test(
        "§2 one reader of stored chunks: a raw chunk is borrowed from the map, a zstd chunk and a short tail decoded into the buffer, a zero chunk read as zero without a buffer, each byte-exact"
    )
    func storedKinds() async throws {
        try await Self.withMixed { cache, id, _ in
            let raw = try Self.read(0, of: id, version: "v1", in: cache)
            #expect(raw.outcome == .bytes(Self.slice(Self.mixed, 0)))
            #expect(raw.askedForBuffer && !raw.inBuffer, "a raw chunk is served from LMDB's map")
            let zstd = try Self.read(1, of: id, version: "v1", in: cache)
            #expect(zstd.outcome == .bytes(Self.slice(Self.mixed, 1)))
            #expect(zstd.inBuffer, "a zstd chunk is decoded into the caller's buffer")
            let zero = try Self.read(2, of: id, version: "v1", in: cache)
            #expect(zero.outcome == .zero && !zero.askedForBuffer)
            let tail = try Self.read(3, of: id, version: "v1", in: cache)
            #expect(tail.outcome == .bytes(Self.slice(Self.mixed, 3)))
        }
    }

    @Test("§14 one reader of stored chunks: a delta is read against its bases to its exact bytes")
    func deltaChunk() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let (id, _, v2) = try await DeltaTests.twoVersions(in: cache, dir, seed: 41)
            let deltas = Set(try DeltaTests.deltas(in: cache).map(\.digest))
            var index: Int64 = 0
            while try !deltas.contains(IntegrityTests.digest(ofChunk: index, item: id, version: "v2", in: cache)) {
                index += 1
            }
            let read = try Self.read(index, of: id, version: "v2", in: cache)
            #expect(read.outcome == .bytes(Self.slice(v2, Int(index))) && read.inBuffer)
        }
    }

    @Test(
        "§2 one reader of stored chunks: a damaged stored chunk is reported with its digest and the check it fails, never served; an absent entry and a chunk the store lacks are told apart"
    )
    func unreadableStored() async throws {
        try await Self.withMixed { cache, id, digest in
            let stranger = try #require(ChunkDigest(bytes: [UInt8](repeating: 7, count: 32)))
            #expect(try Self.read(0, of: id, version: "v1", in: cache, entry: .absent(digest)).outcome == .absent)
            #expect(
                try Self.read(0, of: id, version: "v1", in: cache, entry: .stored(stranger)).outcome
                    == .missing(stranger))
            try IntegrityTests.flipStoredByte(of: digest, in: cache)
            #expect(
                try Self.read(0, of: id, version: "v1", in: cache).outcome
                    == .damaged(
                        digest,
                        message: "chunk \(digest) fails its XXH3 checksum; run `chunkcache verify --repair` to drop it")
            )
        }
    }

    @Test(
        "§2 one reader of stored chunks: asked to check names, a chunk whose bytes pass their checksum but hash to another name is damaged"
    )
    func nameChecked() async throws {
        try await Self.withMixed { cache, _, digest in
            let other = try #require(ChunkDigest(bytes: [UInt8](repeating: 9, count: 32)))
            let store = cache.store
            let (named, misnamed): (Bool, String?) = try store.environment.read { txn in
                try store.codecs.withDecoder { context in
                    let reader = StoredChunkReader(context, store.dbs)
                    let stored = try #require(
                        try digest.withUnsafeBytes { try txn.unsafeValue(store.dbs.chunks, key: $0) })
                    let named = try reader.decode(
                        stored, digest: digest, length: Self.chunk, into: context.buffer, checkingName: true, in: txn)
                    do {
                        _ = try reader.decode(
                            stored, digest: other, length: Self.chunk, into: context.buffer, checkingName: true,
                            in: txn)
                        return (Array(named) == Self.slice(Self.mixed, 0), nil)
                    } catch {
                        return (Array(named) == Self.slice(Self.mixed, 0), (error as? CacheError)?.message)
                    }
                }
            }
            #expect(named)
            #expect(misnamed == "chunk \(other) does not hash to its name; run `chunkcache verify --repair` to drop it")
        }
    }

    @Test(
        "§10 one reader of stored chunks: a fill is read from its fill file to its exact bytes, and one whose bytes changed is lost, never served",
        .requires(NginxServer.self))
    func fills() async throws {
        try await FillMaintenanceTests.withFills { cache, _ in
            let id = ItemIdentifier(domain: "web", "a.bin")
            let bytes = FillMaintenanceTests.bytes
            let version = try cache.store.environment.read { txn in
                var found: VersionRecord?
                try txn.scan(cache.store.dbs.versions, prefix: []) { _, value in
                    found = VersionRecord(ifIntact: value)
                    return false
                }
                return try #require(found)
            }
            let name = String(decoding: version.contentVersion, as: UTF8.self)
            let fill = try Self.read(1, of: id, version: name, in: cache)
            #expect(fill.outcome == .bytes(Self.slice(bytes, 1)) && fill.inBuffer)
            try FillMaintenanceTests.flipFillByte(at: 2 * Self.chunk + 10, in: cache)
            #expect(try Self.read(2, of: id, version: name, in: cache).outcome == .fillLost)
            #expect(try Self.read(3, of: id, version: name, in: cache).outcome == .bytes(Self.slice(bytes, 3)))
        }
    }
}
