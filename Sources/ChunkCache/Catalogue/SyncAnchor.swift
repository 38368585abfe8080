import Foundation

/// A point in a domain's change log, as `NSFileProviderSyncAnchor`: opaque bytes (at most 500,
/// <doc:FileProviderRules#F1>) that a new process can resume from (<doc:FileProviderRules#F4>,
/// <doc:FileProviderRules#F5>).
public struct SyncAnchor: OpaqueToken {
    public let rawValue: Data

    public init(rawValue: Data) { self.rawValue = rawValue }
}
