import Foundation

/// An item as a file system shows it: the item at its newest version, and how much of that version the
/// store holds.
public struct ItemStatus: Sendable, Hashable {
    /// The item, at its newest version.
    public var item: Item
    /// Bytes of that version held in the store (zero chunks count as held); a folder's or link's is 0.
    public var cachedBytes: Int64
}
