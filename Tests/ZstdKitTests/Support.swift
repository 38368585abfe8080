import TestSupport
import Testing
import ZstdKit

/// The kinds of input the round-trip tests run over.
enum Payload: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// Text-like bytes with long repeats: zstd shrinks them a lot.
    case compressible
    /// Pseudo-random bytes: zstd cannot shrink them.
    case random

    func bytes(count: Int) -> [UInt8] {
        switch self {
        case .compressible:
            let line = Array("chunk 0123 of a content-addressed cache; ".utf8)
            return (0..<count).map { line[($0 / 3 + $0 / 4096) % line.count] }
        case .random:
            return TestData.random(count: count, seed: UInt64(count) &+ 17)
        }
    }

    var testDescription: String { rawValue }
}

extension Compressor {
    /// Compresses `source` into a buffer of `Compressor.bound`, returning the frame.
    func frame(of source: [UInt8]) throws -> [UInt8] {
        var destination = [UInt8](repeating: 0, count: Compressor.bound(for: source.count))
        let length = try source.withUnsafeBytes { src in
            try destination.withUnsafeMutableBytes { dst in try compress(src, into: dst) }
        }
        destination.removeSubrange(try #require(length)...)
        return destination
    }

    /// Compresses `source` into a buffer of exactly `capacity` bytes; `nil` when it does not fit.
    func frame(of source: [UInt8], capacity: Int) throws -> [UInt8]? {
        var destination = [UInt8](repeating: 0, count: capacity)
        let length = try source.withUnsafeBytes { src in
            try destination.withUnsafeMutableBytes { dst in try compress(src, into: dst) }
        }
        guard let length else { return nil }
        destination.removeSubrange(length...)
        return destination
    }
}

extension Decompressor {
    /// Decompresses `frame` into a buffer of `count` bytes.
    func bytes(of frame: [UInt8], count: Int) throws -> [UInt8] {
        var destination = [UInt8](repeating: 0, count: count)
        let written = try frame.withUnsafeBytes { src in
            try destination.withUnsafeMutableBytes { dst in try decompress(src, into: dst) }
        }
        #expect(written == count, "decompress reports every byte of the buffer as written")
        return destination
    }

    /// The content size `frame` declares.
    static func contentSize(of frame: [UInt8]) -> Int? {
        frame.withUnsafeBytes { contentSize(of: $0) }
    }
}
