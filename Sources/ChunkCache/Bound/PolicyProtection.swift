import Foundation

/// The chunks eviction spares while anything else can go: those fetches of this process downloaded and
/// have not read yet. A fetch downloads what it lacks, then reads it from the store; without this, a store
/// under churn evicts a fetch's chunks between the two and the fetch downloads them again and again.
struct PolicyProtection: Sendable {
    /// Chunk ranges by manifest.
    var ranges: [UInt64: [ClosedRange<Int64>]] = [:]

    func covers(_ slot: PolicySlot) -> Bool {
        ranges[slot.manifestID]?.contains { $0.contains(slot.index) } ?? false
    }
}
