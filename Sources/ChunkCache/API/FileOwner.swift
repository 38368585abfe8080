import Foundation

/// Who owns the file a fetch returned.
public enum FileOwner: String, Sendable {
    /// A hand-off file in the store's `tmp/`: the caller owns it and deletes it.
    case caller
    /// A clone at the destination the caller named.
    case destination
}
