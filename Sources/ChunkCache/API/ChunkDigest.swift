import Crypto
import Foundation

/// The SHA-256 of a chunk's raw bytes: its name in the store.
public struct ChunkDigest: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The 32 digest bytes (four words, so the value needs no allocation).
    let words: (UInt64, UInt64, UInt64, UInt64)

    /// A digest's length in bytes.
    static let byteCount = 32

    /// Creates a digest from exactly 32 bytes.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 32 else { return nil }
        var w: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        withUnsafeMutableBytes(of: &w) { raw in raw.copyBytes(from: bytes) }
        words = w
    }

    init(raw: UnsafeRawBufferPointer) {
        var w: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        withUnsafeMutableBytes(of: &w) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: raw[..<32])) }
        words = w
    }

    /// The SHA-256 of `bytes`.
    public init(hashing bytes: UnsafeRawBufferPointer) {
        let digest = SHA256.hash(data: bytes)
        self = digest.withUnsafeBytes { ChunkDigest(raw: $0) }
    }

    /// Parses 64 lowercase or uppercase hex digits.
    public init?(hex: String) {
        let utf8 = Array(hex.utf8)
        guard utf8.count == 64 else { return nil }
        var bytes = [UInt8]()
        bytes.reserveCapacity(32)
        for i in stride(from: 0, to: 64, by: 2) {
            guard let hi = hexValue(utf8[i]), let lo = hexValue(utf8[i + 1]) else { return nil }
            bytes.append(hi << 4 | lo)
        }
        self.init(bytes: bytes)
    }

    /// The 32 bytes.
    public var bytes: [UInt8] { Swift.withUnsafeBytes(of: words) { Array($0) } }

    /// Lends the 32 bytes, e.g. as an LMDB key.
    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try Swift.withUnsafeBytes(of: words, body)
    }

    /// Lowercase hex.
    public var description: String { hexString(bytes) }

    public static func == (a: ChunkDigest, b: ChunkDigest) -> Bool {
        a.words.0 == b.words.0 && a.words.1 == b.words.1 && a.words.2 == b.words.2 && a.words.3 == b.words.3
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(words.0)
        hasher.combine(words.1)
    }

    public static func < (a: ChunkDigest, b: ChunkDigest) -> Bool { a.bytes.lexicographicallyPrecedes(b.bytes) }
}

func hexValue(_ c: UInt8) -> UInt8? {
    switch c {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
    default: return nil
    }
}

/// `bytes` as lowercase hexadecimal, two digits a byte (keys and digests in messages and reports).
public func hexString(_ bytes: some Sequence<UInt8>) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out = [UInt8]()
    for b in bytes {
        out.append(digits[Int(b >> 4)])
        out.append(digits[Int(b & 15)])
    }
    return String(decoding: out, as: UTF8.self)
}
