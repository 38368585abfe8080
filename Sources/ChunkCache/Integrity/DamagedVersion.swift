import Crypto
import FileIO
import Foundation

/// A content version that ``ChunkCache/verify(repair:walking:)`` found damaged. `repair` does not mend it: put the
/// file again under a new version.
public struct DamagedVersion: Sendable, Hashable, Comparable {
    public var domain: String
    /// The item's identifier; nil when the item's own record is damaged.
    public var item: String?
    public var contentVersion: String
    /// What is wrong, for example `page 0 of its manifest fails its check`.
    public var problem: String

    public static func < (a: DamagedVersion, b: DamagedVersion) -> Bool {
        (a.domain, a.item ?? "", a.contentVersion, a.problem) < (b.domain, b.item ?? "", b.contentVersion, b.problem)
    }
}
