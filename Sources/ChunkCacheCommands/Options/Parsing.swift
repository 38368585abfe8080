import ArgumentParser
import ChunkCache
import Foundation

/// A byte count: `4096`, `64KiB`, `1MiB`, `10 GiB` (also `K`, `M`, `G`, `T`, `KB`…, case-insensitive, binary; a space
/// may separate the number from its unit).
public struct ByteSize: ExpressibleByArgument, CustomStringConvertible, Sendable, Hashable {
    public let bytes: Int64

    /// The size as people read it, in the largest binary unit that divides it: `256 MiB`, `1 GiB`, `1000 B`.
    /// Accepted back as an argument.
    public var description: String {
        for (unit, shift) in [("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)]
        where bytes != 0 && bytes & ((1 << shift) - 1) == 0 {
            return "\(bytes >> shift) \(unit)"
        }
        return "\(bytes) B"
    }

    /// `--help` shows the default as ``description`` says it, not as a Swift value.
    public var defaultValueDescription: String { description }

    public init?(argument: String) {
        let text = argument.trimmingCharacters(in: .whitespaces)
        let digits = text.prefix { $0.isNumber }
        guard !digits.isEmpty, let number = Int64(digits) else { return nil }
        // `256MiB` and `256 MiB` (as ``description`` prints it) alike.
        let unit = text.dropFirst(digits.count).trimmingCharacters(in: .whitespaces).lowercased()
        let shifts: [String: Int64] = [
            "": 0, "b": 0, "k": 10, "kb": 10, "kib": 10, "m": 20, "mb": 20, "mib": 20,
            "g": 30, "gb": 30, "gib": 30, "t": 40, "tb": 40, "tib": 40,
        ]
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
            let length = ByteSize(argument: String(parts[1]))
        else { return nil }
        range = ByteRange(location: start.bytes, length: length.bytes)
    }
}

/// A duration: `90`, `90s`, `30m`, `1h`, `2d`.
public struct Duration: ExpressibleByArgument, CustomStringConvertible, Sendable, Hashable {
    public let seconds: Double

    /// The duration as a user types it, in the largest unit that divides it: `1h`, `90s`, `0`.
    public var description: String {
        for (unit, scale) in [("d", 86400.0), ("h", 3600.0), ("m", 60.0)] where seconds >= scale {
            let count = seconds / scale
            // Whole counts below 2^53 print as integers; anything else keeps its decimals (no trapping conversion).
            if count == count.rounded() && count < 0x1p53 { return "\(Int64(count))\(unit)" }
        }
        if seconds == 0 { return "0" }
        return seconds == seconds.rounded() && seconds < 0x1p53 ? "\(Int64(seconds))s" : "\(seconds)s"
    }

    /// `--help` shows the default as it would be typed.
    public var defaultValueDescription: String { description }

    public init?(argument: String) {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
        var text = argument.lowercased()
        var scale = 1.0
        if let last = text.last, let unit = units[last] {
            scale = unit
            text.removeLast()
        }
        // The product too: `1e308d` is a finite number of days but no finite number of seconds.
        guard let value = Double(text), value >= 0, (value * scale).isFinite else { return nil }
        seconds = value * scale
    }
}
