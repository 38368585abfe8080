import Foundation

/// A change to an item's user metadata, as `mark` makes it: each field nil leaves it as it is.
public struct MetadataEdit: Sendable, Hashable {
    /// Set a value, or remove it.
    public enum Setting<Value: Sendable & Hashable>: Sendable, Hashable {
        case set(Value)
        case remove
    }

    public var favoriteRank: Setting<UInt64>?
    /// At most ``MetadataEdit/maxTagBytes`` bytes.
    public var tagData: Setting<Data>?
    public var isShared: Bool?
    /// Sets `lastUsedDate` to now.
    public var markUsed: Bool

    public init(
        favoriteRank: Setting<UInt64>? = nil, tagData: Setting<Data>? = nil, isShared: Bool? = nil,
        markUsed: Bool = false
    ) {
        self.favoriteRank = favoriteRank
        self.tagData = tagData
        self.isShared = isShared
        self.markUsed = markUsed
    }

    public static let maxTagBytes = 4096
}
