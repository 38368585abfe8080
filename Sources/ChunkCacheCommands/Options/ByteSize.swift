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
