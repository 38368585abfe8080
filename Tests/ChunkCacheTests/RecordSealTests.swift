import Testing

@testable import ChunkCache

/// Every record the store writes carries a seal, and a record whose bytes changed never decodes.
@Suite struct RecordSealTests {
    static let version = VersionRecord(
        contentVersion: Array("v1".utf8), manifestID: 7, size: 262_144, chunkShift: 16, sequence: 3, createdAt: 1000,
        root: ChunkDigest(hashing: UnsafeRawBufferPointer(start: nil, count: 0)))

    @Test("a sealed record decodes to what was written")
    func roundTrip() throws {
        let decoded = try Self.version.encoded().withUnsafeBytes {
            try VersionRecord(decoding: $0, name: "the test version")
        }
        #expect(decoded.manifestID == 7)
        #expect(decoded.size == 262_144)
        #expect(decoded.contentVersion == Array("v1".utf8))
        #expect(decoded.root == Self.version.root)
        #expect(decoded.matchedModificationDate == nil)
        var matched = Self.version
        matched.matchedModificationDate = 1_600_000_000.5
        let withTime = try matched.encoded().withUnsafeBytes {
            try VersionRecord(decoding: $0, name: "the test version")
        }
        #expect(withTime.matchedModificationDate == 1_600_000_000.5 && withTime.contentVersion == Array("v1".utf8))
    }

    @Test("any flipped byte of a record, seal included, is corruptData naming the record and saying what to do")
    func everyByteIsChecked() {
        let encoded = Self.version.encoded()
        for position in encoded.indices {
            var damaged = encoded
            damaged[position] ^= 0x01
            let error = #expect(throws: CacheError.self, "byte \(position)") {
                _ = try damaged.withUnsafeBytes { try VersionRecord(decoding: $0, name: "the test version") }
            }
            #expect(error?.code == .corruptData)
            #expect(error?.message == "the store's record of the test version fails its check; \(VersionRecord.remedy)")
        }
    }

    @Test("a value shorter than a seal fails its check")
    func tooShort() {
        for count in 0..<Seal.size {
            let value = [UInt8](repeating: 0, count: count)
            #expect(value.withUnsafeBytes { Seal.open($0) } == nil)
        }
    }

    @Test("the root hash is SHA-256 over the length, then a tag per chunk and each data chunk's digest")
    func rootHash() {
        let digest = ChunkDigest(hashing: UnsafeRawBufferPointer(start: nil, count: 0))
        var hasher = RootHasher(length: 65_537)
        hasher.add(nil)
        hasher.add(digest)
        var expected = [UInt8]()
        withUnsafeBytes(of: Int64(65_537).littleEndian) { expected += $0 }
        expected += [0, 1] + digest.bytes
        #expect(
            hasher.finalize() == expected.withUnsafeBytes { ChunkDigest(hashing: $0) },
            "ChunkDigest(hashing:) is SHA-256")
    }
}
