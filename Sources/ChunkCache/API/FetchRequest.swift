/// Who asks, as `NSFileProviderRequest`.
///
/// It has no `domainVersion`: the system's request carries the domain version it last saw, but a fetch
/// serves the item as the store holds it whatever version the asker saw (<doc:FileProviderRules#B6>: the newest, or the
/// one asked for), so nothing here would read it. The version a fetch was served at comes back in
/// ``FetchResult/domainVersion``.
public struct FetchRequest: Sendable, Hashable {
    /// The requesting executable's name; matched against the domain's non-materializing list.
    public var requestingProcess: String?
    /// Updated as the fetch downloads from the domain's origin, for a progress display.
    public var progress: DownloadProgress?

    public init(
        requestingProcess: String? = nil, progress: DownloadProgress? = nil
    ) {
        self.requestingProcess = requestingProcess
        self.progress = progress
    }
}
