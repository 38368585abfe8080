import Foundation
import LMDBKit
import TestSupport
import Testing

@testable import ChunkCache

/// `verify` recounts what the store keeps counted (``Verifier/checkConsistency(in:_:)``): every reference
/// record has its chunk and every chunk its record, each reference count equals the manifest entries naming
/// the chunk, every manifest page has an owner, and the counters `stat` reports equal a full recount
/// (CONTRACT §12: "frees chunks no version references"; the crash tests rely on it after every kill).
///
/// Each case breaks one of those on purpose, with records that still pass their own seal, and checks that
/// `verify` names exactly what was broken.
@Suite struct ConsistencyCheckTests {
    static let chunk = 65536

    /// A store holding `doc` v1 and v2 (sharing three of four chunks) and `copy` (the same bytes as v1), so
    /// chunks are referenced once, twice and three times.
    static func store(_ dir: String) async throws -> (ChunkCache, doc: [UInt8]) {
        let cache = try await makeCache(dir)
        let v1 = TestData.random(count: 4 * chunk, seed: 51)
        var v2 = v1
        v2.replaceSubrange(chunk..<2 * chunk, with: TestData.random(count: chunk, seed: 52))
        try await put(cache, v1, as: ItemIdentifier(domain: "d", "doc"), version: "v1", in: dir)
        try await put(cache, v2, as: ItemIdentifier(domain: "d", "doc"), version: "v2", in: dir)
        try await put(cache, v1, as: ItemIdentifier(domain: "d", "copy"), version: "v1", in: dir)
        return (cache, v1)
    }

    static func digest(_ bytes: ArraySlice<UInt8>) -> ChunkDigest {
        Array(bytes).withUnsafeBytes { ChunkDigest(hashing: $0) }
    }

    static func manifestID(of item: String, _ version: String, in cache: ChunkCache) throws -> UInt64 {
        try cache.store.environment.read { txn in
            let key = Keys.version(itemKey: Keys.item(domain: "d", id: item), contentVersion: Array(version.utf8))
            let version = try txn.withValue(cache.store.dbs.versions, key: key) {
                try VersionRecord(decoding: $0, name: "version under test")
            }
            return try #require(version).manifestID
        }
    }

    /// Runs `change` in one write transaction of the store, as a bug in the engine would.
    static func tamper(
        _ cache: ChunkCache, _ change: @escaping @Sendable (inout WriteTransaction, Databases) throws -> Void
    ) async throws {
        let dbs = cache.store.dbs
        try await cache.store.writer.write { txn in try change(&txn, dbs) }
    }

    static func setReferenceCount(_ digest: ChunkDigest, _ count: UInt64, in cache: ChunkCache) async throws {
        try await tamper(cache) { txn, dbs in
            try digest.withUnsafeBytes { key in
                var ref = try #require(
                    try txn.withValue(dbs.refs, key: key) { try ChunkRef(decoding: $0, name: "ref under test") })
                ref.count = count
                try ref.encoded().withUnsafeBytes { try txn.put(dbs.refs, key: key, value: $0) }
            }
        }
    }

    @Test("a store written only by the engine (puts sharing chunks, a gc, a domain removal) recounts clean")
    func cleanStore() async throws {
        try await withTemporaryDirectory { dir in
            let (cache, doc) = try await Self.store(dir)
            try await put(cache, doc, as: ItemIdentifier(domain: "e", "again"), in: dir)
            _ = try await cache.collectGarbage(keepVersions: 1)
            try await cache.removeDomain("e")
            let report = try await cache.verify()
            #expect(report.inconsistencies == [] && report.corrupt == [] && report.damagedRecords == [], "\(report)")
        }
    }

    @Test("a reference count one too high (a chunk nothing would ever free) is reported with both numbers")
    func countTooHigh() async throws {
        try await withTemporaryDirectory { dir in
            let (cache, doc) = try await Self.store(dir)
            let shared = Self.digest(doc[0..<Self.chunk])  // doc v1, doc v2 and copy
            try await Self.setReferenceCount(shared, 4, in: cache)
            let report = try await cache.verify()
            #expect(
                report.inconsistencies == ["chunk \(shared) has a reference count of 4 but 3 manifest entries name it"],
                "\(report)")
            #expect(report.corrupt == [] && report.damagedRecords == [], "each record passes its own check")
        }
    }

    @Test("a reference count too low (a chunk freed while still used) and a count of 0 are reported")
    func countTooLow() async throws {
        try await withTemporaryDirectory { dir in
            let (cache, doc) = try await Self.store(dir)
            let shared = Self.digest(doc[0..<Self.chunk])
            let once = Self.digest(doc[Self.chunk..<2 * Self.chunk])  // doc v1 and copy
            try await Self.setReferenceCount(shared, 0, in: cache)
            try await Self.setReferenceCount(once, 1, in: cache)
            let report = try await cache.verify()
            #expect(
                report.inconsistencies.sorted()
                    == [
                        "chunk \(shared) has a reference count of 0",
                        "chunk \(once) has a reference count of 1 but 2 manifest entries name it",
                    ].sorted(), "\(report)")
        }
    }

    @Test(
        "a reference record dropped (a chunk without a reference) and a chunk dropped (a reference without a chunk) are reported"
    )
    func referenceWithoutChunkAndChunkWithoutReference() async throws {
        try await withTemporaryDirectory { dir in
            let (cache, doc) = try await Self.store(dir)
            let noRef = Self.digest(doc[2 * Self.chunk..<3 * Self.chunk])
            let noChunk = Self.digest(doc[3 * Self.chunk..<4 * Self.chunk])
            let (unique, stored) = try await Self.dropLengths(of: noRef, in: cache)
            try await Self.tamper(cache) { txn, dbs in
                try noRef.withUnsafeBytes { try txn.delete(dbs.refs, key: $0) }
                try noChunk.withUnsafeBytes { try txn.delete(dbs.chunks, key: $0) }
                // The counters follow the dropped record, so only the pairing itself is wrong.
                try txn.addToCounter(dbs, MetaKey.uniqueBytes, -unique)
                try txn.addToCounter(dbs, MetaKey.storedBytes, -stored)
            }
            let report = try await cache.verify()
            #expect(
                report.inconsistencies.sorted()
                    == [
                        "chunk \(noChunk) has a reference record but is not stored",
                        "chunk \(noRef) is named by 3 manifest entries but has no reference record",
                    ].sorted(), "\(report)")
            #expect(
                Set(report.corrupt) == [noRef, noChunk],
                "the chunk scan and the manifest check still name both as corrupt")
        }
    }

    static func dropLengths(of digest: ChunkDigest, in cache: ChunkCache) async throws -> (Int64, Int64) {
        try cache.store.environment.read { txn in
            let ref = try #require(
                try digest.withUnsafeBytes { key in
                    try txn.withValue(cache.store.dbs.refs, key: key) {
                        try ChunkRef(decoding: $0, name: "ref under test")
                    }
                })
            return (Int64(ref.rawLength), Int64(ref.storedLength))
        }
    }

    @Test(
        "each stat counter that drifts from its recount is reported by name with both values",
        arguments: [
            MetaKey.logicalBytes, MetaKey.uniqueBytes, MetaKey.storedBytes,
        ])
    func counterDrift(counter: String) async throws {
        try await withTemporaryDirectory { dir in
            let (cache, _) = try await Self.store(dir)
            let before = try await cache.statistics()
            try await Self.tamper(cache) { txn, dbs in try txn.addToCounter(dbs, counter, 4096) }
            let expected: Int64 =
                switch counter {
                case MetaKey.logicalBytes: before.logicalBytes
                case MetaKey.uniqueBytes: before.uniqueBytes
                default: before.storedBytes
                }
            let report = try await cache.verify()
            #expect(
                report.inconsistencies == [
                    "the counter \(counter) is \(expected + 4096) but a recount gives \(expected)"
                ], "\(report)")
        }
    }

    @Test("a manifest page no version or pending put owns is reported, with the references it holds")
    func orphanManifest() async throws {
        try await withTemporaryDirectory { dir in
            let (cache, _) = try await Self.store(dir)
            let manifest = try Self.manifestID(of: "copy", "v1", in: cache)
            // Deleting the version record but not its manifest: what a drop that forgot its pages would leave.
            try await Self.tamper(cache) { txn, dbs in
                let key = Keys.version(itemKey: Keys.item(domain: "d", id: "copy"), contentVersion: Array("v1".utf8))
                let version = try txn.withValue(dbs.versions, key: key) {
                    try VersionRecord(decoding: $0, name: "version under test")
                }
                let size = try #require(version).size
                try txn.delete(dbs.versions, key: key)
                try txn.addToCounter(dbs, MetaKey.logicalBytes, -size)
            }
            let report = try await cache.verify()
            // The orphan's entries are still counted, so the reference counts agree: what is lost is that
            // nothing will ever release them.
            #expect(
                report.inconsistencies == ["manifest \(manifest) has 1 page(s) but no version or pending put owns it"],
                "\(report)")
        }
    }
}
