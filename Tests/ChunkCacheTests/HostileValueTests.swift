import FileIO
import Foundation
import Testing

@testable import ChunkCache

/// Sizes, ranges and error texts built from hostile input: nothing traps, every message names its subject.
@Suite struct HostileValueTests {
    static let extremes: [Int64] = [
        .min, .min + 1, -1, 0, 1, 4095, 4096, 1 << 50, (1 << 50) + 1, .max - 4096, .max - 1, .max,
    ]

    @Test(
        "SIGILL on huge sizes: ChunkLayout.chunkCount never traps and rounds up exactly, for any Int64",
        arguments: [12, 16, 22])
    func chunkCountNeverTraps(shift: Int) {
        let layout = ChunkLayout(uncheckedShift: shift)
        let size = Int64(1) << shift
        #expect(layout.chunkCount(forLength: .max) == Int64(1) << (63 - shift), "2^63−1 bytes need 2^(63−shift) chunks")
        #expect(layout.chunkCount(forLength: .min) == 0)
        #expect(layout.chunkCount(forLength: -1) == 0)
        #expect(layout.chunkCount(forLength: 0) == 0)
        #expect(layout.chunkCount(forLength: 1) == 1)
        #expect(layout.chunkCount(forLength: size) == 1)
        #expect(layout.chunkCount(forLength: size + 1) == 2)
        #expect(layout.chunkCount(forLength: ChunkLayout.maxItemLength) == ChunkLayout.maxItemLength >> shift)
    }

    @Test("SIGILL on huge sizes: ChunkLayout.range(ofChunk:) never traps; a chunk outside the file is empty at its end")
    func rangeOfChunkNeverTraps() {
        let layout = ChunkLayout.standard
        for length in Self.extremes {
            for index in Self.extremes {
                let range = layout.range(ofChunk: index, length: length)
                #expect(range.length >= 0 && range.length <= 65536, "chunk \(index) of \(length): \(range)")
            }
        }
        #expect(layout.range(ofChunk: 1, length: 65536 + 10) == ByteRange(location: 65536, length: 10))
        #expect(layout.range(ofChunk: 2, length: 65536 + 10) == ByteRange(location: 65546, length: 0))
        #expect(layout.range(ofChunk: -1, length: 100) == ByteRange(location: 100, length: 0))
        #expect(layout.range(ofChunk: .max, length: .max) == ByteRange(location: .max, length: 0))
        let last = layout.chunkCount(forLength: .max) - 1
        #expect(layout.range(ofChunk: last, length: .max) == ByteRange(location: last << 16, length: 65535))
    }

    @Test("SIGILL on huge sizes: ByteRange.end saturates instead of trapping")
    func byteRangeEndSaturates() {
        #expect(ByteRange(location: .max, length: .max).end == .max)
        #expect(ByteRange(location: .min, length: -1).end == .min)
        #expect(ByteRange(location: 10, length: 5).end == 15)
        #expect(ByteRange(location: 0, length: .max).contains(ByteRange(location: .max - 1, length: .max)))
    }

    @Test("SIGILL on huge sizes: a size beyond the limit is invalidArgument naming the thing and the limit")
    func itemLengthLimit() throws {
        try ChunkLayout.checkItemLength(0, of: "/x")
        try ChunkLayout.checkItemLength(ChunkLayout.maxItemLength, of: "/x")
        for length in [ChunkLayout.maxItemLength + 1, .max, -1] {
            let error = try #require(throws: CacheError.self) {
                try ChunkLayout.checkItemLength(length, of: "/in/file")
            }
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("/in/file") && error.message.contains("\(length) bytes"), "\(error)")
            #expect(error.message.contains("1125899906842624 bytes, 1 PiB"), "names the limit: \(error)")
        }
    }

    @Test("SIGILL on huge sizes: a version record whose size is beyond the limit is corruptData when read back")
    func versionRecordSizeChecked() throws {
        func record(size: Int64) -> [UInt8] {
            VersionRecord(
                contentVersion: Array("v1".utf8), manifestID: 1, size: size, chunkShift: 16, sequence: 1,
                createdAt: 0, root: ChunkDigest(bytes: [UInt8](repeating: 1, count: 32))!
            ).encoded()
        }
        let largest = try record(size: ChunkLayout.maxItemLength).withUnsafeBytes {
            try VersionRecord(decoding: $0, name: "version v1")
        }
        #expect(largest.size == ChunkLayout.maxItemLength)
        for size in [ChunkLayout.maxItemLength + 1, Int64.max] {
            let error = try #require(throws: CacheError.self) {
                try record(size: size).withUnsafeBytes { try VersionRecord(decoding: $0, name: "version v1") }
            }
            #expect(error.code == .corruptData, "\(error)")
            #expect(error.message.contains("version v1"), "names the record: \(error)")
        }
    }

    @Test(
        "CLI texts: formatSize reads as people read sizes",
        arguments: [
            (Int64(0), "0 B"), (999, "999 B"), (1000, "1.0 kB"), (1024, "1 KiB"), (65536, "64 KiB"),
            (999_999, "1.0 MB"),
            (1_400_000, "1.4 MB"), (1_400_000_000, "1.4 GB"), (4 << 20, "4 MiB"), (1 << 50, "1 PiB"), (.max, "9.2 EB"),
        ])
    func formatsSizes(bytes: Int64, text: String) {
        #expect(formatSize(bytes) == text)
    }
}
