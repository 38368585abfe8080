import FileIO
import Foundation

/// Names the writer of a pending manifest: 16 random bytes, and the name of that writer's lease file.
struct WriterToken: Hashable, Sendable, CustomStringConvertible {
    static let byteCount = 16
    let bytes: [UInt8]

    /// A token from bytes read back from a record; `nil` unless it has ``byteCount`` bytes.
    init?(bytes: [UInt8]) {
        guard bytes.count == Self.byteCount else { return nil }
        self.bytes = bytes
    }

    /// A token from a lease file's name: ``byteCount`` bytes in lowercase hex.
    init?(fileName: String) {
        let digits = Array(fileName.utf8)
        guard digits.count == 2 * Self.byteCount else { return nil }
        var bytes: [UInt8] = []
        for pair in stride(from: 0, to: digits.count, by: 2) {
            guard let high = hexValue(digits[pair]), let low = hexValue(digits[pair + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        guard hexString(bytes) == fileName else { return nil }  // one spelling per token
        self.bytes = bytes
    }

    static func random() -> WriterToken {
        var generator = SystemRandomNumberGenerator()
        return WriterToken(unchecked: (0..<byteCount).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    private init(unchecked bytes: [UInt8]) { self.bytes = bytes }

    var description: String { hexString(bytes) }
}
