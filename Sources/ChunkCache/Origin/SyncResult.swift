import Foundation
import OriginKit
import Synchronization

/// What ``ChunkCache/syncDomain(_:)`` applied.
public struct SyncResult: Sendable, Hashable {
    /// Items the origin lists that the store did not have (folders included).
    public var created: Int
    /// Items whose version at the origin is new: a new version record, the old one's cached chunks kept.
    public var modified: Int
    /// Items the origin no longer lists, removed with their versions (folders included).
    public var deleted: Int
    /// Files listed and already at the origin's version.
    public var unchanged: Int
    /// The domain's version after the sync (unchanged when nothing was).
    public var domainVersion: DomainVersion
}
