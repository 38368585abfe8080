import ArgumentParser
import ChunkCache
import Foundation

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
