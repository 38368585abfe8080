import Foundation

/// An item as the engine knows it, with the version a response served.
public struct Item: Hashable, Sendable {
    /// The domain it belongs to.
    public var domain: String
    /// Its identifier: for imported files, the path relative to the domain root.
    public var identifier: String
    /// Its parent's identifier (``Item/rootContainer`` at the top).
    public var parentIdentifier: String
    /// Its name in its folder.
    public var filename: String
    /// File, folder or symlink.
    public var kind: ItemKind
    /// The version these figures describe.
    public var itemVersion: ItemVersion
    /// The content length of that version, in bytes (0 for folders).
    public var documentSize: Int64
    /// A symlink's target.
    public var symlinkTarget: String?
    /// When the item was first recorded.
    public var creationDate = Date(timeIntervalSince1970: 0)
    /// When its content last changed (a file's modification time when put or imported).
    public var contentModificationDate = Date(timeIntervalSince1970: 0)
    /// When a fetch last used it; recent items are in the working set.
    public var lastUsedDate: Date?
    /// The user's tag, opaque bytes; nil when untagged.
    public var tagData: Data?
    /// Its rank among favorites; nil when not a favorite.
    public var favoriteRank: UInt64?
    public var isShared = false
    /// In the trash: listed in ``Item/trashContainer``.
    public var isTrashed = false
    /// Kept in the store whatever eviction does (<doc:Contract#12-A-bounded-cache>).
    public var isPinned = false

    /// File Provider's name for ``identifier``.
    public var itemIdentifier: String { identifier }
    /// The container listing it, as File Provider names it: ``Item/trashContainer`` when trashed, else its
    /// real parent (never the working set, <doc:FileProviderRules#F9>).
    public var parentItemIdentifier: String { isTrashed ? Item.trashContainer : parentIdentifier }
    /// File Provider's name for ``kind``.
    public var contentType: ItemKind { kind }

    /// The identifier of a domain's root, as `NSFileProviderItemIdentifier.rootContainer`.
    public static let rootContainer = "NSFileProviderRootContainerItemIdentifier"
    /// The working set's identifier, as `NSFileProviderItemIdentifier.workingSet`.
    public static let workingSetContainer = "NSFileProviderWorkingSetContainerItemIdentifier"
    /// The trash's identifier, as `NSFileProviderItemIdentifier.trashContainer`.
    public static let trashContainer = "NSFileProviderTrashContainerItemIdentifier"
}
