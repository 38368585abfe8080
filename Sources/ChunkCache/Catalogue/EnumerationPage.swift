import Foundation

/// Where a listing continues, as `NSFileProviderPage`: opaque bytes (at most 500, <doc:FileProviderRules#F1>), or one
/// of the two initial pages.
public struct EnumerationPage: OpaqueToken {
    public let rawValue: Data

    public init(rawValue: Data) { self.rawValue = rawValue }

    /// The first page, items sorted by filename (bytewise).
    public static let initialPageSortedByName = EnumerationPage(rawValue: Data([0x6E]))
    /// The first page, items sorted by content modification date, newest first.
    public static let initialPageSortedByDate = EnumerationPage(rawValue: Data([0x64]))
}
