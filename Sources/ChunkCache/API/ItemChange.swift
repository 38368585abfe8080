/// What an edit of an item did.
public struct ItemChange: Sendable {
    /// The item after the edit (for a permanent deletion: as it was).
    public var item: Item
    /// The domain's version after the edit; unchanged when the edit changed nothing.
    public var domainVersion: DomainVersion
    /// False when the item already was as asked: nothing was written.
    public var changed: Bool
    /// For a permanent deletion: every identifier deleted, the item's first (a folder's contents follow).
    public var deleted: [String] = []
}
