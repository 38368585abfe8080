/// Where a fetch's file goes.
public enum FetchDestination: Sendable, Hashable {
    /// A fresh hand-off file in the store's `tmp/`.
    case handOff
    /// A clone at `path`; an existing file there is `fileExists` unless `replaceExisting`.
    case clone(to: String, replaceExisting: Bool)
}
