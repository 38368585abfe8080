/// Where in an earlier version a new chunk's base lies, as ``BaseIndex/findBase(for:at:maxLength:)`` places it.
public struct BaseMatch: Equatable, Sendable, CustomStringConvertible {
    /// The base's first byte in the earlier version.
    public var offset: Int64
    /// The base's length: at most the `maxLength` asked for, and inside the earlier version.
    public var length: Int
    /// The earlier offset minus the new offset of the bytes most matched blocks agree on: 0 when the chunk's bytes
    /// are where they were, −300 when 300 bytes were inserted before them.
    public var shift: Int64
    /// The bytes of the chunk found in the earlier version at ``shift``, in whole blocks.
    public var matchedBytes: Int

    public init(offset: Int64, length: Int, shift: Int64, matchedBytes: Int) {
        self.offset = offset
        self.length = length
        self.shift = shift
        self.matchedBytes = matchedBytes
    }

    public var description: String {
        "base \(offset)+\(length) (shift \(shift), \(matchedBytes) bytes matched)"
    }
}
