import Foundation

/// Opaque bytes handed to a client and given back (an anchor, a page token), printed and parsed as unpadded
/// base64url; bytes that are not base64url become an empty value, which the engine refuses as expired.
public protocol OpaqueToken: Hashable, Sendable, Codable, CustomStringConvertible {
    var rawValue: Data { get }
    init(rawValue: Data)
}

extension OpaqueToken {
    /// Parses the CLI's form; nil when it is not base64url.
    public init?(_ text: String) {
        guard let data = Base64URL.decode(text) else { return nil }
        self.init(rawValue: data)
    }

    public var description: String { Base64URL.encode(rawValue) }
}

/// Unpadded base64url: anchors and tokens travel in URLs, JSON and command lines unescaped.
enum Base64URL {
    static func encode(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func decode(_ text: String) -> Data? {
        guard text.utf8.count <= 1024, text.utf8.allSatisfy({ $0 != UInt8(ascii: "=") }) else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}
