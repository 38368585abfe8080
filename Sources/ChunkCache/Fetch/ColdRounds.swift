import FileIO
import Foundation
import LMDBKit
import OriginKit

/// How often one fetch goes back to its origin, and when it gives up (as `transient`).
///
/// Version changes: a discovery, a fill and a new version when the origin moves on take three; more means the
/// file keeps changing there (the first discovery is not counted: it is where the fetch starts). Refills: a
/// fetch reads what it filled from the store, and another process's eviction can take it in between (this
/// process's own spares it, ``PolicyProtection``): each time, what left is filled again from the plan already
/// made (never planned again). Under a tight bound shared by many processes that happens more than once (the
/// soak's 64 readers met it twice); needing more than ``maxRefills`` means the store's bound is too small for
/// the reads running at once. Damaged chunks: each is downloaded again once (``replace(_:)``).
struct ColdRounds {
    let item: ItemIdentifier
    private var changes = 0
    private var refills = 0
    /// The chunks found damaged on read and downloaded again.
    private var replaced: Set<Int64> = []

    static let maxChanges = 3
    static let maxRefills = 8

    init(item: ItemIdentifier) { self.item = item }

    /// The fetch goes to the origin again for another version, or another discovery.
    mutating func change() throws(CacheError) {
        changes += 1
        guard changes < Self.maxChanges else {
            throw CacheError(.transient, "item \(item) kept changing at its origin while it was fetched; retry")
        }
    }

    /// A chunk found damaged on read (a fill whose pages a system crash lost, a stored chunk that fails its
    /// check) is downloaded again. Each read stops at the first one, so a range with many (a crash can lose
    /// every fill of a file) replaces them one read at a time: each chunk once. One that is damaged again after
    /// its replacement means the store's disk does not keep what it is given.
    mutating func replace(_ chunk: DamagedChunk) throws(CacheError) {
        guard replaced.insert(chunk.index).inserted else {
            throw CacheError(
                .transient,
                "chunk \(chunk.index) of item \(item) was damaged again after it was downloaded again: check the store's disk (`chunkcache verify`), then retry"
            )
        }
    }

    /// What the fetch filled left the store before it read it: it is filled again.
    mutating func refill() throws(CacheError) {
        refills += 1
        guard refills <= Self.maxRefills else {
            throw CacheError(
                .transient,
                "what this fetch downloaded of item \(item) was evicted before it could be read, \(Self.maxRefills + 1) times: the store's bound (init --max-size, --min-free) is too small for the reads running at once; raise it, then retry"
            )
        }
    }
}
