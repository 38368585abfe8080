import ArgumentParser
import ChunkCache
import Foundation

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
