import Foundation

/// A JSON value with keys kept in the order written, so output is stable and reads like the contract.
public enum JSON: Sendable {
    case string(String)
    case int(Int64)
    case bool(Bool)
    case double(Double)
    case array([JSON])
    case object([(String, JSON)])
    case null

    /// Compact JSON text.
    public var rendered: String {
        switch self {
        case .string(let s): return JSON.quote(s)
        case .int(let n): return String(n)
        case .bool(let b): return b ? "true" : "false"
        case .double(let d): return d.isFinite ? String(format: "%.4f", d) : "null"
        case .array(let items): return "[" + items.map(\.rendered).joined(separator: ",") + "]"
        case .null: return "null"
        case .object(let pairs):
            return "{" + pairs.map { JSON.quote($0.0) + ":" + $0.1.rendered }.joined(separator: ",") + "}"
        }
    }

    static func quote(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
