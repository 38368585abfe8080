import Foundation

/// A short check on anchors and tokens, so one altered or truncated is told apart from a real one and
/// expires instead of resuming at a wrong place.
enum TokenSeal {
    static func sealed(_ body: [UInt8], maxLength: Int) -> [UInt8] {
        var bytes = body
        Seal.append(to: &bytes)
        precondition(bytes.count <= maxLength, "F1: an anchor or page token must stay within \(maxLength) bytes")
        return bytes
    }

    static func open(_ bytes: [UInt8]) -> [UInt8]? {
        bytes.withUnsafeBytes { raw in Seal.open(raw).map { Array($0) } }
    }
}
