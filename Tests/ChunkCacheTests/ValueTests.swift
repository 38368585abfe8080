import FileIO
import Foundation
import SeededRandom
import TestSupport
import Testing
import ZstdKit

@testable import ChunkCache

@Suite struct CacheErrorTests {
    @Test("C3 C4 C6: every code carries Apple's domain and raw value")
    func codesCarryFileProviderValues() {
        let expected: [CacheError.Code: (String, Int)] = [
            .noSuchItem: ("NSFileProviderErrorDomain", -1005),
            .versionNoLongerAvailable: ("NSFileProviderErrorDomain", -2009),
            .notAuthenticated: ("NSFileProviderErrorDomain", -1000),
            .serverUnreachable: ("NSFileProviderErrorDomain", -1004),
            .syncAnchorExpired: ("NSFileProviderErrorDomain", -1002),
            .pageExpired: ("NSFileProviderErrorDomain", -1002),
            .insufficientQuota: ("NSFileProviderErrorDomain", -1003), .noPermission: ("NSCocoaErrorDomain", 257),
            .fileExists: ("NSCocoaErrorDomain", 516), .userCancelled: ("NSCocoaErrorDomain", 3072),
            .featureUnsupported: ("NSCocoaErrorDomain", 3328), .invalidArgument: ("ChunkCacheErrorDomain", 1),
            .corruptData: ("ChunkCacheErrorDomain", 2), .transient: ("ChunkCacheErrorDomain", 3),
        ]
        #expect(expected.count == CacheError.Code.allCases.count)
        for code in CacheError.Code.allCases {
            guard let (domain, raw) = expected[code] else {
                Issue.record("no expectation for \(code)")
                continue
            }
            #expect(code.domain == domain, "\(code)")
            #expect(code.rawValue == raw, "\(code)")
        }
    }

    @Test("C1: bridged to NSError the error keeps its File Provider domain and code")
    func bridgesToNSError() {
        let error = CacheError(.userCancelled, "stop").nsError
        #expect(error.domain == "NSCocoaErrorDomain")
        #expect(error.code == 3072)
    }

    @Test("C1: every error handed to the system is Cocoa or File Provider; engine-only codes are wrapped as Cocoa 4101")
    func systemErrorsUseSystemDomains() throws {
        for code in CacheError.Code.allCases {
            let error = CacheError(code, "what went wrong", underlying: Errno.noSuchFile).systemError
            #expect(
                [CacheError.cocoaDomain, CacheError.fileProviderDomain].contains(error.domain),
                "\(code): \(error.domain)")
            if code.domain == CacheError.chunkCacheDomain {
                #expect(error.domain == "NSCocoaErrorDomain" && error.code == 4101, "\(code)")
                let underlying = try #require(error.userInfo[NSUnderlyingErrorKey] as? NSError, "\(code)")
                #expect(underlying.domain == "ChunkCacheErrorDomain" && underlying.code == code.rawValue)
            } else {
                #expect(
                    error.domain == code.domain && error.code == code.rawValue, "\(code) keeps its own domain and code")
            }
            #expect(error.localizedDescription == "what went wrong")
        }
    }

    @Test("C5: no code maps to cannotSynchronize (-2005)")
    func neverCannotSynchronize() {
        #expect(!CacheError.Code.allCases.contains { $0.rawValue == -2005 })
    }
}

@Suite struct ValueTests {
    @Test("digests round-trip through hex")
    func digestHex() throws {
        let digest = [UInt8](repeating: 7, count: 100).withUnsafeBytes { ChunkDigest(hashing: $0) }
        let parsed = try #require(ChunkDigest(hex: digest.description))
        #expect(parsed == digest)
        #expect(digest.description.count == 64 && digest.description == digest.description.lowercased())
        #expect(ChunkDigest(hex: "xyz") == nil)
    }

    @Test("chunk sizes are powers of two from 4 KiB to 4 MiB", arguments: [4096, 65536, 4 << 20])
    func goodChunkSizes(size: Int) throws {
        #expect(try ChunkLayout(chunkSize: size).chunkSize == size)
    }

    @Test("other chunk sizes are invalidArgument", arguments: [0, 2048, 8 << 20, 65535, 100_000])
    func badChunkSizes(size: Int) {
        #expect(throws: CacheError.self) { try ChunkLayout(chunkSize: size) }
    }

    @Test("E1: a domain version's next() is strictly greater")
    func domainVersionGrows() {
        let v = DomainVersion.initial
        #expect(v.next() > v)
        #expect(v.next().description == "2")
    }

    @Test("manifest pages round-trip stored, zero and absent entries")
    func manifestPageRoundTrip() throws {
        let digest = [UInt8](repeating: 1, count: 10).withUnsafeBytes { ChunkDigest(hashing: $0) }
        let entries: [ManifestEntry] = [.stored(digest), .zero, .absent(digest), .absent(nil)]
        var bytes: [UInt8] = []
        for entry in entries { ManifestPage.append(entry, to: &bytes) }
        #expect(bytes.count == entries.count * ManifestPage.entrySize)
        try bytes.withUnsafeBytes { page in
            for (slot, entry) in entries.enumerated() {
                let decoded = try ManifestPage.entry(in: page, at: slot)
                #expect(decoded == entry)
            }
            #expect(throws: CacheError.self) { try ManifestPage.entry(in: page, at: entries.count) }
        }
    }
}

@Suite struct ChunkCodecTests {
    static func encodeDecode(_ raw: [UInt8]) throws -> (ChunkCodec.Encoding, [UInt8], [UInt8]) {
        let compressor = Compressor()
        let output = UnsafeMutableRawBufferPointer.allocate(
            byteCount: ChunkCodec.encodedBound(rawCount: raw.count), alignment: 16)
        defer { output.deallocate() }
        let n = try raw.withUnsafeBytes { try ChunkCodec.encode($0, compressor: compressor, into: output) }
        let stored = Array(output[..<n])
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: raw.count, alignment: 16)
        defer { buffer.deallocate() }
        let digest = raw.withUnsafeBytes { ChunkDigest(hashing: $0) }
        let decoded = try stored.withUnsafeBytes {
            Array(
                try ChunkCodec.decode(
                    $0, rawCount: raw.count, decompressor: Decompressor(), buffer: buffer, digest: digest,
                    bases: NoBases()))
        }
        return (ChunkCodec.Encoding(rawValue: stored[0])!, stored, decoded)
    }

    @Test("compressible chunks are stored as zstd frames and decode to the same bytes")
    func compressible() throws {
        let raw = (0..<65536).map { UInt8(truncatingIfNeeded: $0 / 7) }
        let (encoding, stored, decoded) = try Self.encodeDecode(raw)
        #expect(encoding == .zstd)
        #expect(stored.count < raw.count / 4)
        #expect(decoded == raw)
    }

    @Test("chunks that do not shrink are stored raw with an XXH3 checksum")
    func incompressible() throws {
        var rng = SplitMix64(seed: 1)
        let raw = (0..<65536).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let (encoding, stored, decoded) = try Self.encodeDecode(raw)
        #expect(encoding == .raw)
        #expect(stored.count == raw.count + ChunkCodec.headerSize)
        #expect(decoded == raw)
    }

    @Test("a flipped payload byte is corruptData for both encodings", arguments: [true, false])
    func flippedByteIsCorrupt(compressible: Bool) throws {
        var rng = SplitMix64(seed: 2)
        let raw = (0..<16384).map { i in
            compressible ? UInt8(truncatingIfNeeded: i / 5) : UInt8.random(in: 0...255, using: &rng)
        }
        var (_, stored, _) = try Self.encodeDecode(raw)
        stored[stored.count - 5] ^= 0x40
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: raw.count, alignment: 16)
        defer { buffer.deallocate() }
        let digest = raw.withUnsafeBytes { ChunkDigest(hashing: $0) }
        do {
            _ = try stored.withUnsafeBytes {
                try ChunkCodec.decode(
                    $0, rawCount: raw.count, decompressor: Decompressor(), buffer: buffer, digest: digest,
                    bases: NoBases())
            }
            Issue.record("a corrupt chunk decoded")
        } catch let error as CacheError {
            #expect(error.code == .corruptData)
            #expect(error.message.contains(digest.description))
        }
    }

    @Test(
        "a zstd frame whose checksum flag was cleared (and its checksum cut) is corruptData, not bytes served unchecked (found while writing its fuzz target)"
    )
    func frameWithoutChecksumIsCorrupt() throws {
        let raw = (0..<16384).map { UInt8(truncatingIfNeeded: $0 / 5) }
        var (encoding, stored, _) = try Self.encodeDecode(raw)
        #expect(encoding == .zstd)
        // Bit 2 of the frame header descriptor (after the 16-byte header and the 4-byte magic) is the checksum
        // flag; without it, the last 4 bytes are no longer part of the frame.
        #expect(stored[ChunkCodec.headerSize + 4] & 0x04 != 0)
        stored[ChunkCodec.headerSize + 4] &= ~0x04
        stored.removeLast(4)
        stored[stored.count - 3] ^= 0x01  // a damaged literal no check would catch
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: raw.count, alignment: 16)
        defer { buffer.deallocate() }
        let digest = raw.withUnsafeBytes { ChunkDigest(hashing: $0) }
        #expect(throws: CacheError.self) {
            _ = try stored.withUnsafeBytes {
                try ChunkCodec.decode(
                    $0, rawCount: raw.count, decompressor: Decompressor(), buffer: buffer, digest: digest,
                    bases: NoBases())
            }
        }
    }

    @Test("isAllZero finds a single set byte anywhere", arguments: [0, 7, 8, 4095, 65535])
    func zeroDetection(position: Int) {
        var bytes = [UInt8](repeating: 0, count: 65536)
        #expect(bytes.withUnsafeBytes { isAllZero($0) })
        bytes[position] = 1
        #expect(!bytes.withUnsafeBytes { isAllZero($0) })
    }
}
