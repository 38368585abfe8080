import Crypto
import FileIO
import Foundation

/// What ``ChunkCache/recover(storeAt:into:)`` salvaged, and what it lost.
public struct RecoveryReport: Sendable, Hashable {
    /// Records of one kind: how many the new store holds, and how many of the old store's it could not take.
    public struct Count: Sendable, Hashable {
        public var recovered = 0
        public var lost = 0
    }

    /// The new store's directory.
    public var destination: String
    public var domains = Count()
    public var items = Count()
    public var versions = Count()
    /// Distinct chunks: taken (each re-hashed with SHA-256 and checked against its name), and lost (unreadable,
    /// failing their hash, or used by no version that could be taken).
    public var chunks = Count()
    /// Downloaded chunks the old store had not settled yet (fills, <doc:Contract#10-Origins-the-cold-path>): taken
    /// (their bytes read from the old store's fill files, checked against their XXH3 and the SHA-256 their manifest
    /// knew, and stored as settled chunks), and lost (missing or failing a check: `absent` in the new store).
    public var fills = Count()
    /// Versions of origin domains kept with some chunks `absent` (a later fetch downloads them again).
    public var versionsWithAbsentChunks = 0
    /// What was skipped, named: damaged pages of the old data file (with the database and the keys they
    /// held from) and records that failed their checks; sorted.
    public var damage: [String] = []
    /// The newest snapshot's meta page was damaged: an earlier snapshot (one commit older) was read.
    public var readEarlierSnapshot = false
}
