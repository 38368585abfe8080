/// Who asks, as `NSFileProviderRequest`.
public struct FetchRequest: Sendable, Hashable {
    /// The requesting executable's name; matched against the domain's non-materializing list.
    public var requestingProcess: String?
    /// The domain version the requester last saw.
    public var domainVersion: DomainVersion?
    /// Updated as the fetch downloads from the domain's origin, for a progress display.
    public var progress: DownloadProgress?

    public init(
        requestingProcess: String? = nil, domainVersion: DomainVersion? = nil, progress: DownloadProgress? = nil
    ) {
        self.requestingProcess = requestingProcess
        self.domainVersion = domainVersion
        self.progress = progress
    }
}
