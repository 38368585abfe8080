import Foundation
import Synchronization

/// What a process noted since its last flush.
struct UsageNotes: Sendable {
    var uses: [ItemIdentifier: Double] = [:]
    /// Reads per chunk of origin domains (``EvictionPolicy``).
    var reads: [PolicySlot: UInt32] = [:]
    /// The read-ahead state of items of origin domains, for the next process (``ReadPositions``).
    var readPositions: [ItemIdentifier: ReadAhead] = [:]
    /// Chunks of every domain served from the store, each once per flush, for the hot tier (``HotTier``).
    var hotReads: Set<PolicySlot> = []

    var isEmpty: Bool { uses.isEmpty && reads.isEmpty && readPositions.isEmpty && hotReads.isEmpty }
}
