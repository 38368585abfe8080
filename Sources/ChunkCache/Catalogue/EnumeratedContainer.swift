import Foundation

/// What an enumeration lists: a folder (the root and the trash included), the working set, or every item of
/// the domain (the changes a sync client or a mount follows).
enum EnumeratedContainer: Hashable, Sendable {
    case folder(String)
    case workingSet
    case allItems

    /// The container whose ``ListingIndex`` entries a page walks; every item is listed under none.
    var listedIdentifier: String? {
        switch self {
        case .folder(let identifier): return identifier
        case .workingSet: return Item.workingSetContainer
        case .allItems: return nil
        }
    }
}
