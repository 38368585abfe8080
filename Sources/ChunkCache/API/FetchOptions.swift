/// Options of a fetch, as `NSFileProviderFetchContentsOptions`.
public struct FetchOptions: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Serve the requested version or fail with `versionNoLongerAvailable`.
    public static let strictVersioning = FetchOptions(rawValue: 1)
}
