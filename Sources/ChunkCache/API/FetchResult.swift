import Foundation

/// What a fetch returns.
public struct FetchResult: Sendable {
    /// The file holding the bytes at their own offsets.
    public var url: URL
    /// The item with the version served and its size.
    public var item: Item
    /// The bytes present in the file, aligned as asked or ending at EOF.
    public var retrievedRange: ByteRange
    /// `knownSparseRanges` when the whole file was returned with holes for zero chunks.
    public var flags: MaterializationFlags
    /// Who owns ``url``.
    public var owner: FileOwner
    /// The domain's version when the fetch read it.
    public var domainVersion: DomainVersion
    /// How a clone reached its destination. `nil` for a hand-off, and for a destination the engine
    /// assembled in place because it cannot share blocks with the store (each byte written once).
    public var cloneStrategy: CloneStrategy?
    /// Bytes this fetch downloaded from the domain's origin (<doc:Contract#10-Origins-the-cold-path>); 0 when the store
    /// held them.
    public var downloadedBytes: Int64 = 0
    /// Requests this fetch made to the domain's origin.
    public var originRequests = 0
    /// The item's domain has an origin, so its reads move the item's read-ahead.
    var fromOriginDomain = false

    mutating func record(_ progress: DownloadProgress) {
        downloadedBytes = progress.downloadedBytes
        originRequests = progress.originRequests
    }
}
