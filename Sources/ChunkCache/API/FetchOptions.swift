/// Options of a fetch, as `NSFileProviderFetchContentsOptions`.
public struct FetchOptions: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Serve the requested version or fail with `versionNoLongerAvailable`.
    public static let strictVersioning = FetchOptions(rawValue: 1)
}

/// Where a fetch's file goes.
public enum FetchDestination: Sendable, Hashable {
    /// A fresh hand-off file in the store's `tmp/`.
    case handOff
    /// A clone at `path`; an existing file there is `fileExists` unless `replaceExisting`.
    case clone(to: String, replaceExisting: Bool)
}
