import Foundation

/// An item and version as an origin's answer recorded them, and the domain version after.
struct RecordedVersion: Sendable {
    let item: ItemRecord
    let version: VersionRecord
    let domainVersion: DomainVersion
}
