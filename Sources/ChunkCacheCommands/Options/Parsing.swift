import ArgumentParser
import ChunkCache
import Foundation

/// A byte count: `4096`, `64KiB`, `1MiB`, `10GiB` (also `K`, `M`, `G`, `T`, `KB`…, case-insensitive, binary).
public struct ByteSize: ExpressibleByArgument, Sendable, Hashable {
    public let bytes: Int64

    public init?(argument: String) {
        let text = argument.trimmingCharacters(in: .whitespaces)
        let digits = text.prefix { $0.isNumber }
        guard !digits.isEmpty, let number = Int64(digits) else { return nil }
        let unit = text.dropFirst(digits.count).lowercased()
        let shifts: [String: Int64] = ["": 0, "b": 0, "k": 10, "kb": 10, "kib": 10, "m": 20, "mb": 20, "mib": 20,
                                       "g": 30, "gb": 30, "gib": 30, "t": 40, "tb": 40, "tib": 40]
        guard let shift = shifts[unit], number <= Int64.max >> shift else { return nil }
        bytes = number << shift
    }

    public static var defaultCompletionKind: CompletionKind { .default }
}

/// A byte range `START:LENGTH`.
public struct RangeArgument: ExpressibleByArgument, Sendable, Hashable {
    public let range: ByteRange

    public init?(argument: String) {
        let parts = argument.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let start = ByteSize(argument: String(parts[0])),
              let length = ByteSize(argument: String(parts[1])) else { return nil }
        range = ByteRange(location: start.bytes, length: length.bytes)
    }
}

/// A duration: `90`, `90s`, `30m`, `1h`, `2d`.
public struct Duration: ExpressibleByArgument, Sendable, Hashable {
    public let seconds: Double

    public init?(argument: String) {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
        var text = argument.lowercased()
        var scale = 1.0
        if let last = text.last, let unit = units[last] {
            scale = unit
            text.removeLast()
        }
        guard let value = Double(text), value >= 0, value.isFinite else { return nil }
        seconds = value * scale
    }
}
