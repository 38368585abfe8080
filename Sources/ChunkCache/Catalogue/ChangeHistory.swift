import Foundation

/// How much of a domain's change log is kept (<doc:Contract#11-Catalogue,-enumeration,-changes-and-the-working-set>):
/// records beyond either bound are compacted, and an anchor older than what is kept is `syncAnchorExpired`.
public struct ChangeHistory: Sendable, Hashable {
    /// The most change records kept.
    public var changes: UInt64
    /// The age in seconds beyond which records are dropped.
    public var seconds: Double

    public init(changes: UInt64, seconds: Double) {
        self.changes = changes
        self.seconds = seconds
    }

    /// 1,000,000 changes or 30 days, whichever is less.
    public static let standard = ChangeHistory(changes: 1_000_000, seconds: 30 * 86_400)
}
