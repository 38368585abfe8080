import Crypto
import FileIO
import Foundation

/// What `verify` found.
public struct VerifyReport: Sendable, Hashable {
    /// Chunks re-hashed.
    public var chunksChecked: Int
    /// Chunks whose bytes do not hash to their name, fail to decode, or that manifests need but the store
    /// lacks; sorted.
    public var corrupt: [ChunkDigest]
    /// Chunks removed and fills dropped by `repair` (their manifest entries now say `absent`).
    public var repaired: Int
    /// Content versions that cannot be served as they were put: their record or a page of their manifest
    /// fails its check, a page is missing, or the manifest no longer hashes to the version's root; sorted.
    public var damagedVersions: [DamagedVersion]
    /// Every record of the store that fails its check (domains, items, versions, manifest pages, chunk
    /// references, pending manifests), named as errors name them, for example
    /// `page 0 of the manifest of version "v1" of item "doc" in domain "d"`; sorted.
    public var damagedRecords: [String]
    /// Where the store's records disagree with each other although each passes its own check, found by a
    /// full recount (`Verifier.checkConsistency`): a chunk without its reference record or a
    /// reference record without its chunk, a chunk's reference count that differs from the number of
    /// manifest entries naming it (a chunk no manifest uses is garbage that is never freed; one used more
    /// often than counted would be freed while still in use), manifest pages no version or pending put
    /// owns, and a `stat` counter (`logicalBytes`, `uniqueBytes`, `storedBytes`) that differs from the sum
    /// it stands for. Of the fills (downloaded chunks not settled yet): a record in `fills` whose manifest entry
    /// is no fill, a byte count of a version's fill file that has no fill, a fill file no manifest with fills
    /// owns, and a `fillBytes` counter that differs from the sum of the byte counts. `repair` mends those of
    /// the fills (the record, count or file goes, the counter is set to its recount) and no other; sorted.
    public var inconsistencies: [String] = []
    /// Downloaded chunks not settled yet (fills, <doc:Contract#10-Origins-the-cold-path>) whose bytes were read and
    /// checked.
    public var fillsChecked = 0
    /// Fills that cannot be served, each named with what is wrong, for example
    /// `fill 2 of the manifest of version "v1" of item "doc" in domain "d": its bytes are missing or fail their
    /// check`: bytes that fail their XXH3 or do not hash to the SHA-256 the manifest knew, or a fill without its
    /// record in `fills`. `repair` makes each `absent` (downloaded again when read); sorted.
    public var corruptFills: [String] = []
}
